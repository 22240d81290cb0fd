// sdk_echo_server.mjs — the official TypeScript SDK serving one trivial tool,
// `echo {text}` → one text block, over stdio: the reference side of
// bench/bench_mcp.c (which compares it with `cdsh mcp --fixture`).
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'sdk-echo', version: '1.0.0' });
server.registerTool('echo', { description: 'Echoes the text back.', inputSchema: { text: z.string() } },
  async ({ text }) => ({ content: [{ type: 'text', text }] }));
await server.connect(new StdioServerTransport());
