// web_story.js — browser test of the role-play chat as a story (issue 20):
// a card and a persona bound to a session (the tavern is on by default), the
// greeting as the first message under the character's name, three turns
// with the fake model — *actions* and "speech" rendered, the model's HTML
// shown as text, the tavern's same-turn notice as a chip (never a user
// bubble), tool calls folded to one line — then both languages at 1400×900,
// 1280×720 and 414 px: screenshots in the build directory, no horizontal
// overflow, no Latin words in the zh view's own strings, both dictionaries
// complete, no console errors.
// Usage: node web_story.js <cdsh> <fake_model> <card.json> <shot-dir>
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { playwright, startWeb, stopWeb, launch, run, scaled } = require('./web_lib.js');

const [cdsh, fakeModel, sampleCard, shotDir] = process.argv.slice(2);
const chromium = playwright();

function check(cond, msg) {
  if (!cond) throw new Error(`check failed: ${msg}`);
  console.log(`ok   ${msg}`);
}

const call = (id, name, args) => ({
  tool_calls: [{ index: 0, id, name, arguments: JSON.stringify(args) }], finish_reason: 'tool_calls' });
const say = (...chunks) => ({ delay_ms: 30, chunks: chunks.map((text) => ({ text })), finish_reason: 'stop' });
const SCRIPT = [
  call('c1', 'tavern_memory_write', { body: 'The traveller woke in the glade.' }),
  say('*Seraphina smiles.* ', '"You are safe here," she says.'),
  say('She points **north**: the path to Eldoria.'),
  say('<img src=x onerror="alert(1)"><b>not bold</b> — `code`'),
  { status: 400, error: { message: "This model's maximum context length is 8192 tokens, your messages resulted in 9000 tokens." } },
  say('A new variant of the third reply.'),   // ↻ on turn 3 (a child session)
  say('The river lies east.'),                // ✎ of turn 2's message, in place
];

const SIZES = [{ name: '1400x900', width: 1400, height: 900 }, { name: '1280x720', width: 1280, height: 720 },
  { name: '414', width: 414, height: 860 }];

