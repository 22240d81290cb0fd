// st_lib.mjs — runs SillyTavern 1.19.0's own browser code for differential
// tests: starts ST's server (tests/node_modules/sillytavern, listening on
// 127.0.0.1 only, its own config and data root), opens its page in Debian's
// headless Chromium through playwright-core with a seeded Math.random
// (mulberry32, the generator cdsh's tavern uses: src/plugins/tavern/seed.c)
// and a fixed clock, waits for ST's APP_READY and lets a test call into the
// page: `st.call(fn, arg)` runs `fn(arg, api)` in the page, where `api.imp`
// imports ST's modules (the same instances the app uses), `api.seed(n)`
// reseeds Math.random and `api.ready` is resolved. Requests that would leave
// 127.0.0.1 are aborted. Exits 77 (skipped) when node's playwright-core,
// Chromium or the sillytavern package is missing.
//
// The data root is kept between runs (ST compiles its frontend bundle with
// webpack into it once; that takes minutes under load) under
// $CDSH_ST_DATA or <tmp>/cdsh-st-1.19.0-<uid>; the user's data in it is
// reset on every start. A second process that finds it in use works on a
// fresh copy of the compiled bundle.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const { scaled, tail, within } = require('../support/timing.cjs');

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ST_DIR = path.join(HERE, '..', 'node_modules', 'sillytavern');
export const ST_VERSION = '1.19.0';
const CHROMIUM = process.env.CDSH_CHROMIUM || '/usr/bin/chromium';
// 2026-12-02T02:51:00Z: the clock every page sees (Date, performance stay fixed).
export const FIXED_TIME = Date.UTC(2026, 11, 2, 2, 51, 0);

export function skip(why) {
  console.log(`skipped: ${why}`);
  process.exit(77);
}

// playwright-core's chromium, or exit 77.
function playwright() {
  let mod;
  try {
    mod = require(path.join(HERE, '..', 'node_modules', 'playwright-core'));
  } catch {
    skip('playwright-core is not installed (tests/node_modules)');
  }
  if (!fs.existsSync(CHROMIUM)) skip(`${CHROMIUM} is missing (Debian's chromium)`);
  return mod.chromium;
}

function checkSillyTavern() {
  let pkg;
  try {
    pkg = JSON.parse(fs.readFileSync(path.join(ST_DIR, 'package.json'), 'utf8'));
  } catch {
    skip(`sillytavern ${ST_VERSION} is not installed (tests/node_modules/sillytavern)`);
  }
  if (pkg.version !== ST_VERSION) throw new Error(`tests/node_modules/sillytavern is ${pkg.version}, the differential needs ${ST_VERSION}`);
}

// A free TCP port on 127.0.0.1 (closed again; ST binds it right after).
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

// Takes the shared data root (a lock directory holding our pid; a dead
// owner's lock is taken over) or, when a live process holds it, makes a
// private root seeded with the shared compiled bundle. {root, release}.
function takeDataRoot() {
  const shared = process.env.CDSH_ST_DATA || path.join(os.tmpdir(), `cdsh-st-${ST_VERSION}-${process.getuid()}`);
  fs.mkdirSync(path.dirname(shared), { recursive: true });
  const lock = `${shared}.lock`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.mkdirSync(lock);
      fs.writeFileSync(path.join(lock, 'pid'), String(process.pid));
      fs.mkdirSync(shared, { recursive: true });
      return { root: shared, release: () => fs.rmSync(lock, { recursive: true, force: true }) };
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
      let owner = 0;
      try {
        owner = Number(fs.readFileSync(path.join(lock, 'pid'), 'utf8'));
      } catch { /* being written: treat as live */ owner = -1; }
      if (owner > 0 && !pidAlive(owner)) {
        fs.rmSync(lock, { recursive: true, force: true });
        continue;
      }
      break;
    }
  }
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cdsh-st-private-'));
  const bundle = path.join(shared, '_webpack');
  if (fs.existsSync(bundle)) fs.cpSync(bundle, path.join(root, '_webpack'), { recursive: true });
  return { root, release: () => fs.rmSync(root, { recursive: true, force: true }) };
}

