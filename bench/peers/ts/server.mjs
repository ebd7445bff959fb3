// Benchmark peer: the echo/sleep stdio MCP server on the official
// TypeScript SDK. It serves the same two tools as Relay's examples/echo:
// "echo" returns its text argument unchanged; "sleep" waits the given number
// of milliseconds, reporting progress while it waits when the request carries
// a progress token, and stops early when the request is cancelled.
// Nothing but protocol messages is written to stdout.

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const PROGRESS_EVERY_MS = 10;

const hints = { readOnlyHint: true, idempotentHint: true };

const server = new McpServer({ name: 'echo-ts', version: '1.0.0' });

server.registerTool(
  'echo',
  {
    description: 'Returns the given text unchanged.',
    inputSchema: { text: z.string().describe('the text to return') },
    annotations: hints,
  },
  async ({ text }) => ({ content: [{ type: 'text', text }] }),
);

server.registerTool(
  'sleep',
  {
    description: 'Sleeps for the given number of milliseconds.',
    inputSchema: { ms: z.number().int().describe('how many milliseconds to sleep') },
    annotations: hints,
  },
  ({ ms }, extra) =>
    new Promise((resolve, reject) => {
      const token = extra._meta?.progressToken;
      const start = Date.now();
      let ticker;
      const finish = () => {
        clearTimeout(timer);
        clearInterval(ticker);
        extra.signal.removeEventListener('abort', onAbort);
      };
      const onAbort = () => {
        finish();
        reject(new Error('cancelled'));
      };
      const timer = setTimeout(() => {
        finish();
        resolve({ content: [{ type: 'text', text: 'slept' }] });
      }, ms);
      if (token !== undefined) {
        ticker = setInterval(() => {
          const progress = Math.min(Date.now() - start, ms);
          extra
            .sendNotification({
              method: 'notifications/progress',
              params: { progressToken: token, progress, total: ms },
            })
            .catch(() => {});
        }, PROGRESS_EVERY_MS);
      }
      if (extra.signal.aborted) {
        onAbort();
        return;
      }
      extra.signal.addEventListener('abort', onAbort);
    }),
);

try {
  await server.connect(new StdioServerTransport());
} catch (err) {
  console.error('echo-ts:', err);
  process.exit(1);
}