async function main() {
  const served = await startWeb(cdsh, fakeModel, SCRIPT, { prefix: 'cdsh-e2e-story-' });
  const url = served.web.info.url;
  const { browser, close } = await launch(chromium, { width: 1400, height: 900 });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    await page.goto(url);
    await page.waitForFunction(() => !location.href.includes('token='));
    await page.waitForSelector('.panel[data-plugin=tavern] nav.tavern-tabs');
    const rpc = (method, payload) => page.evaluate(async ([m, p]) => {
      const r = await fetch(`/rpc/tavern/${m}`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ type: 'client-request', rpcId: '1', method: m, payload: p }) });
      const j = await r.json();
      if (!j.result.ok) throw new Error(`${m}: ${j.result.error.message}`);
      return j.result.value;
    }, [method, payload]);

    // ---- a story: card, persona, session, binding ------------------------------------
    const fileBase64 = fs.readFileSync(sampleCard).toString('base64');
    const card = await rpc('importCharacter', { fileBase64, book: 'import' });
    const cardId = card.cardId || card.id;
    const persona = await rpc('savePersona', { name: 'Aldric', description: 'A tired traveller.' });
    await page.click('[data-testid=new-session]');
    await page.waitForSelector('[data-testid=session].active');
    const sid = await page.getAttribute('[data-testid=session].active', 'data-id');
    check(await page.isVisible('.empty') && (await page.textContent('.empty')).includes('No messages yet'),
      'an open empty session says so (not "Pick a session")');
    await rpc('setSessionBinding', { sessionId: sid, cardId, personaId: persona.id });
    await page.reload();
    const opening = page.locator('[data-testid=opening]');
    await opening.waitFor();
    check(await page.$eval('[data-testid=messages] > :first-child', (e) => !!e.querySelector('[data-testid=opening]')),
      'the greeting is the first message');
    check((await opening.locator('.who').textContent()) === 'Seraphina', 'the greeting is signed by the character');

    // ---- three turns -----------------------------------------------------------------------
    const idle = () => page.waitForSelector('[data-testid=stop]', { state: 'hidden', timeout: scaled(20000) });
    const turn = async (text, n) => {
      await page.fill('[data-testid=input]', text);
      await page.press('[data-testid=input]', 'Enter');
      await page.waitForFunction((k) => document.querySelectorAll('.msg.assistant:not(.streaming):not(.opening)').length >= k,
        n, { timeout: scaled(20000) });
      await idle();
    };
    await turn('Where am I?', 1);
    const reply = page.locator('.msg.assistant:not(.opening)').first();
    check((await reply.locator('.who').textContent()) === 'Seraphina', 'the reply is signed by the character');
    check((await reply.locator('em.action').textContent()) === 'Seraphina smiles.', '*actions* are italics');
    check((await reply.locator('q.speech').textContent()) === '"You are safe here,"', '"speech" is marked');
    check((await page.locator('.msg.user .who').first().textContent()) === 'Aldric', 'the person speaks as the persona');
    const chip = page.locator('[data-testid=tavern-note]');
    check((await chip.count()) === 1 && (await chip.textContent()) === 'The story noted a memory',
      'the same-turn write is a chip');
    check(!(await page.textContent('[data-testid=messages]')).includes('【Tavern'), 'no raw tavern notice in the transcript');
    check((await page.locator('.msg.user').count()) === 1, 'one user bubble for one message');
    const tool = page.locator('[data-testid=tool-card]');
    check(!(await tool.evaluate((d) => d.open)) && (await tool.boundingBox()).height < 48, 'the tool call is one folded line');
    await tool.locator('summary').click();
    check((await tool.locator('pre.result').textContent()).length > 0, 'the details open to the result');
    await tool.locator('summary').click();

    await turn('Which way?', 2);
    check((await page.locator('.msg.assistant strong').textContent()) === 'north', '**bold** renders');
    await turn('Show me.', 3);
    const last = page.locator('.msg.assistant:not(.opening)').nth(2);
    check((await last.locator('img, b').count()) === 0 && (await last.textContent()).includes('<b>not bold</b>'),
      'the model\'s HTML is shown as text');
    check((await last.locator('code').textContent()) === 'code', '`code` renders');

    // ---- a model failure says what happened and what to do -------------------------------
    await page.fill('[data-testid=input]', 'Tell me a very long story.');
    await page.press('[data-testid=input]', 'Enter');
    const failure = page.locator('.notice.model-error');
    await failure.waitFor({ timeout: scaled(20000) });
    await idle();
    const failText = await failure.textContent();
    check(failText.includes('The model could not answer') && failText.includes('HTTP 400') &&
      failText.includes('maximum context length is 8192'), 'the failure names the HTTP status and the endpoint\'s message');
    check(failText.includes('roll back a few turns'), 'the failure says what to do');

    // ---- the edit dialog opens on the original text ---------------------------------------
    const tv = page.locator('.panel[data-plugin=tavern]');
    await tv.locator('nav.tavern-tabs button', { hasText: 'Chat' }).click();
    await tv.locator('[data-testid=floor][data-turn="2"] button', { hasText: 'Edit my message' }).click();
    const dlg = page.locator('dialog.tavern-dialog');
    check((await dlg.locator('textarea').inputValue()) === 'Which way?', 'the edit shows the original message');
    check((await dlg.locator('h4').textContent()).includes('turn 2'), 'the edit names its turn');
    await dlg.locator('button', { hasText: 'Cancel' }).click();

    // ---- variants, inline edit, roll back: branches shown in place ------------------------
    const parent = sid;
    const active = () => page.getAttribute('[data-testid=session].active', 'data-id');
    const text = () => page.textContent('[data-testid=messages]');
    await page.locator('.msg.assistant[data-turn="3"] button[data-act=actRegenerate]').click();
    await page.waitForFunction((p) => document.querySelector('[data-testid=session].active')?.dataset.id !== p, parent);
    await page.waitForFunction(() => document.querySelector('[data-testid=messages]').textContent.includes('A new variant of the third reply.'),
      null, { timeout: scaled(20000) });
    await idle();
    const child = await active();
    check(!(await text()).includes('not bold'), 'the regenerated turn replaces the old reply in the view');
    check((await page.textContent('.msg.assistant[data-turn="3"] [data-testid=swipe-index]')) === '2/2', 'the reply shows ‹ 2/2 ›');
    const childRow = page.locator(`[data-testid=session][data-id="${child}"]`);
    check((await childRow.getAttribute('title')) === 'Seraphina — turn 3, variant 2' &&
      (await childRow.locator('.title').textContent()) === 'turn 3 · variant 2' && await childRow.evaluate((e) => e.classList.contains('branch')),
      'the branch has a readable name and sits under its parent');
    await page.locator('[data-testid=messages]').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('ArrowLeft');
    await page.waitForFunction((p) => document.querySelector('[data-testid=session].active')?.dataset.id === p, parent);
    await page.waitForSelector('.msg.assistant[data-turn="3"] [data-testid=swipe-index]');
    check((await page.textContent('.msg.assistant[data-turn="3"] [data-testid=swipe-index]')) === '1/2' &&
      (await text()).includes('not bold'), '← shows variant 1/2 again');
    await page.locator('.msg.user[data-turn="2"] button[data-act=actEdit]').click();
    const box = page.locator('[data-testid=edit-box]');
    check((await box.inputValue()) === 'Which way?', 'the inline edit holds the original text');
    await box.fill('Which way to the river?');
    await page.click('[data-testid=edit-save]');
    await page.waitForFunction(() => document.querySelector('[data-testid=messages]').textContent.includes('The river lies east.'),
      null, { timeout: scaled(20000) });
    await idle();
    check((await text()).includes('Which way to the river?') && !(await text()).includes('Which way?Seraphina'),
      'the edited message and its new reply are shown in place');
    await page.locator(`[data-testid=session][data-id="${parent}"]`).click();
    await page.waitForSelector('.msg.assistant[data-turn="1"] button[data-act=actRollback]');
    await page.locator('.msg.assistant[data-turn="1"] button[data-act=actRollback]').click();
    await page.waitForFunction((p) => document.querySelector('[data-testid=session].active')?.dataset.id !== p, parent);
    await page.waitForFunction(() => document.querySelectorAll('.msg.user').length === 1);
    check((await text()).includes('You are safe here') && !(await text()).includes('Which way'),
      'a branch from turn 1 holds the greeting and turn 1 only');
    check(await page.isVisible('[data-testid=rp-bar]'), 'continue / write my line sit above the composer');
    await page.screenshot({ path: path.join(shotDir, 'e2e-story-branches.png') });

    // ---- dictionaries ---------------------------------------------------------------------
    const missing = await page.evaluate(async () => {
      const page = (await import('/i18n.js')).dictionaries();
      const tavern = (await import('/tavern/i18n.js')).dict;
      const out = [];
      for (const [name, d] of [['page', page], ['tavern', tavern]]) {
        for (const k of Object.keys(d.en)) if (!(k in d.zh)) out.push(`${name} zh:${k}`);
        for (const k of Object.keys(d.zh)) if (!(k in d.en)) out.push(`${name} en:${k}`);
      }
      return out;
    });
    check(missing.length === 0, `both dictionaries have every key ${missing.join(', ')}`);

    // ---- sizes and languages ---------------------------------------------------------------
    for (const lang of ['en', 'zh']) {
      if (lang === 'zh') await page.click('[data-testid=lang]');
      for (const size of SIZES) {
        await page.setViewportSize({ width: size.width, height: size.height });
        await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
        const over = await page.evaluate(() => {
          const wide = [];
          if (document.documentElement.scrollWidth > innerWidth) wide.push(`page ${document.documentElement.scrollWidth}`);
          for (const e of document.querySelectorAll('.messages, .msg, .tool-card, .composer, .top, .chat-title, .narrow-tabs')) {
            const r = e.getBoundingClientRect();
            if (r.width && (r.right > innerWidth + 1 || r.left < -1)) wide.push(`${e.className} ${Math.round(r.left)}..${Math.round(r.right)}`);
          }
          return wide;
        });
        check(over.length === 0, `${lang} ${size.name}: nothing wider than the window ${over.join('; ')}`);
        await page.screenshot({ path: path.join(shotDir, `e2e-story-${lang}-${size.name}.png`) });
        if (size.width < 900) {
          check(await page.isVisible('[data-testid=narrow-tabs]'), `${lang} ${size.name}: the narrow window has tabs`);
          await page.click('.narrow-tabs button[data-view=panels]');
          check(await page.isVisible('.panel[data-plugin=tavern]'), `${lang} ${size.name}: the panels are a tab`);
          await page.screenshot({ path: path.join(shotDir, `e2e-story-${lang}-${size.name}-panels.png`) });
          await page.click('.narrow-tabs button[data-view=chat]');
          check(await page.isVisible('[data-testid=messages]'), `${lang} ${size.name}: back to the story`);
        }
      }
      await page.setViewportSize({ width: 1400, height: 900 });
    }
    // the page's own strings in zh: no Latin words (names, code, the model's text excepted)
    const latin = await page.evaluate(() => {
      const own = ['.narrow-tabs', '[data-testid=new-session]', '[data-testid=send]', '[data-testid=fork]',
        '.msg.user .who', '[data-testid=tavern-note]', '.panel > h3', '.tool-card .state', '.tool-card .label',
        '.notice.model-error strong', '.notice.model-error .fix', 'nav.tavern-tabs'];
      const bad = [];
      for (const sel of own) for (const e of document.querySelectorAll(sel)) {
        const text = e.textContent.replace('Aldric', '');
        if (/[A-Za-z]{2,}/.test(text)) bad.push(`${sel}: ${text.trim()}`);
      }
      const ph = document.querySelector('[data-testid=input]').placeholder.replace('Shift', '');
      if (/[A-Za-z]{2,}/.test(ph)) bad.push(`placeholder: ${ph}`);
      return bad;
    });
    check(latin.length === 0, `the zh view's own strings are Chinese ${latin.join('; ')}`);
    check((await page.textContent('[data-testid=tavern-note]')) === '故事记下了一条记忆', 'the chip is translated');
    check(errors.length === 0, `no console errors: ${errors.join('; ')}`);
  } finally {
    await close();
  }
  stopWeb(served);
}

run(main);
