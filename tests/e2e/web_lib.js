// web_lib.js — what the browser tests of `cdsh web` share: Playwright and
// Debian's Chromium (exit 77, skipped, when either is missing), child
// processes that print one JSON line when ready, and a fresh headless
// browser profile.
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

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
// once it printed its JSON line.
const children = [];
function start(cmd, args, env, cwd) {
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, cwd, stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: child.stdout });
    rl.once('line', (line) => resolve({ child, info: JSON.parse(line) }));
    child.once('exit', (code) => reject(new Error(`${cmd} exited with ${code}`)));
  });
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
  });
  return { browser, close: async () => { await browser.close(); fs.rmSync(userDataDir, { recursive: true, force: true }); } };
}

// Runs main; on failure prints the error and kills every started child.
function run(main) {
  main().then(() => process.exit(0), (e) => {
    console.error(e.stack || e.message);
    for (const c of children) c.kill('SIGKILL');
    process.exit(1);
  });
}

module.exports = { playwright, start, launch, run };
