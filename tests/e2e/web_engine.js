// web_engine.js — browser test of the engine picker and the approval dialog
// (Playwright driving Debian's Chromium): bind a new session to the fixture
// agent built on the official ACP SDK, see its config options under the
// agent's own names, send a message, answer its permission request in the
// dialog with the agent's label, see the reply and the engine lock, then fork
// the session with the Fork button and land in the bound copy.
// Usage: node web_engine.js <cdsh> <screenshot.png>
// Exits 77 (skipped) when Chromium, playwright-core or the SDK is missing.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { playwright, start, launch, run, scaled } = require('./web_lib.js');

const [cdsh, shot] = process.argv.slice(2);
const AGENT = path.join(__dirname, '..', 'acp-fixture-agent.mjs');

const chromium = playwright();
if (!fs.existsSync(path.join(__dirname, '..', 'node_modules', '@agentclientprotocol', 'sdk'))) {
  console.log('skipped: @agentclientprotocol/sdk is not installed');
  process.exit(77);
}

function check(cond, msg) {
  if (!cond) throw new Error(`check failed: ${msg}`);
}

async function main() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'cdsh-e2e-engine-'));
  fs.mkdirSync(path.join(home, 'multi-acp'));
  fs.writeFileSync(path.join(home, 'multi-acp', 'engines.json'), JSON.stringify({
    version: 1, engines: [{ id: 'sdk', label: 'SDK fixture', command: process.execPath, args: [AGENT] }] }));
  const env = { CDSH_HOME: home, DEEPSEEK_API_KEY: '', CDSH_API_KEY: '' };
  const { child: web, info } = await start(cdsh, ['web', '--no-open', '--json', '--port', '0'], env, home);
  const { browser, close } = await launch(chromium, { width: 1280, height: 800 });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(info.url);
    await page.click('[data-testid=new-session]');
    await page.waitForSelector('[data-testid=engine-bar]:not([hidden])');
    const labels = await page.$$eval('[data-testid=engine-select] option', (os) => os.map((o) => o.textContent));
    check(labels.includes('SDK fixture'), `the picker lists the engine: ${labels.join(', ')}`);
    // No model is configured: an unbound session says so...
    await page.waitForSelector('[data-testid=banner]:not([hidden])');
    check((await page.textContent('[data-testid=banner]')).includes('No model is configured'),
      'an unbound session without a model shows the no-model banner');
    await page.selectOption('[data-testid=engine-select]', 'sdk');
    // Opened before the first message: options under the agent's own names.
    await page.waitForSelector('[data-testid=engine-option]', { timeout: scaled(20000) });
    check((await page.textContent('[data-testid=engine-config]')).includes('Session Mode'),
      'config option named as the agent names it');
    // ...a session bound to an engine needs none: the banner names the engine.
    await page.waitForFunction(() => document.querySelector('[data-testid=banner]').textContent
      .includes('This session talks to the engine: SDK fixture'), null, { timeout: scaled(10000) });
    check(!(await page.textContent('[data-testid=banner]')).includes('No model'),
      'no no-model banner on an engine session');

    await page.fill('[data-testid=input]', 'permission');
    await page.press('[data-testid=input]', 'Enter');
    const dialog = page.locator('[data-testid=approval-dialog]');
    await dialog.waitFor({ state: 'visible', timeout: scaled(20000) });
    check((await page.textContent('[data-testid=approval-title]')) === 'rm -rf build', 'dialog title');
    const options = await page.$$eval('[data-testid=approval-option]', (bs) => bs.map((b) => b.textContent));
    check(options.join('|') === 'Allow once|Reject', `the agent's labels: ${options.join('|')}`);
    await page.screenshot({ path: shot, fullPage: true });
    await page.click('[data-testid=approval-option] >> text=Allow once');
    await dialog.waitFor({ state: 'hidden' });
    await page.waitForFunction(() => [...document.querySelectorAll('.msg.assistant:not(.streaming) .text')]
      .some((e) => e.textContent === 'permission: selected/once'), null, { timeout: scaled(20000) });
    await page.waitForSelector('[data-testid=engine-lock]:not([hidden])', { timeout: scaled(10000) });
    check(await page.$eval('[data-testid=engine-select]', (s) => s.disabled), 'the picker is locked');

    // The transcript survives a reload (it is the session store's).
    await page.reload();
    await page.waitForFunction(() => document.querySelector('[data-testid=messages]').textContent
      .includes('permission: selected/once'), null, { timeout: scaled(10000) });
    await page.waitForFunction(() => document.querySelector('[data-testid=banner]').textContent
      .includes('SDK fixture'), null, { timeout: scaled(10000) });
    check(!(await page.textContent('[data-testid=banner]')).includes('No model'),
      'the engine banner after a reload');

    // Fork: the page switches to the copy, which keeps the transcript and the
    // engine binding; the participant's note says why the agent starts afresh
    // (this SDK fixture does not advertise session/fork).
    const parent = await page.evaluate(() => location.hash.slice(1));
    await page.click('[data-testid=fork]');
    await page.waitForFunction((p) => location.hash.length > 1 && location.hash.slice(1) !== p,
      parent, { timeout: scaled(10000) });
    const child = await page.evaluate(() => location.hash.slice(1));
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=notice]')]
      .some((n) => n.textContent.includes('does not advertise session/fork')), null, { timeout: scaled(10000) });
    const notices = await page.$$eval('[data-testid=notice]', (ns) => ns.map((n) => n.textContent));
    check(notices.includes(`Forked from ${parent}`), `the fork names its parent: ${notices.join(' | ')}`);
    check(notices.some((n) => n.startsWith('bound to engine sdk')), `the binding note: ${notices.join(' | ')}`);
    check((await page.textContent('[data-testid=messages]')).includes('permission: selected/once'),
      'the fork shows the copied transcript');
    check((await page.textContent('[data-testid=chat-title]')).includes(`(fork) · ${child}`),
      'the title names the fork');
    await page.waitForFunction(() => document.querySelector('[data-testid=banner]').textContent
      .includes('SDK fixture'), null, { timeout: scaled(10000) });
    await page.waitForSelector('[data-testid=engine-lock]:not([hidden])', { timeout: scaled(10000) });
    check((await page.$$('[data-testid=session]')).length === 2, 'both sessions are listed');
    check(await page.$eval('[data-testid=session].active', (li) => li.dataset.id) === child,
      'the fork is the active session');
    // The Chinese label is a key of its own.
    await page.click('[data-testid=lang]');
    check((await page.textContent('[data-testid=fork]')) === '分叉', 'the Chinese Fork label');
    await page.click('[data-testid=lang]');
    check(errors.length === 0, `no page errors: ${errors.join('; ')}`);
    console.log(`ok: engine bound, approval answered, reply seen, forked; screenshot ${shot}`);
  } finally {
    await close();
    // Also on a failure, or the test waits for its timeout.
    web.kill('SIGTERM');
    await new Promise((resolve) => web.once('exit', resolve));
  }
  fs.rmSync(home, { recursive: true, force: true });
}

run(main);