// ST's config for a test: loopback only, no browser launch, no downloads,
// no extensions or auto-updates, quiet logs.
const CONFIG = `# written by tests/e2e/st_lib.mjs
listen: false
browserLaunch:
  enabled: false
whitelistMode: true
whitelist:
  - 127.0.0.1
enableDownloadableTokenizers: false
skipContentCheck: false
extensions:
  enabled: false
  autoUpdate: false
  models:
    autoDownload: false
enableServerPlugins: false
logging:
  minLogLevel: 2
`;

// Mulberry32 as in src/plugins/tavern/seed.c, installed before any page
// script runs. window.__cdshSeed(n) reseeds; __cdshRandomCalls counts draws.
function pageInit(seed) {
  let state = seed >>> 0;
  window.__cdshRandomCalls = 0;
  window.__cdshSeed = (n) => { state = Number(n) >>> 0; window.__cdshRandomCalls = 0; };
  Math.random = function random() {
    window.__cdshRandomCalls++;
    let t = (state = (state + 0x6D2B79F5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const children = new Set();
function killChildren() {
  for (const c of children) {
    try { c.kill('SIGKILL'); } catch { /* gone */ }
  }
}
process.once('exit', killChildren);
for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => { killChildren(); process.exit(130); });

// Starts ST's server; resolves to {url, child, log(), stop()}.
async function startServer({ root }) {
  const cfgDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cdsh-st-config-'));
  const config = path.join(cfgDir, 'config.yaml');
  fs.writeFileSync(config, CONFIG);
  // The user's data is reset on every start; the compiled bundle stays.
  for (const name of fs.readdirSync(root)) {
    if (name !== '_webpack') fs.rmSync(path.join(root, name), { recursive: true, force: true });
  }
  const port = await freePort();
  let log = '';
  const child = spawn(process.execPath, [path.join(ST_DIR, 'server.js'), '--configPath', config,
    '--dataRoot', root, '--port', String(port), '--listen', 'false', '--browserLaunchEnabled', 'false'],
  { cwd: cfgDir, env: { ...process.env, NODE_ENV: 'production', FORCE_COLOR: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  const keep = (d) => { log = tail(log + d, 20000); };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise((_, reject) => child.once('exit', (code) => reject(new Error(`SillyTavern's server exited with ${code}\n--- its log ---\n${tail(log)}`))));
  const up = (async () => {
    for (;;) {
      try {
        const res = await fetch(`${url}/`);
        if (res.ok) return;
      } catch { /* not yet */ }
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  // The first start compiles ST's frontend bundle (webpack, production).
  await within('starting SillyTavern (its first start compiles the frontend bundle)', 600000, Promise.race([up, exited]), () => log);
  exited.catch(() => {});
  const stop = async () => {
    children.delete(child);
    if (child.exitCode === null) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), scaled(5000));
      await gone;
      clearTimeout(t);
    }
    fs.rmSync(cfgDir, { recursive: true, force: true });
  };
  return { url, child, log: () => log, stop };
}

/**
 * Starts SillyTavern and its page. Options: seed (Math.random's first seed,
 * default 0), time (the fixed clock, ms since the epoch; default FIXED_TIME),
 * timezone (default UTC), locale (default en-US), verbose (forward the page's
 * console errors to stderr).
 * Returns {url, page, call(fn, arg), seed(n), randomCalls(), log(), close()}.
 * `call(fn, arg)` evaluates `fn(arg, api)` in the page (fn must not close over
 * node variables); api = {imp(path) -> ST module ('/scripts/world-info.js'),
 * seed(n), context() -> SillyTavern.getContext()}.
 */
export async function launchST({ seed = 0, time = FIXED_TIME, timezone = 'UTC', locale = 'en-US', verbose = Boolean(process.env.CDSH_ST_VERBOSE) } = {}) {
  checkSillyTavern();
  const chromium = playwright();
  const data = process.env.CDSH_ST_URL ? { root: null, release: () => {} } : takeDataRoot();
  let server = null;
  let browser = null;
  let userDataDir = null;
  const close = async () => {
    if (browser) await browser.close().catch(() => {});
    if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
    if (server) await server.stop();
    data.release();
  };
  const t0 = Date.now();
  const note = (what) => { if (verbose) process.stderr.write(`[st] ${what} after ${Date.now() - t0} ms\n`); };
  try {
    // CDSH_ST_URL: attach to a SillyTavern already running on 127.0.0.1
    // (debugging; its first start is the slow part).
    const attach = process.env.CDSH_ST_URL;
    if (attach) {
      if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(attach)) throw new Error(`CDSH_ST_URL must be http://127.0.0.1:PORT, not ${attach}`);
      server = { url: attach, log: () => '(attached: no server log)', stop: async () => {} };
    } else {
      server = await startServer(data);
    }
    note('server up');
    userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cdsh-st-chromium-'));
    browser = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1280, height: 900 },
      locale,
      timezoneId: timezone,
      timeout: scaled(60000),
    });
    browser.setDefaultTimeout(scaled(120000));
    browser.setDefaultNavigationTimeout(scaled(120000));
    // Nothing leaves 127.0.0.1.
    await browser.route((u) => !u.href.startsWith(`${server.url}/`) && !u.href.startsWith('data:') && !u.href.startsWith('blob:'),
      (route) => route.abort('blockedbyclient'));
    // Endpoints whose server side would call out to the internet (the AI
    // Horde status and model list) answer "unavailable" here instead.
    await browser.route(`${server.url}/api/horde/status`, (route) => route.fulfill({ json: { ok: false } }));
    await browser.route(`${server.url}/api/horde/text-models`, (route) => route.fulfill({ json: [] }));
    // A fresh user would get the onboarding popup (a persona name to type)
    // before APP_READY: its settings say the first run is over.
    await browser.route(`${server.url}/api/settings/get`, async (route) => {
      const res = await route.fetch();
      const body = await res.json();
      if (typeof body.settings === 'string') {
        const settings = JSON.parse(body.settings);
        settings.firstRun = false;
        body.settings = JSON.stringify(settings);
      }
      await route.fulfill({ response: res, json: body });
    });
    await browser.addInitScript(pageInit, seed >>> 0);
    const page = browser.pages()[0] || await browser.newPage();
    await page.clock.setFixedTime(time);
    const pageErrors = [];
    page.on('pageerror', (e) => { pageErrors.push(String(e)); if (verbose) process.stderr.write(`[st page] ${e}\n`); });
    if (verbose) page.on('console', (m) => { if (m.type() === 'error') process.stderr.write(`[st console] ${m.text()}\n`); });
    page.on('response', (r) => {
      if (r.status() >= 500) {
        pageErrors.push(`HTTP ${r.status()} ${r.request().method()} ${r.url()}`);
        if (verbose) process.stderr.write(`[st http] ${r.status()} ${r.url()}\n`);
      }
    });
    await page.goto(`${server.url}/`);
    note('page loaded');
    // APP_READY is an auto-fired event: a late listener still hears it.
    await within('SillyTavern page: APP_READY', 180000, page.evaluate(async () => {
      const { eventSource, event_types } = await import('/scripts/events.js');
      await new Promise((resolve) => eventSource.on(event_types.APP_READY, resolve));
    }), () => `${server.log()}\n--- page errors ---\n${pageErrors.join('\n')}`);
    await page.evaluate(() => {
      window.__cdshApi = {
        imp: (p) => import(p),
        seed: (n) => window.__cdshSeed(n),
        context: () => window.SillyTavern.getContext(),
      };
      window.__cdshCall = (src, arg) => (0, eval)(`(${src})`)(arg, window.__cdshApi);
    });
    const call = (fn, arg) => page.evaluate(([src, a]) => window.__cdshCall(src, a), [fn.toString(), arg]);
    return {
      url: server.url,
      page,
      call,
      seed: (n) => page.evaluate((v) => window.__cdshSeed(v), n >>> 0),
      randomCalls: () => page.evaluate(() => window.__cdshRandomCalls),
      pageErrors,
      log: server.log,
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}

// Runs main(); prints the error on failure and exits 1 (0 on success).
export function run(main) {
  main().then(() => process.exit(0), (e) => {
    console.error(e && (e.stack || e.message));
    killChildren();
    process.exit(1);
  });
}
