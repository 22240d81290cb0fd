// web_lib.js — what the browser tests of `cdsh web` share: Playwright and
// Debian's Chromium (exit 77, skipped, when either is missing), child
// processes that print one JSON line when ready, a temp home with the fake
// model and `cdsh web`, and a fresh headless browser profile. Budgets follow
// CDSH_TEST_TIMEOUT_SCALE (tests/support/timing.cjs); a failure prints the
// stderr tail of every child it started.
'use strict';
const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { scaled, within, tail } = require('../support/timing.cjs');

const CHROMIUM = '/usr/bin/chromium';

function skip(why) {
  console.log(`skipped: ${why}`);
  process.exit(77);
}

function playwright() {
  let chromium;
  try {
    ({ chromium } = require(path.join(__dirname, '..', 'node_modules', 'playwright-core')));
  } catch {
    skip('playwright-core is not installed (run scripts/bootstrap.sh)');
  }
  if (!fs.existsSync(CHROMIUM)) skip(`${CHROMIUM} is missing (install Debian's chromium: scripts/bootstrap.sh)`);
  return chromium;
}

// Starts cmd (env added to ours; cwd optional); resolves to {child, info}
// once it printed its JSON line (within 30 s, scaled). Its stderr goes on to
// ours and is kept for failure messages.
const children = [];
function start(cmd, args, env, cwd) {
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
  const entry = { name: path.basename(cmd), child, stderr: '' };
  children.push(entry);
  child.stderr.on('data', (d) => {
    process.stderr.write(d);
    entry.stderr = tail(entry.stderr + d, 8000);
  });
  const ready = new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: child.stdout });
    rl.once('line', (line) => resolve({ child, info: JSON.parse(line) }));
    child.once('exit', (code) => reject(new Error(`${cmd} exited with ${code} before it was ready\n--- stderr tail ---\n${tail(entry.stderr)}`)));
  });
  return within(`starting ${path.basename(cmd)} ${args.join(' ')} (its ready line)`, 30000, ready, () => entry.stderr);
}

// A temp CDSH_HOME, the fake model playing `steps`, the given plugins
// enabled and `cdsh web` on a free port: {home, env, fake, web}.
async function startWeb(cdsh, fakeModel, steps, { plugins = [], prefix = 'cdsh-e2e-' } = {}) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const script = path.join(home, 'script.json');
  fs.writeFileSync(script, JSON.stringify(steps));
  const fake = await start(fakeModel, ['--script', script], {});
  const env = { CDSH_HOME: home, CDSH_BASE_URL: fake.info.url, CDSH_MODEL: 'fake-model',
                DEEPSEEK_API_KEY: '', CDSH_API_KEY: '' };
  for (const name of plugins) execFileSync(cdsh, ['config', 'enable', name], { env: { ...process.env, ...env } });
  const web = await start(cdsh, ['web', '--no-open', '--json', '--port', '0'], env);
  return { home, env, fake, web };
}

// Stops what startWeb started and removes the home.
function stopWeb({ web, fake, home }) {
  web.child.kill('SIGTERM');
  fake.child.stdin.end();
  fs.rmSync(home, { recursive: true, force: true });
}

// A fresh profile directory (Playwright passes it as --user-data-dir).
async function launch(chromium, viewport) {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cdsh-chromium-'));
  const browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport,
    locale: 'en-US',
    timeout: scaled(30000),
  });
  // Playwright's waits name the step and the time they waited; the scale
  // stretches every one of them (explicit budgets use scaled() too).
  browser.setDefaultTimeout(scaled(30000));
  browser.setDefaultNavigationTimeout(scaled(30000));
  return { browser, close: async () => { await browser.close(); fs.rmSync(userDataDir, { recursive: true, force: true }); } };
}

// Runs main; on failure prints the error and kills every started child.
function run(main) {
  main().then(() => process.exit(0), (e) => {
    console.error(e.stack || e.message);
    for (const c of children) {
      console.error(`--- stderr tail of ${c.name} ---\n${tail(c.stderr) || '(empty)'}`);
      c.child.kill('SIGKILL');
    }
    process.exit(1);
  });
}

module.exports = { playwright, start, startWeb, stopWeb, launch, run, scaled };
