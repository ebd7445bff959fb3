// Drives Relay's examples/everything server with the official MCP TypeScript SDK client
// (@modelcontextprotocol/sdk 1.32.2) over stdio. The SDK speaks the initialize generation
// (2025-11-25), so this is the legacy path: a handshake, server-to-client requests for
// sampling and elicitation, logging/setLevel and resources/subscribe.
//
// Run: RELAY_EVERYTHING_BIN=/path/to/everything node --test
//  or: RELAY_EVERYTHING_URL=http://127.0.0.1:PORT/mcp node --test (a server started with -http)
// (examples/everything/ts_test.go builds the binary and does this.)

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  EmptyResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const BIN = process.env.RELAY_EVERYTHING_BIN;
// With RELAY_EVERYTHING_URL set (e.g. http://127.0.0.1:8080/mcp), the same tests run over
// Streamable HTTP (initialize-generation sessions) against a server started with -http.
const URL_ = process.env.RELAY_EVERYTHING_URL;
const TRANSPORT = URL_ ? 'Streamable HTTP' : 'stdio';

const FIXTURE_TOOLS = [
  'confirm_delete',
  'failing_job',
  'greet',
  'json_schema_2020_12_tool',
  'multi_input',
  'protocol_error_job',
  'slow_compute',
  'test_audio_content',
  'test_custom_headers',
  'test_elicitation',
  'test_elicitation_sep1034_defaults',
  'test_elicitation_sep1330_enums',
  'test_embedded_resource',
  'test_error_handling',
  'test_image_content',
  'test_input_required_result_capabilities',
  'test_input_required_result_elicitation',
  'test_input_required_result_list_roots',
  'test_input_required_result_multi_round',
  'test_input_required_result_multiple_inputs',
  'test_input_required_result_request_state',
  'test_input_required_result_sampling',
  'test_input_required_result_tampered_state',
  'test_logging_tool',
  'test_missing_capability',
  'test_multiple_content_types',
  'test_reconnection',
  'test_sampling',
  'test_simple_text',
  'test_streaming_elicitation',
  'test_tool_with_logging',
  'test_tool_with_progress',
  'test_tool_with_task',
  'test_trigger_prompt_change',
  'test_trigger_tool_change',
];
const FIXTURE_PROMPTS = [
  'test_input_required_result_prompt',
  'test_prompt_with_arguments',
  'test_prompt_with_embedded_resource',
  'test_prompt_with_image',
  'test_simple_prompt',
];
const STATIC_TEXT = 'test://static-text';
const STATIC_BINARY = 'test://static-binary';
const WATCHED = 'test://watched-resource';
const SKILL_REFUNDS = 'skill://acme/billing/refunds/SKILL.md';
const SKILL_PDF = 'skill://pdf-processing/SKILL.md';

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const isPNG = (b64) => Buffer.from(b64, 'base64').subarray(0, 8).equals(PNG_MAGIC);
const isWAV = (b64) => {
  const b = Buffer.from(b64, 'base64');
  return b.length > 44 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WAVE';
};
const textOf = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function deferred() {
  let resolve;
  const promise = new Promise((r) => { resolve = r; });
  return { promise, resolve };
}

// waitFor polls cond until it holds or ms pass.
async function waitFor(cond, ms, what) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

