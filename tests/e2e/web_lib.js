// web_lib.js — what the browser tests of `cdsh web` share: Playwright and
// Debian's Chromium (exit 77, skipped, when either is missing), child
// processes that print one JSON line when ready, a temp home with the fake
// model and `cdsh web`, and a fresh headless browser profile. Budgets follow
// CDSH_TEST_TIMEOUT_SCALE (tests/support/timing.cjs); a failure prints the
// stderr tail of every child it started. Also: a PNG character card made
// here, and the zh view's Latin words (names and code excepted).
'use strict';
const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const zlib = require('node:zlib');
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

// A PNG character card: a w×h picture (a vertical two-colour gradient) with
// the card JSON in a tEXt "chara" chunk, as SillyTavern writes it.
function pngCard(card, w = 60, h = 80) {
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(td) >>> 0);
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8; ihdr[9] = 2; // 8-bit RGB
  const rows = [];
  for (let y = 0; y < h; y++) {
    const row = Buffer.alloc(1 + w * 3);
    for (let x = 0; x < w; x++) {
      row[1 + x * 3] = 60 + Math.round((y / h) * 120);
      row[2 + x * 3] = 110 + Math.round((x / w) * 60);
      row[3 + x * 3] = 170;
    }
    rows.push(row);
  }
  const text = Buffer.concat([Buffer.from('chara\0', 'latin1'),
    Buffer.from(Buffer.from(JSON.stringify(card), 'utf8').toString('base64'), 'latin1')]);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr), chunk('tEXt', text), chunk('IDAT', zlib.deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0))]);
}

// Latin words in the page's own text (zh view): every visible text node and
// the placeholder / title / aria-label of visible elements, except names
// (the cards', the persona's), code (code, pre, keys, tool names, ids), the
// story's own text (messages, card fields) and the model's id and URLs.
async function latinWords(page, allow) {
  return page.evaluate((allowed) => {
    const skip = 'code, pre, script, style, .msg .text, .rp-prose, .rp-summary, .rp-keys, .rp-comment, ' +
      '.rp-name, .rp-by, [data-testid=rp-detail-name], .rp-tag, .tool-card .name, .model-status, .sid, ' +
      '.tavern-log, .tavern-inert, .hits .body, .story-text, .chat-title, .sessions .title, .cause, .xq-cause-text, .brand, ' +
      '.card-body li, ' + // a tool card's results (paths, snippets: the tool's data)
      'option, textarea, input, [data-i18n-skip]';
    const bad = new Set();
    const strip = (text) => {
      let t = text.replace(/https?:\/\/\S+/g, '').replace(/\{"[^}]*\}/g, '').replace(/\b[A-Z][A-Z0-9_]{2,}\b/g, '');
      for (const a of allowed) t = t.split(a).join('');
      return t;
    };
    const visible = (e) => !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length) &&
      getComputedStyle(e).visibility !== 'hidden';
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const e = n.parentElement;
      if (!e || e.closest(skip) || !visible(e)) continue;
      // a tool card's "<label>: <the model's query>": only the label is the page's
      const own = e.classList.contains('card-query') ? n.textContent.replace(/[:：].*$/s, '') : n.textContent;
      const m = strip(own).match(/[A-Za-z]{2,}/g);
      if (m) bad.add(`${e.tagName.toLowerCase()}${e.className ? '.' + String(e.className).split(' ')[0] : ''}: ${n.textContent.trim().slice(0, 60)}`);
    }
    for (const e of document.querySelectorAll('[placeholder], [title], [aria-label]')) {
      if (e.closest(skip.replace(', input', '').replace(', textarea', '')) || !visible(e)) continue;
      for (const a of ['placeholder', 'title', 'aria-label']) {
        const v = e.getAttribute(a);
        if (v && strip(v.replace('Shift', '')).match(/[A-Za-z]{2,}/)) bad.add(`${e.tagName.toLowerCase()}[${a}]: ${v.slice(0, 60)}`);
      }
    }
    return [...bad];
  }, allow);
}

module.exports = { playwright, start, startWeb, stopWeb, launch, run, scaled, pngCard, latinWords };
