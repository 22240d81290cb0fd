// web_chat.js — browser test of `cdsh web` (Playwright driving Debian's
// Chromium): open the printed URL, create a session, send a message, see the
// fake model's streamed reply, folded reasoning and a tool-call card; check
// the zh switch and that the API refuses requests without the token.
// Usage: node web_chat.js <cdsh> <fake_model> <screenshot.png>
// Exits 77 (skipped) when Chromium or playwright-core is missing.
'use strict';
const { playwright, startWeb, stopWeb, launch, run, scaled } = require('./web_lib.js');

const [cdsh, fakeModel, shot] = process.argv.slice(2);
const chromium = playwright();

function check(cond, msg) {
  if (!cond) throw new Error(`check failed: ${msg}`);
}

async function main() {
  const served = await startWeb(cdsh, fakeModel, [
    { match: { last_user_contains: 'hello' }, delay_ms: 60,
      chunks: [{ reasoning: 'The user greets me; let me look for a skill.' },
               { tool_call: { index: 0, id: 'call_1', name: 'skill', arguments: '{"name":' } },
               { tool_call: { index: 0, arguments: '"no-such-skill"}' } }],
      finish_reason: 'tool_calls' },
    { delay_ms: 80, chunks: [{ text: 'Hello from ' }, { text: 'the fake ' }, { text: 'model!' }],
      finish_reason: 'stop' },
  ]);
  const { web } = served;
  const url = web.info.url;
  const base = `http://127.0.0.1:${web.info.port}`;

  // Without the token the API answers 401 with a JSON error.
  const r = await fetch(`${base}/api/sessions`);
  check(r.status === 401, `no token gives 401, got ${r.status}`);
  check((await r.json()).error.code === 'UNAUTHORIZED', 'JSON error body');

  const { browser, close } = await launch(chromium, { width: 1280, height: 800 });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(url);
    await page.waitForSelector('[data-testid=model-status] .dot');
    check((await page.textContent('[data-testid=model-status]')).includes('fake-model'),
      'the model status names the model');
    // the page drops the token once it has mounted everything
    await page.waitForFunction(() => !location.href.includes('token='));
    check(!page.url().includes('token='), 'the token left the address bar');

    await page.click('[data-testid=new-session]');
    await page.waitForSelector('[data-testid=session].active');
    await page.fill('[data-testid=input]', 'hello there');
    await page.press('[data-testid=input]', 'Enter');

    // The tool-call card appears with the call's name and its (failed) result.
    const card = page.locator('[data-testid=tool-card]');
    await card.waitFor({ timeout: scaled(15000) });
    check((await card.locator('.name').textContent()) === 'skill', 'card names the tool');
    await page.waitForSelector('[data-testid=tool-card].error', { timeout: scaled(15000) });
    // The streamed reply ends as the final text; reasoning is folded away.
    await page.waitForFunction(() => [...document.querySelectorAll('.msg.assistant:not(.streaming) .text')]
      .some((e) => e.textContent === 'Hello from the fake model!'), null, { timeout: scaled(15000) });
    const folded = await page.$eval('details.reasoning', (d) => !d.open);
    check(folded, 'reasoning is folded');
    await page.waitForSelector('[data-testid=stop]', { state: 'hidden' });
    await page.screenshot({ path: shot, fullPage: true });

    // The session survives a reload with the same content.
    await page.reload();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=tool-card]').length === 1);
    check((await page.textContent('[data-testid=messages]')).includes('Hello from the fake model!'),
      'history after reload');

    await page.click('[data-testid=lang]');
    check((await page.textContent('[data-testid=new-session]')) === '新对话', 'zh switch');
    check(errors.length === 0, `no page errors: ${errors.join('; ')}`);
    console.log(`ok: streamed reply and tool card seen; screenshot ${shot}`);
  } finally {
    await close();
  }
  stopWeb(served);
}

run(main);
