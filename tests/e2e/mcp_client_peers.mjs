// mcp_client_peers.mjs — cdsh's MCP client (`cdsh mcp tools|call`) against
// the official reference servers from npm: server-everything over stdio and
// Streamable HTTP, server-filesystem over stdio.
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assert, bin, runCdsh, cdshJson, freePort, startProcess, stop, runTests } from './mcp_lib.mjs';

const everything = bin('mcp-server-everything');
const filesystem = bin('mcp-server-filesystem');
const EVERYTHING_TOOLS = ['echo', 'get-annotated-message', 'get-env', 'get-resource-links',
  'get-resource-reference', 'get-structured-content', 'get-sum', 'get-tiny-image',
  'gzip-file-as-resource', 'toggle-simulated-logging', 'toggle-subscriber-updates',
  'trigger-long-running-operation', 'simulate-research-query'];

function checkEverything(target) {
  const tools = cdshJson(['mcp', 'tools', ...target]);
  assert.deepEqual(tools.map((t) => t.name).sort(), [...EVERYTHING_TOOLS].sort());
  const echo = cdshJson(['mcp', 'call', ...target, 'echo', '{"message":"hi from cdsh"}']);
  assert.equal(echo.content[0].text, 'Echo: hi from cdsh');
  const sum = cdshJson(['mcp', 'call', ...target, 'get-sum', '{"a":19,"b":23}']);
  assert.match(sum.content[0].text, /42/);
  const sc = cdshJson(['mcp', 'call', ...target, 'get-structured-content', '{"location":"Chicago"}']);
  assert.equal(typeof sc.structuredContent.temperature, 'number');
  assert.deepEqual(JSON.parse(sc.content[0].text), sc.structuredContent);
  const img = cdshJson(['mcp', 'call', ...target, 'get-tiny-image']);
  assert.ok(img.content.some((b) => b.type === 'image' && b.mimeType === 'image/png'));
  // Progress: one notification per step, printed on stderr.
  const long = runCdsh(['mcp', 'call', ...target, 'trigger-long-running-operation',
    '{"duration":1,"steps":4}', '--progress']);
  assert.equal(long.status, 0, long.stderr);
  // Over stdio the last notification may lose the race with the result.
  const steps = (long.stderr.match(/^progress \d+\/4/gm) || []).length;
  assert.ok(steps >= 1 && steps <= 4, long.stderr);
  // Cancellation by timeout: a clear error, quickly.
  const t0 = Date.now();
  const slow = runCdsh(['mcp', 'call', ...target, 'trigger-long-running-operation',
    '{"duration":60,"steps":2}', '--timeout', '500']);
  assert.equal(slow.status, 1);
  assert.match(slow.stderr, /timed out after 500 ms/);
  assert.ok(Date.now() - t0 < 30000); // the operation alone would take 60 s
  // A task-only tool is refused up front.
  const task = runCdsh(['mcp', 'call', ...target, 'simulate-research-query', '{"topic":"x"}']);
  assert.equal(task.status, 1);
  assert.match(task.stderr, /requires task-based execution/);
}

await runTests({
  everything_stdio_lists_and_calls() {
    checkEverything(['--server', everything]);
  },
  everything_stdio_child_env_is_scrubbed() {
    const env = { ...process.env, E2E_API_KEY: 'leak', DSH_E2E: 'leak2', E2E_VISIBLE: 'yes' };
    const r = runCdsh(['mcp', 'call', '--server', everything, '--env', 'E2E_SERVICE_TOKEN=configured',
      'get-env', '--json'], { env });
    assert.equal(r.status, 0, r.stderr);
    const shown = JSON.parse(JSON.parse(r.stdout).content[0].text);
    assert.equal(shown.E2E_VISIBLE, 'yes');
    assert.equal(shown.E2E_SERVICE_TOKEN, 'configured');
    assert.equal(shown.E2E_API_KEY, undefined);
    assert.equal(shown.DSH_E2E, undefined);
  },
  async everything_http_lists_and_calls() {
    const port = await freePort();
    const srv = await startProcess(everything, ['streamableHttp'], {
      env: { ...process.env, PORT: String(port) }, ready: (o) => /listening|running|port/i.test(o) });
    try {
      checkEverything(['--url', `http://127.0.0.1:${port}/mcp`]);
    } finally { await stop(srv); }
  },
  filesystem_stdio_reads_and_refuses_outside_paths() {
    const dir = mkdtempSync(join(tmpdir(), 'cdsh-mcp-fs-'));
    try {
      writeFileSync(join(dir, 'hello.txt'), 'hello\n');
      const target = ['--server', `${filesystem} ${dir}`];
      const tools = cdshJson(['mcp', 'tools', ...target]);
      assert.ok(tools.length >= 14, `only ${tools.length} tools`);
      const read = cdshJson(['mcp', 'call', ...target, 'read_text_file', JSON.stringify({ path: join(dir, 'hello.txt') })]);
      assert.equal(read.content[0].text, 'hello\n');
      assert.deepEqual(read.structuredContent, { content: 'hello\n' });
      const out = runCdsh(['mcp', 'call', ...target, 'read_text_file', '{"path":"/etc/hostname"}']);
      assert.equal(out.status, 3, out.stderr); // isError result
      assert.match(out.stdout, /Access denied - path outside allowed directories/);
    } finally { rmSync(dir, { recursive: true, force: true }); }
  },
});
