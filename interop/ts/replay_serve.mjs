// The official MCP TypeScript SDK client (@modelcontextprotocol/sdk 1.32.2, the initialize
// generation over stdio) against `relay replay --serve`: a recording of a session with
// Relay's examples/echo acts as the server, so that a host's test needs no real one.
//
// Run: RELAY_BIN=/path/to/relay RELAY_RECORDING=/path/to/session.ndjson node --test replay_serve.mjs
// (cmd/relay/replay_test.go records the session and does this; the name has no ".test." so
// that a bare `node --test` here leaves it out.)

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

test('relay replay --serve answers the official client as the recorded server did', async () => {
  const transport = new StdioClientTransport({
    command: process.env.RELAY_BIN,
    args: ['replay', '--serve', process.env.RELAY_RECORDING],
    stderr: 'inherit',
  });
  const client = new Client({ name: 'ts-replay', version: '1.0.0' });
  await client.connect(transport); // a different client's initialize: matched by method
  try {
    assert.equal(client.getServerVersion().name, 'relay-echo');
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['echo', 'sleep']);
    const res = await client.callTool({ name: 'echo', arguments: { text: 'recorded words' } });
    assert.equal(res.content[0].text, 'recorded words');
    // A call that was never recorded is an error that says so.
    await assert.rejects(client.callTool({ name: 'echo', arguments: { text: 'never said' } }),
      /no recorded answer to tools\/call/);
  } finally {
    await client.close();
  }
});
