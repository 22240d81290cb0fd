// mcp_server_sdk.mjs — cdsh's MCP server (`cdsh mcp --fixture`) driven by the
// official TypeScript SDK client over stdio and Streamable HTTP, and by the
// official inspector CLI.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { assert, bin, cdsh, here, startProcess, stop, runTests } from './mcp_lib.mjs';

const FIXTURE = ['echo', 'add', 'fail', 'sleep'];

async function exercise(client) {
  const { tools } = await client.listTools();
  // The profile's plugins (e.g. the host's skill tool) come first, the fixture after.
  assert.deepEqual(tools.map((t) => t.name).filter((n) => FIXTURE.includes(n)), FIXTURE);
  const add = tools.find((t) => t.name === 'add');
  assert.equal(add.inputSchema.type, 'object');
  assert.equal(add.outputSchema.properties.sum.type, 'number');
  const echo = await client.callTool({ name: 'echo', arguments: { text: 'hello sdk' } });
  assert.deepEqual(echo.content, [{ type: 'text', text: 'hello sdk' }]);
  const sum = await client.callTool({ name: 'add', arguments: { a: 2, b: 40 } });
  assert.equal(sum.structuredContent.sum, 42);
  const bad = await client.callTool({ name: 'fail', arguments: {} });
  assert.equal(bad.isError, true);
  assert.equal(bad.content[0].text, 'Error: this tool always fails (fixture)');
  const invalid = await client.callTool({ name: 'add', arguments: { a: 'x' } });
  assert.equal(invalid.isError, true);
  await assert.rejects(client.callTool({ name: 'nope', arguments: {} }), /Unknown tool: nope/);
  // Progress while a long tool runs (heartbeats every second: a 4 s run
  // leaves 2 s of slack for the second one on a loaded machine).
  const seen = [];
  const slept = await client.callTool({ name: 'sleep', arguments: { ms: 4000 } }, undefined,
    { onprogress: (p) => seen.push(p.progress), timeout: 60000 });
  assert.equal(slept.structuredContent.slept, 4000);
  assert.ok(seen.length >= 2, `progress: ${JSON.stringify(seen)}`);
  // Cancellation: abort a 60 s sleep; the SDK sends notifications/cancelled.
  const ac = new AbortController();
  const t0 = Date.now();
  setTimeout(() => ac.abort('user stop'), 300);
  await assert.rejects(client.callTool({ name: 'sleep', arguments: { ms: 60000 } }, undefined,
    { signal: ac.signal }));
  assert.ok(Date.now() - t0 < 30000); // the sleep alone would take 60 s
  // The server is still fine afterwards.
  const again = await client.callTool({ name: 'echo', arguments: { text: 'still here' } });
  assert.equal(again.content[0].text, 'still here');
}

await runTests({
  async sdk_client_over_stdio() {
    const transport = new StdioClientTransport({ command: cdsh, args: ['mcp', '--fixture'] });
    const client = new Client({ name: 'e2e', version: '1.0.0' });
    await client.connect(transport);
    assert.equal(client.getServerVersion().name, 'cdsh');
    await exercise(client);
    await client.close();
  },
  async sdk_client_over_streamable_http() {
    const srv = await startProcess(cdsh, ['mcp', '--fixture', '--http', '0', '--json', '--token', 'e2e-token'], {
      ready: (o) => o.includes('"url"') });
    try {
      const { url } = JSON.parse(srv.output().trim().split('\n')[0]);
      const transport = new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: 'Bearer e2e-token' } } });
      const client = new Client({ name: 'e2e', version: '1.0.0' });
      await client.connect(transport);
      assert.ok(transport.sessionId, 'no Mcp-Session-Id');
      await exercise(client);
      await transport.terminateSession();
      await client.close();
      // Without the token the connection is refused.
      const anon = new Client({ name: 'anon', version: '1' });
      await assert.rejects(anon.connect(new StreamableHTTPClientTransport(new URL(url))));
    } finally { await stop(srv); }
  },
  inspector_cli_lists_and_calls() {
    const cli = join(here, '..', 'node_modules', '@modelcontextprotocol', 'inspector-cli', 'build', 'index.js');
    const base = [cli, cdsh, 'mcp', '--fixture'];
    // The inspector resolves its package.json relative to the working directory's parent.
    const list = spawnSync('node', [...base, '--method', 'tools/list'], { cwd: here, encoding: 'utf8', timeout: 60000 });
    assert.equal(list.status, 0, list.stderr + list.stdout);
    assert.deepEqual(JSON.parse(list.stdout).tools.map((t) => t.name).filter((n) => FIXTURE.includes(n)), FIXTURE);
    const call = spawnSync('node', [...base, '--method', 'tools/call', '--tool-name', 'add',
      '--tool-arg', 'a=20', 'b=22'], { cwd: here, encoding: 'utf8', timeout: 60000 });
    assert.equal(call.status, 0, call.stderr + call.stdout);
    assert.equal(JSON.parse(call.stdout).structuredContent.sum, 42);
  },
});
