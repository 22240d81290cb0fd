// mcp_lib.mjs — helpers for the MCP end-to-end tests: paths, running the cdsh
// binary, starting HTTP servers on free ports, small assertions. Offline:
// every peer comes from tests/node_modules/.bin. Budgets follow
// CDSH_TEST_TIMEOUT_SCALE (tests/support/timing.cjs).
import { spawn, spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import net from 'node:net';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { scaled, budgetMessage } from '../support/timing.cjs';
export { scaled };

// Never touch the developer's ~/.cdsh: every cdsh these tests start gets a
// fresh state directory unless the caller chose one.
// The ones made here (and by tempHome) are removed when the test exits.
const madeHomes = [];
export function tempHome(prefix = 'cdsh-e2e-home-') {
  const home = mkdtempSync(resolve(tmpdir(), prefix));
  madeHomes.push(home);
  return home;
}
process.on('exit', () => {
  for (const h of madeHomes) rmSync(h, { recursive: true, force: true });
});
if (!process.env.CDSH_HOME) process.env.CDSH_HOME = tempHome();

export const here = dirname(fileURLToPath(import.meta.url));
export const bin = (name) => resolve(here, '..', 'node_modules', '.bin', name);
export const cdsh = process.env.CDSH_BINARY || resolve(here, '..', '..', 'build', 'cdsh');
export { assert };

// Runs cdsh synchronously (opts.timeout ms, default 60 s, scaled); returns
// {status, stdout, stderr}.
export function runCdsh(args, opts = {}) {
  const budget = scaled(opts.timeout || 60000);
  const r = spawnSync(cdsh, args, { encoding: 'utf8', timeout: budget, env: opts.env || process.env });
  if (r.error?.code === 'ETIMEDOUT') throw new Error(budgetMessage(`cdsh ${args.join(' ')}`, budget, r.stderr));
  if (r.error) throw r.error;
  return r;
}

export function cdshJson(args, opts) {
  const r = runCdsh([...args, '--json'], opts);
  assert.equal(r.status, opts?.status ?? 0, `cdsh ${args.join(' ')} failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

export async function freePort() {
  return new Promise((ok, fail) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => ok(p)); });
    s.on('error', fail);
  });
}

// Starts a long-running process and waits until `ready(text)` holds for its
// stdout+stderr (or until it exits / 30 s, scaled, pass). Returns {child, output()}.
export async function startProcess(cmd, args, { env, ready }) {
  const child = spawn(cmd, args, { env: env || process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; err += d; });
  const budget = scaled(30000);
  const deadline = Date.now() + budget;
  while (!ready(out)) {
    if (child.exitCode !== null) throw new Error(`${cmd} exited early (${child.exitCode}): ${out}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(budgetMessage(`starting ${cmd} ${args.join(' ')} (its ready output)`, budget, err) +
                      `\n--- output so far ---\n${out.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, output: () => out };
}

export async function stop(p) {
  if (!p || p.child.exitCode !== null) return;
  const done = new Promise((r) => p.child.on('exit', r));
  p.child.kill('SIGTERM');
  const t = setTimeout(() => p.child.kill('SIGKILL'), scaled(3000));
  await done;
  clearTimeout(t);
}

// Runs named async test functions in order, reporting each; exits non-zero on failure.
export async function runTests(tests) {
  let failed = 0;
  for (const [name, fn] of Object.entries(tests)) {
    const t0 = Date.now();
    try {
      await fn();
      console.log(`ok   ${name} (${Date.now() - t0} ms)`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${name}: ${e.stack || e}`);
    }
  }
  if (failed) { console.log(`${failed} test(s) failed`); process.exit(1); }
}
