// Drives `relay gateway` with the official MCP TypeScript SDK client (@modelcontextprotocol/sdk
// 1.32.2, the initialize generation) over stdio, as a host runs it: one server entry for
// Relay's examples/echo and examples/everything behind it.
//
// Run: RELAY_BIN=/path/to/relay RELAY_GATEWAY_CONFIG=/path/to/config.json node --test
// (gateway/ts_test.go builds the binaries, writes the configuration and does this; without
// those variables the tests are skipped.)

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const RELAY = process.env.RELAY_BIN;
const CONFIG = process.env.RELAY_GATEWAY_CONFIG;

const textOf = (r) => (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');

async function waitFor(cond, ms, what) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('relay gateway over stdio (TypeScript SDK client)', { skip: !(RELAY && CONFIG) && 'RELAY_BIN and RELAY_GATEWAY_CONFIG are not set' }, () => {
  let client;
  const logs = [];

  before(async () => {
    client = new Client(
      { name: 'relay-interop-ts-gateway', version: '1.0.0' },
      { capabilities: { sampling: {}, elicitation: { form: {} } } },
    );
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { logs.push(n.params); });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {});
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      const prompt = request.params.messages.map((m) => m.content.text ?? '').join(' ');
      return { role: 'assistant', content: { type: 'text', text: `TS model says: ${prompt}` }, model: 'ts', stopReason: 'endTurn' };
    });
    client.setRequestHandler(ElicitRequestSchema, async () => (
      { action: 'accept', content: { username: 'octocat', email: 'octocat@example.com' } }
    ));
    await client.connect(new StdioClientTransport({
      command: RELAY, args: ['gateway', '--config', CONFIG, '--quiet-child'], stderr: 'inherit',
    }));
  });

  after(async () => { await client?.close(); });

  test('the handshake is the gateway\'s, with the merged capabilities', () => {
    assert.equal(client.getServerVersion().name, 'relay-gateway');
    const caps = client.getServerCapabilities();
    assert.ok(caps.tools && caps.prompts && caps.resources, JSON.stringify(caps));
  });

  test('tools of both servers, each under its prefix', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const want of ['echo__echo', 'echo__sleep', 'ev__test_simple_text', 'ev__test_sampling']) {
      assert.ok(names.includes(want), `${want} in ${names}`);
    }
    assert.ok(names.every((n) => /^[a-zA-Z0-9_-]{1,64}$/.test(n)), names.join(' '));
  });

  test('calls routed by prefix', async () => {
    assert.equal(textOf(await client.callTool({ name: 'echo__echo', arguments: { text: 'from TypeScript' } })), 'from TypeScript');
    const r = await client.callTool({ name: 'ev__test_error_handling', arguments: {} });
    assert.equal(r.isError, true);
  });

  test('prompts, resources and templates', async () => {
    const p = await client.getPrompt({ name: 'ev__test_prompt_with_arguments', arguments: { arg1: 'a1', arg2: 'a2' } });
    assert.match(JSON.stringify(p.messages), /a1/);
    const r = await client.readResource({ uri: 'test://template/42/data' });
    assert.match(JSON.stringify(r.contents), /42/);
  });

  test('progress and log messages of a call reach the client', async () => {
    const seen = [];
    const r = await client.callTool({ name: 'ev__test_tool_with_progress', arguments: {} }, undefined, {
      onprogress: (p) => seen.push(p.progress),
    });
    assert.ok(!r.isError);
    assert.deepEqual(seen, [0, 50, 100]);
    await client.setLoggingLevel('debug');
    logs.length = 0;
    await client.callTool({ name: 'ev__test_tool_with_logging', arguments: {} });
    await waitFor(() => logs.length >= 3, 2000, '3 log messages');
  });

  test('sampling and elicitation: the server\'s questions reach this client', async () => {
    const s = await client.callTool({ name: 'ev__test_sampling', arguments: { prompt: 'What is 2+2?' } });
    assert.match(textOf(s), /TS model says: What is 2\+2\?/);
    const e = await client.callTool({ name: 'ev__test_elicitation', arguments: { message: 'Who are you?' } });
    assert.match(textOf(e), /octocat@example.com/);
  });
});
