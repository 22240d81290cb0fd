// mcp_v2.mjs — cdsh's MCP server (`cdsh mcp --fixture`, stdio and --http)
// against the v2 TypeScript SDK client (@modelcontextprotocol/client) and the
// v2 inspector CLI (@modelcontextprotocol/inspector), each in its three
// protocol eras: `legacy` (initialize), `auto` (server/discover probe, falls
// back) and `modern` (pinned to 2026-07-28, stateless). Lists, calls,
// progress, cancellation and — in the modern era — the subscriptions/listen
// stream that carries list_changed. ERAS=legacy,auto,modern (default) picks eras.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { assert, cdsh, here, startProcess, stop, runTests } from './mcp_lib.mjs';

const MODERN = '2026-07-28';
const FIXTURE = ['echo', 'add', 'fail', 'sleep'];
const TOKEN = 'e2e-v2-token';
const require = createRequire(import.meta.url);
const inspectorCli = join(dirname(require.resolve('@modelcontextprotocol/inspector/package.json')),
  'clients', 'cli', 'build', 'index.js');

function negotiation(era) {
  if (era === 'legacy') return { mode: 'legacy' };
  if (era === 'auto') return { mode: 'auto' };
  return { mode: { pin: MODERN } };
}

async function connect(era, transportKind, url) {
  const changes = [];
  const client = new Client({ name: 'e2e-v2', version: '1.0.0' }, {
    versionNegotiation: negotiation(era),
    listChanged: { tools: { autoRefresh: false, onChanged: (err) => changes.push(err) } },
  });
  const transport = transportKind === 'stdio'
    ? new StdioClientTransport({ command: cdsh, args: ['mcp', '--fixture'] })
    : new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } });
  await client.connect(transport);
  return { client, transport, changes };
}

async function exercise(era, transportKind, url) {
  const { client } = await connect(era, transportKind, url);
  try {
    if (era === 'legacy') {
      assert.equal(client.getProtocolEra(), 'legacy');
      assert.equal(client.getNegotiatedProtocolVersion(), '2025-11-25');
      assert.equal(client.autoOpenedSubscription, undefined);
    } else {
      assert.equal(client.getProtocolEra(), 'modern');
      assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
      // listChanged on a modern connection opens subscriptions/listen; cdsh
      // acknowledges the tools filter it honours.
      const sub = client.autoOpenedSubscription;
      assert.ok(sub, 'no subscription was opened');
      assert.deepEqual(sub.honoredFilter, { toolsListChanged: true });
    }
    assert.equal(client.getServerVersion().name, 'cdsh');
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).filter((n) => FIXTURE.includes(n)), FIXTURE);
    const echo = await client.callTool({ name: 'echo', arguments: { text: `hello ${era}` } });
    assert.deepEqual(echo.content, [{ type: 'text', text: `hello ${era}` }]);
    const sum = await client.callTool({ name: 'add', arguments: { a: 2, b: 40 } });
    assert.equal(sum.structuredContent.sum, 42);
    const bad = await client.callTool({ name: 'fail', arguments: {} });
    assert.equal(bad.isError, true);
    await assert.rejects(client.callTool({ name: 'nope', arguments: {} }), /Unknown tool: nope/);
    // Progress: heartbeats every second while a tool runs.
    const seen = [];
    const slept = await client.callTool({ name: 'sleep', arguments: { ms: 2500 } }, {
      onprogress: (p) => seen.push(p.progress), timeout: 60000 });
    assert.equal(slept.structuredContent.slept, 2500);
    assert.ok(seen.length >= 1, `progress: ${JSON.stringify(seen)}`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i] > seen[i - 1]);
    // Cancellation: abort a 60 s sleep (notifications/cancelled, or over
    // modern HTTP the closed answer stream), then the server still answers.
    const ac = new AbortController();
    setTimeout(() => ac.abort('user stop'), 300);
    await assert.rejects(client.callTool({ name: 'sleep', arguments: { ms: 60000 } },
      { signal: ac.signal }));
    const again = await client.callTool({ name: 'echo', arguments: { text: 'still here' } });
    assert.equal(again.content[0].text, 'still here');
  } finally {
    await client.close();
  }
}

