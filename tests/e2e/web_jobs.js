// web_jobs.js — browser test of the background jobs panel (web/jobs.js) and
// the render intents of tool cards (web/tool_cards.js), Playwright driving
// Debian's Chromium against `cdsh web`: start "Probe every engine" from the
// panel, see job acp-probe-1 run to completed with a full progress bar and
// its summary; then bind a session to the C fixture agent, send
// "all-updates" and see its shell call drawn as a terminal card.
// Usage: node web_jobs.js <cdsh> <acp fixture agent> <screenshot.png>
// Exits 77 (skipped) when Chromium or playwright-core is missing.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { playwright, start, launch, run, scaled } = require('./web_lib.js');

const [cdsh, agent, shot] = process.argv.slice(2);
const chromium = playwright();

function check(cond, msg) {
  if (!cond) throw new Error(`check failed: ${msg}`);
}

async function main() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'cdsh-e2e-jobs-'));
  fs.mkdirSync(path.join(home, 'multi-acp'));
  fs.writeFileSync(path.join(home, 'multi-acp', 'engines.json'), JSON.stringify({
    version: 1, engines: [{ id: 'fixture', label: 'C fixture', command: agent, args: [] }] }));
  const env = { CDSH_HOME: home, DEEPSEEK_API_KEY: '', CDSH_API_KEY: '' };
  const { child: web, info } = await start(cdsh, ['web', '--no-open', '--json', '--port', '0'], env, home);
  const { browser, close } = await launch(chromium, { width: 1280, height: 800 });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(info.url);
    await page.waitForSelector('[data-testid=jobs]:not([hidden])');
    check((await page.textContent('[data-testid=job-list]')).includes('No background jobs.'),
      'an empty list says so');
    // The acp plugin offers its starter; the job runs in the server.
    await page.click('[data-testid=job-start][data-kind=acp-probe]');
    const job = page.locator('[data-testid=job][data-id=acp-probe-1]');
    await job.waitFor({ timeout: scaled(20000) });
    await page.waitForSelector('[data-testid=job][data-id=acp-probe-1][data-status=completed]',
      { timeout: scaled(60000) });
    const bar = await page.$eval('[data-testid=job][data-id=acp-probe-1] [data-testid=job-progress]',
      (b) => ({ value: b.value, max: b.max }));
    check(bar.max > 0 && bar.value === bar.max, `a full progress bar: ${JSON.stringify(bar)}`);
    const text = await job.textContent();
    check(text.includes('probe every engine'), `the label: ${text}`);
    check(/engines: 1 ok, 0 failed, \d+ not installed/.test(text), `the summary: ${text}`);
    check(text.includes('completed'), `the status: ${text}`);
    check(!(await job.locator('[data-testid=job-kill]').count()), 'no Stop on an ended job');
    // In Chinese, the panel speaks Chinese.
    await page.click('[data-testid=lang]');
    await page.waitForFunction(() => document.querySelector('[data-testid=jobs] h4').textContent === '后台任务');
    check((await job.textContent()).includes('已完成'), 'the Chinese status');
    await page.click('[data-testid=lang]');

    // A tool card with a render intent: the fixture's shell call.
    await page.click('[data-testid=new-session]');
    await page.waitForSelector('[data-testid=engine-bar]:not([hidden])');
    await page.selectOption('[data-testid=engine-select]', 'fixture');
    await page.waitForFunction(() => document.querySelector('[data-testid=banner]').textContent
      .includes('C fixture'), null, { timeout: scaled(20000) });
    await page.fill('[data-testid=input]', 'all-updates');
    await page.press('[data-testid=input]', 'Enter');
    const term = page.locator('[data-testid=tool-card][data-card=terminal] [data-testid=card-terminal]');
    await term.waitFor({ state: 'attached', timeout: scaled(30000) });
    check((await term.textContent()) === 'a.txt b.txt', `the terminal output: ${await term.textContent()}`);
    check((await page.textContent('[data-testid=tool-card][data-card=terminal] .term-cmd')) === '$ ls',
      'the command line');
    // It survives a reload (the intent is in the session log).
    await page.reload();
    await page.locator('[data-testid=tool-card][data-card=terminal]').waitFor({ state: 'attached',
      timeout: scaled(20000) });
    await page.screenshot({ path: shot, fullPage: true });
    check(errors.length === 0, `no page errors: ${errors.join('; ')}`);
    console.log(`ok: job acp-probe-1 completed in the panel, terminal card drawn; screenshot ${shot}`);
  } finally {
    await close();
    web.kill('SIGTERM');
    await new Promise((resolve) => web.once('exit', resolve));
  }
  fs.rmSync(home, { recursive: true, force: true });
}

run(main);
