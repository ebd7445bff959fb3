// Two clients of the official MCP TypeScript SDK (@modelcontextprotocol/sdk 1.32.2, the
// initialize generation over Streamable HTTP) through `relay bridge` in front of the
// reference server-everything (a server of that generation only): each HTTP session is its
// own (MCP 2025-11-25, Transports › Session Management). One client's log level, resource
// subscription and toggles never reach or affect the other, and each client's capabilities
// reach its own server.
//
// Run: RELAY_BRIDGE_URL=http://127.0.0.1:PORT/mcp node --test bridge_sessions.mjs
// (interop/go/bridge_sessions_test.go starts the bridge and does this; the name has no
// ".test." so that a bare `node --test` here, which runs Relay's own server, leaves it out.)

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const URL_ = process.env.RELAY_BRIDGE_URL;
const LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];
// server-everything sends its simulated logs and resource updates every 5 s.
const PACE = 5_000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function waitFor(cond, ms, what) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) assert.fail(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(20);
  }
}
const textOf = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');

// connect opens a session with the given capabilities and records what it is sent.
async function connect(name, capabilities) {
  const seen = { logs: [], updates: [], sampling: [], elicitations: [], errors: [] };
  const client = new Client({ name, version: '1.0.0' }, { capabilities });
  client.onerror = (err) => seen.errors.push(err);
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { seen.logs.push(n.params); });
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { seen.updates.push(n.params); });
  if (capabilities.sampling) {
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      seen.sampling.push(request.params);
      return { role: 'assistant', content: { type: 'text', text: `${name}'s model answers` }, model: `${name}-model`, stopReason: 'endTurn' };
    });
  }
  if (capabilities.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      seen.elicitations.push(request.params);
      return { action: 'decline' };
    });
  }
  const transport = new StreamableHTTPClientTransport(new URL(URL_));
  await client.connect(transport);
  return { client, transport, seen };
}

describe('relay bridge: every HTTP session its own (server-everything, TypeScript SDK clients)', { timeout: 120_000 }, () => {
  let a;
  let b;
  let resource;

  before(async () => {
    assert.ok(URL_, 'set RELAY_BRIDGE_URL to the MCP endpoint of a relay bridge in front of server-everything');
    a = await connect('client-a', {});
    b = await connect('client-b', { sampling: {}, elicitation: {} });
    const { resources } = await a.client.listResources();
    resource = resources[0].uri;
  });

  after(async () => {
    // DELETE ends each session, and the bridge stops its child.
    await a?.transport.terminateSession();
    await b?.transport.terminateSession();
    await a?.client.close();
    await b?.client.close();
  });

  test('two sessions are two servers: each answers its own initialize', async () => {
    assert.equal(a.client.getServerVersion().name, 'mcp-servers/everything');
    assert.ok(a.transport.sessionId && b.transport.sessionId && a.transport.sessionId !== b.transport.sessionId);
    const caps = a.client.getServerCapabilities();
    assert.equal(caps.resources?.subscribe, true, 'the child declares subscriptions, and the bridge delivers them');
  });

  test("each client's capabilities reach its own server", async () => {
    // server-everything registers trigger-sampling-request and trigger-elicitation-request
    // only for a client that declared sampling and elicitation (MCP 2025-11-25, Lifecycle ›
    // Initialization): B did, A did not. B's handlers answer them through the bridge.
    const toolsA = (await a.client.listTools()).tools.map((t) => t.name);
    const toolsB = (await b.client.listTools()).tools.map((t) => t.name);
    assert.ok(toolsB.includes('trigger-sampling-request'), `B declared sampling; its tools: ${toolsB}`);
    assert.ok(!toolsA.includes('trigger-sampling-request'), `A did not declare sampling; its tools: ${toolsA}`);
    const r = await b.client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hello' } });
    assert.match(textOf(r), /client-b's model answers/);
    assert.equal(b.seen.sampling.length, 1);
    assert.ok(toolsB.includes('trigger-elicitation-request'), `B declared elicitation; its tools: ${toolsB}`);
    assert.ok(!toolsA.includes('trigger-elicitation-request'), `A did not declare elicitation; its tools: ${toolsA}`);
    const e = await b.client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
    assert.match(textOf(e), /declined/);
    assert.equal(b.seen.elicitations.length, 1);
  });

  test("one client's log level, subscription and toggles never reach or affect the other", async () => {
    await a.client.setLoggingLevel('debug');
    await b.client.setLoggingLevel('error');

    // A subscribes: its server says so in an info log, to A alone.
    await a.client.subscribeResource({ uri: resource });
    await waitFor(() => a.seen.logs.some((l) => String(l.data).includes('Received Subscribe')), PACE, "A's subscribe log");

    // A turns on the simulated resource updates and logging: each sends once at once.
    await a.client.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
    await a.client.callTool({ name: 'toggle-simulated-logging', arguments: {} });
    await waitFor(() => a.seen.updates.some((u) => u.uri === resource), PACE, `A's update of ${resource}`);
    await waitFor(() => a.seen.logs.some((l) => /-level message|level-message/.test(String(l.data))), PACE, "A's simulated log");

    // B, on its own server: a call, an unsubscribe and both toggles. On a shared server, B's
    // unsubscribe would end A's updates and B's toggles would switch A's off.
    await b.client.callTool({ name: 'echo', arguments: { message: 'from B' } });
    await b.client.unsubscribeResource({ uri: resource });
    await b.client.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
    await b.client.callTool({ name: 'toggle-simulated-logging', arguments: {} });
    const updatesA = a.seen.updates.length;
    const logsA = a.seen.logs.length;

    // A's updates and logs go on (A at debug receives every level).
    await waitFor(() => a.seen.updates.length > updatesA, 3 * PACE, "A's updates after B's unsubscribe and toggle");
    await waitFor(() => a.seen.logs.length > logsA, 3 * PACE, "A's logs after B's toggle");

    // B saw nothing of A's: no update (B never subscribed), not A's subscribe log, and only
    // messages at B's own level.
    assert.deepEqual(b.seen.updates, [], "B received A's resource updates");
    for (const l of b.seen.logs) {
      assert.ok(!String(l.data).includes('Received Subscribe'), `B received A's log: ${JSON.stringify(l)}`);
      assert.ok(LEVELS.indexOf(l.level) >= LEVELS.indexOf('error'), `B (at error) received a ${l.level} message: ${JSON.stringify(l)}`);
    }
    // A's level is its own: B's "error" did not silence A's info log of a second subscription.
    const before = a.seen.logs.length;
    await a.client.subscribeResource({ uri: `${resource}?again` });
    await waitFor(() => a.seen.logs.slice(before).some((l) => l.level === 'info' && String(l.data).includes('Received Subscribe')),
      PACE, "A's info log after B set error");
    assert.deepEqual(a.seen.errors, []);
    assert.deepEqual(b.seen.errors, []);
  });
});