describe(`Relay everything server with the TypeScript SDK client (${TRANSPORT}, 2025-11-25)`, { timeout: 60_000 }, () => {
  let client;
  let transport;
  const logs = [];
  const updates = [];
  const errors = [];
  const samplingRequests = [];
  const elicitRequests = [];
  // When set, the sampling handler waits on it (to cancel a call while the server waits).
  let samplingGate = null;
  let samplingEntered = null;

  before(async () => {
    assert.ok(BIN || URL_, 'set RELAY_EVERYTHING_BIN (stdio) or RELAY_EVERYTHING_URL (HTTP)');
    client = new Client(
      { name: 'relay-interop-ts', version: '1.0.0' },
      { capabilities: { sampling: {}, elicitation: { form: { applyDefaults: true } } } },
    );
    client.onerror = (err) => errors.push(err);
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { logs.push(n.params); });
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updates.push(n.params); });

    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      samplingRequests.push(request.params);
      if (samplingGate) {
        samplingEntered?.resolve();
        await samplingGate.promise;
      }
      const prompt = request.params.messages.map((m) => m.content.text ?? '').join(' ');
      return {
        role: 'assistant',
        content: { type: 'text', text: `TS model says: ${prompt}` },
        model: 'ts-test-model',
        stopReason: 'endTurn',
      };
    });

    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      elicitRequests.push(request.params);
      const props = request.params.requestedSchema.properties;
      if (props.username) {
        return { action: 'accept', content: { username: 'octocat', email: 'octocat@example.com' } };
      }
      if (props.verified) {
        // Accept without answering: the SDK fills in the schema's defaults (applyDefaults).
        return { action: 'accept', content: {} };
      }
      if (props.untitledSingle) {
        return {
          action: 'accept',
          content: {
            untitledSingle: 'option2',
            titledSingle: 'value3',
            legacyEnum: 'opt1',
            untitledMulti: ['option1', 'option3'],
            titledMulti: ['value2'],
          },
        };
      }
      return { action: 'decline' };
    });

    transport = URL_
      ? new StreamableHTTPClientTransport(new URL(URL_))
      : new StdioClientTransport({ command: BIN, args: ['-watch', '100ms'], stderr: 'inherit' });
    await client.connect(transport);
  });

  after(async () => {
    await client?.close();
  });

  test('initialize negotiates 2025-11-25 and declares every capability', () => {
    const info = client.getServerVersion();
    assert.equal(info.name, 'relay-everything');
    const caps = client.getServerCapabilities();
    for (const c of ['tools', 'resources', 'prompts', 'completions', 'logging']) {
      assert.ok(caps[c], `capability ${c} missing: ${JSON.stringify(caps)}`);
    }
    assert.equal(caps.resources.subscribe, true);
    if (!URL_) assert.equal(transport.pid > 0, true);
  });

  test('ping', async () => {
    assert.deepEqual(await client.ping(), {});
  });

  test('tools/list shows every fixture tool with name, description and inputSchema', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), FIXTURE_TOOLS);
    for (const t of tools) {
      assert.ok(t.description, `${t.name} has no description`);
      assert.equal(t.inputSchema.type, 'object', `${t.name} inputSchema`);
    }
    const js = tools.find((t) => t.name === 'json_schema_2020_12_tool').inputSchema;
    assert.equal(js.$schema, 'https://json-schema.org/draft/2020-12/schema');
    assert.ok(js.$defs?.address, '$defs.address kept');
    assert.equal(js.additionalProperties, false);
    assert.equal(js.$defs.address.$anchor, 'addressDef', 'SEP-2106: $anchor kept');
    for (const k of ['allOf', 'if', 'then', 'else']) assert.ok(js[k], `SEP-2106: ${k} kept`);
  });

  test('content tools: text, image, audio, embedded resource, mixed', async () => {
    let r = await client.callTool({ name: 'test_simple_text', arguments: {} });
    assert.equal(r.content.length, 1);
    assert.equal(r.content[0].type, 'text');
    assert.ok(r.content[0].text);

    r = await client.callTool({ name: 'test_image_content', arguments: {} });
    assert.equal(r.content[0].type, 'image');
    assert.equal(r.content[0].mimeType, 'image/png');
    assert.ok(isPNG(r.content[0].data), 'image data is a PNG');

    r = await client.callTool({ name: 'test_audio_content', arguments: {} });
    assert.equal(r.content[0].type, 'audio');
    assert.equal(r.content[0].mimeType, 'audio/wav');
    assert.ok(isWAV(r.content[0].data), 'audio data is a WAV file');

    r = await client.callTool({ name: 'test_embedded_resource', arguments: {} });
    assert.equal(r.content[0].type, 'resource');
    assert.equal(r.content[0].resource.uri, 'test://embedded-resource');
    assert.equal(r.content[0].resource.mimeType, 'text/plain');
    assert.ok(r.content[0].resource.text);

    r = await client.callTool({ name: 'test_multiple_content_types', arguments: {} });
    const kinds = r.content.map((c) => c.type);
    assert.ok(r.content.length >= 2);
    for (const k of ['text', 'image', 'resource']) assert.ok(kinds.includes(k), `missing ${k}: ${kinds}`);
  });

  test('test_error_handling is a tool error (isError) with text', async () => {
    const r = await client.callTool({ name: 'test_error_handling', arguments: {} });
    assert.equal(r.isError, true);
    assert.ok(r.content[0].text);
  });

  test('json_schema_2020_12_tool accepts valid arguments and rejects extra ones', async () => {
    let r = await client.callTool({
      name: 'json_schema_2020_12_tool',
      arguments: { name: 'Ada', email: 'ada@example.com', address: { street: '1 Main St', city: 'Springfield' } },
    });
    assert.ok(!r.isError, textOf(r));
    assert.match(textOf(r), /Springfield/);
    r = await client.callTool({ name: 'json_schema_2020_12_tool', arguments: { name: 'Ada', email: 'ada@example.com', extra: 1 } });
    assert.equal(r.isError, true);
    r = await client.callTool({ name: 'json_schema_2020_12_tool', arguments: { name: 'Ada' } });
    assert.equal(r.isError, true, 'allOf/anyOf: a phone or an email is required');
  });

  test('test_reconnection returns text', async () => {
    const r = await client.callTool({ name: 'test_reconnection', arguments: {} });
    assert.ok(textOf(r));
  });

  test('test_tool_with_logging sends at least 3 log messages during the call', async () => {
    await client.setLoggingLevel('debug');
    logs.length = 0;
    const r = await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
    assert.ok(!r.isError);
    await waitFor(() => logs.length >= 3, 2000, '3 log messages');
    for (const l of logs) {
      assert.ok(l.level, 'level');
      assert.ok(l.data !== undefined, 'data');
    }
  });

  test('test_tool_with_progress reports 0, 50, 100 of 100 (onprogress)', async () => {
    const seen = [];
    const r = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined, {
      onprogress: (p) => seen.push(p),
    });
    assert.ok(!r.isError);
    assert.deepEqual(seen.map((p) => p.progress), [0, 50, 100]);
    assert.ok(seen.every((p) => p.total === 100));
    const lost = errors.filter((e) => /unknown token/.test(String(e)));
    assert.deepEqual(lost, [], 'progress notifications arrived after the response');
  });

  test('test_sampling: the server asks sampling/createMessage and returns the model text', async () => {
    samplingRequests.length = 0;
    const r = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'What is 2+2?' } });
    assert.equal(samplingRequests.length, 1);
    const asked = samplingRequests[0];
    assert.ok(asked.maxTokens > 0);
    assert.match(JSON.stringify(asked.messages), /What is 2\+2\?/);
    assert.ok(!r.isError, textOf(r));
    assert.match(textOf(r), /TS model says: What is 2\+2\?/);
  });

  test('test_elicitation: the server asks for username and email and returns the answer', async () => {
    elicitRequests.length = 0;
    const r = await client.callTool({ name: 'test_elicitation', arguments: { message: 'Who are you?' } });
    assert.equal(elicitRequests.length, 1);
    assert.equal(elicitRequests[0].message, 'Who are you?');
    const props = elicitRequests[0].requestedSchema.properties;
    assert.ok(props.username && props.email);
    assert.ok(!r.isError, textOf(r));
    assert.match(textOf(r), /accept/);
    assert.match(textOf(r), /octocat@example\.com/);
  });

  test('test_elicitation_sep1034_defaults: schema defaults, applied by the client', async () => {
    elicitRequests.length = 0;
    const r = await client.callTool({ name: 'test_elicitation_sep1034_defaults', arguments: {} });
    const props = elicitRequests[0].requestedSchema.properties;
    assert.equal(props.name.default, 'John Doe');
    assert.equal(props.age.type, 'integer');
    assert.equal(props.age.default, 30);
    assert.equal(props.score.default, 95.5);
    assert.ok(Array.isArray(props.status.enum));
    assert.equal(props.status.default, 'active');
    assert.equal(props.verified.default, true);
    const text = textOf(r);
    for (const want of ['"name":"John Doe"', '"age":30', '"score":95.5', '"status":"active"', '"verified":true']) {
      assert.ok(text.includes(want), `${want} missing from ${text}`);
    }
  });

  test('test_elicitation_sep1330_enums: every enum form', async () => {
    elicitRequests.length = 0;
    const r = await client.callTool({ name: 'test_elicitation_sep1330_enums', arguments: {} });
    const p = elicitRequests[0].requestedSchema.properties;
    assert.ok(Array.isArray(p.untitledSingle.enum));
    assert.ok(p.titledSingle.oneOf.every((o) => o.const && o.title));
    assert.ok(Array.isArray(p.legacyEnum.enum) && Array.isArray(p.legacyEnum.enumNames));
    assert.equal(p.untitledMulti.type, 'array');
    assert.ok(Array.isArray(p.untitledMulti.items.enum));
    assert.equal(p.titledMulti.type, 'array');
    assert.ok(p.titledMulti.items.anyOf.every((o) => o.const && o.title));
    assert.match(textOf(r), /"titledSingle":"value3"/);
    assert.match(textOf(r), /"untitledMulti":\["option1","option3"\]/);
  });

  test('resources: list, read text, read binary, template', async () => {
    const { resources } = await client.listResources();
    // The fixture's skills (examples/everything/skills.go) list their SKILL.md too.
    assert.deepEqual(resources.map((r) => r.uri).sort(), [SKILL_REFUNDS, SKILL_PDF, STATIC_BINARY, STATIC_TEXT, WATCHED]);
    for (const r of resources) assert.ok(r.name, `${r.uri} has no name`);

    let { contents } = await client.readResource({ uri: STATIC_TEXT });
    assert.equal(contents[0].uri, STATIC_TEXT);
    assert.ok(contents[0].text);
    assert.equal(contents[0].mimeType, 'text/plain');

    ({ contents } = await client.readResource({ uri: STATIC_BINARY }));
    assert.ok(contents[0].blob);
    assert.equal(contents[0].mimeType, 'image/png');
    assert.ok(isPNG(contents[0].blob));

    const { resourceTemplates } = await client.listResourceTemplates();
    assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate), ['test://template/{id}/data']);
    ({ contents } = await client.readResource({ uri: 'test://template/123/data' }));
    assert.match(contents[0].text, /123/);

    await assert.rejects(client.readResource({ uri: 'test://no-such-resource' }), /not found/i);
  });

  test('resources/subscribe test://watched-resource, an update arrives, unsubscribe', async () => {
    updates.length = 0;
    await client.subscribeResource({ uri: WATCHED });
    await waitFor(() => updates.some((u) => u.uri === WATCHED), 5000, 'notifications/resources/updated');
    const { contents } = await client.readResource({ uri: WATCHED });
    assert.match(contents[0].text, /revision \d+/);
    await client.unsubscribeResource({ uri: WATCHED });
    await sleep(300); // let updates already on the way arrive
    updates.length = 0;
    await sleep(400); // four watch intervals
    assert.deepEqual(updates, [], 'no updates after unsubscribe');
  });

  test('prompts: list and get every prompt', async () => {
    const { prompts } = await client.listPrompts();
    assert.deepEqual(prompts.map((p) => p.name).sort(), FIXTURE_PROMPTS);
    for (const p of prompts) assert.ok(p.description, `${p.name} has no description`);

    let r = await client.getPrompt({ name: 'test_simple_prompt' });
    assert.ok(r.messages.length > 0);
    assert.equal(r.messages[0].role, 'user');
    assert.equal(r.messages[0].content.type, 'text');

    r = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'apple', arg2: 'banana' } });
    const all = JSON.stringify(r.messages);
    assert.ok(all.includes('apple') && all.includes('banana'), all);

    r = await client.getPrompt({ name: 'test_prompt_with_embedded_resource', arguments: { resourceUri: 'test://example' } });
    const res = r.messages.find((m) => m.content.type === 'resource');
    assert.ok(res, 'a resource message');
    assert.equal(res.content.resource.uri, 'test://example');

    r = await client.getPrompt({ name: 'test_prompt_with_image' });
    const img = r.messages.find((m) => m.content.type === 'image');
    assert.ok(img, 'an image message');
    assert.equal(img.content.mimeType, 'image/png');
    assert.ok(isPNG(img.content.data));
  });

  test('completion/complete for test_prompt_with_arguments arg1', async () => {
    const r = await client.complete({
      ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
      argument: { name: 'arg1', value: 'par' },
    });
    assert.ok(Array.isArray(r.completion.values));
    assert.deepEqual(r.completion.values, ['paris', 'park', 'party']);
  });

  test('cancellation with an AbortSignal: during a sleep, and while the server awaits sampling', async () => {
    errors.length = 0;

    // 1. A call that sleeps: abort it, the server must not answer it and must stay responsive.
    const ac1 = new AbortController();
    const slow = client.callTool({ name: 'test_reconnection', arguments: {} }, undefined, { signal: ac1.signal });
    await sleep(50);
    ac1.abort(new Error('user cancelled'));
    await assert.rejects(slow, /cancelled/);
    let r = await client.callTool({ name: 'test_simple_text', arguments: {} });
    assert.ok(textOf(r));

    // 2. A call whose server is waiting on our sampling answer: abort it, then answer late.
    samplingGate = deferred();
    samplingEntered = deferred();
    const ac2 = new AbortController();
    const waiting = client.callTool({ name: 'test_sampling', arguments: { prompt: 'never mind' } }, undefined, {
      signal: ac2.signal,
    });
    await samplingEntered.promise;
    ac2.abort(new Error('user cancelled'));
    await assert.rejects(waiting, /cancelled/);
    assert.deepEqual(await client.ping(), {});
    r = await client.callTool({ name: 'test_simple_text', arguments: {} });
    assert.ok(textOf(r));
    const gate = samplingGate;
    samplingGate = null;
    samplingEntered = null;
    gate.resolve(); // the late sampling answer goes to a server that has stopped waiting

    // Past the sleeping tool's 300 ms: a response to either cancelled request would reach the
    // SDK as "a response for an unknown message ID".
    await sleep(500);
    assert.deepEqual(await client.ping(), {});
    const unknown = errors.filter((e) => /unknown message ID/.test(String(e)));
    assert.deepEqual(unknown, [], 'the server answered a cancelled request');
    // Nor may a cancelled request's POST end in a way the transport reports (over HTTP: it
    // ends as an empty event stream, never 204 or a body without a content type).
    assert.deepEqual(errors.map(String), [], 'the client reported errors around the cancellations');
  });

  test('a call longer than the server holds a stream resumes it and gets its answer (SSE polling)', async () => {
    // With RELAY_POLL_AFTER set, the HTTP server was started with -poll-after: it closes the
    // 300 ms call's stream early, primed, and the SDK resumes it with a GET and Last-Event-ID.
    errors.length = 0;
    const tokens = [];
    const r = await client.callTool({ name: 'test_reconnection', arguments: {} }, undefined, {
      onresumptiontoken: (token) => tokens.push(token),
    });
    assert.equal(textOf(r), 'Reconnection test completed');
    if (URL_ && process.env.RELAY_POLL_AFTER) {
      assert.ok(tokens.length > 0, 'the stream was never primed: the server did not poll');
    }
    assert.deepEqual(errors.map(String), [], 'the client reported errors around the resumption');
  });

  test('an unknown method and an unknown tool are JSON-RPC errors the client sees as such', async () => {
    // Over HTTP, inside a session, they travel in HTTP 200: a 404 would be a transport error
    // (StreamableHTTPError, whose code is the HTTP status) that loses the JSON-RPC code.
    await assert.rejects(client.request({ method: 'nope/nope', params: {} }, EmptyResultSchema),
      (e) => e.code === -32601 || assert.fail(`unknown method: ${e?.constructor?.name} ${e?.code} ${e}`));
    await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }),
      (e) => e.code === -32602 || assert.fail(`unknown tool: ${e?.constructor?.name} ${e?.code} ${e}`));
    assert.deepEqual(await client.ping(), {});
  });
});
