// mcp_conformance.mjs — the official @modelcontextprotocol/conformance server
// scenarios that apply to cdsh (no resources, prompts, completions, sampling or
// elicitation; the tool scenarios call the fixture's test_* tools) against
// `cdsh mcp --fixture --http`. Runs on Node 20 through the
// fs.globSync shim in conformance-shim/.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assert, cdsh, here, scaled, startProcess, stop, runTests } from './mcp_lib.mjs';

const conformance = join(here, '..', 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'logging-set-level',
  'dns-rebinding-protection', 'server-sse-multiple-streams', 'tools-call-simple-text',
  'tools-call-error', 'tools-call-image'];

const srv = await startProcess(cdsh, ['mcp', '--fixture', '--http', '0', '--json'], { ready: (o) => o.includes('"url"') });
const { url } = JSON.parse(srv.output().trim().split('\n')[0]);
const outdir = mkdtempSync(join(tmpdir(), 'cdsh-conformance-'));
const tests = {};
for (const s of SCENARIOS) {
  tests[s] = () => {
    const r = spawnSync('node', ['--import', './conformance-shim/register.mjs', conformance, 'server',
      '--url', url, '--scenario', s, '-o', outdir], { cwd: here, encoding: 'utf8', timeout: scaled(120000) });
    const text = r.stdout + r.stderr;
    assert.equal(r.status, 0, text);
    assert.match(text, /Passed: (\d+)\/\1, 0 failed/, text);
  };
}
try {
  await runTests(tests);
} finally {
  await stop(srv);
  rmSync(outdir, { recursive: true, force: true });
}