function inspector(era, target, extra) {
  const r = spawnSync(process.execPath, [inspectorCli, '--protocol-era', era, '--format', 'json',
    '--quiet', ...extra, ...target], { encoding: 'utf8', timeout: 120000, cwd: here });
  if (r.error) throw r.error;
  assert.equal(r.status, 0, `inspector ${era} ${extra.join(' ')}: ${r.stderr}${r.stdout}`);
  return JSON.parse(r.stdout);
}

function inspectorChecks(era, target) {
  const list = inspector(era, target, ['--method', 'tools/list']);
  const names = list.result.tools.map((t) => t.name);
  for (const n of FIXTURE) assert.ok(names.includes(n), `${era}: ${n} missing from ${names}`);
  const call = inspector(era, target, ['--method', 'tools/call', '--tool-name', 'add',
    '--tool-args-json', '{"a":1,"b":2}']);
  assert.equal(call.result.structuredContent.sum, 3);
  assert.deepEqual(call.result.content, [{ type: 'text', text: '{"sum":3.0}' }]);
}

async function withHttp(fn) {
  const srv = await startProcess(cdsh, ['mcp', '--fixture', '--http', '0', '--json', '--token', TOKEN], {
    ready: (o) => o.includes('"url"') });
  try {
    const { url } = JSON.parse(srv.output().trim().split('\n')[0]);
    await fn(url);
  } finally {
    await stop(srv);
  }
}

// SIGTERM ends `cdsh mcp --http` at once although a legacy client holds its
// GET stream, a modern client its listen stream and a third client dropped
// its stream. Reports the time; the bound is generous and scaled.
async function sigtermWithOpenStreams() {
  const srv = await startProcess(cdsh, ['mcp', '--fixture', '--http', '0', '--json', '--token', TOKEN], {
    ready: (o) => o.includes('"url"') });
  const { url } = JSON.parse(srv.output().trim().split('\n')[0]);
  const legacy = await connect('legacy', 'http', url);
  const modern = await connect('modern', 'http', url);
  assert.ok(modern.client.autoOpenedSubscription);
  const headers = { Authorization: `Bearer ${TOKEN}`, Accept: 'text/event-stream',
    'Mcp-Session-Id': legacy.transport.sessionId };
  const dropped = new AbortController();
  const res = await fetch(url, { headers, signal: dropped.signal });
  assert.equal(res.status, 200);
  dropped.abort();
  const closed = modern.client.autoOpenedSubscription.closed;
  const exited = new Promise((r) => srv.child.on('exit', (code, sig) => r({ code, sig })));
  const t0 = Date.now();
  srv.child.kill('SIGTERM');
  const how = await exited;
  const ms = Date.now() - t0;
  console.log(`     cdsh mcp --http exited ${JSON.stringify(how)} ${ms} ms after SIGTERM`);
  assert.equal(how.code, 0);
  const scale = Number(process.env.CDSH_TEST_TIMEOUT_SCALE || 1);
  assert.ok(ms < 5000 * scale, `exit took ${ms} ms`);
  // The subscription ended with the server's closing answer.
  assert.equal(await closed, 'graceful');
  await legacy.client.close().catch(() => {});
  await modern.client.close().catch(() => {});
}

const tests = { sigterm_with_open_streams: sigtermWithOpenStreams };
for (const era of (process.env.ERAS || "legacy,auto,modern").split(",").filter(Boolean)) {
  tests[`sdk_v2_${era}_stdio`] = () => exercise(era, 'stdio');
  tests[`sdk_v2_${era}_http`] = () => withHttp((url) => exercise(era, 'http', url));
  tests[`inspector_${era}_stdio`] = () => inspectorChecks(era, [cdsh, 'mcp', '--fixture']);
  tests[`inspector_${era}_http`] = () => withHttp((url) =>
    inspectorChecks(era, ['--server-url', url, '--transport', 'http', '--header', `Authorization: Bearer ${TOKEN}`]));
}
await runTests(tests);
