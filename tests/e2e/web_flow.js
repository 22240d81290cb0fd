// web_flow.js — the whole role-play flow in one browser session, as a person
// would do it (issue 20, item 9): import a PNG card through the gallery
// (answering the embedded-book question), start the story from the card's
// page with an alternate greeting, three turns with the fake model, swipe
// the last reply (keyboard → makes a new variant, ← and ‹ › walk them, ›
// past the last makes another), roll back, edit inline (the original text in
// the box, user and reply), branch from turn 1 and go on there, read the
// branch tree in the sidebar (readable names, nested, counted), switch to
// Chinese, narrow the window to 414 px. At 1400×900, 1280×720 and 414 px in
// en and zh: screenshots (build/e2e-flow-*.png), nothing wider than the
// window; in zh no Latin text but names and code; no console errors.
// Usage: node web_flow.js <cdsh> <fake_model> <card.json> <shot-dir>
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { playwright, startWeb, stopWeb, launch, run, scaled, pngCard, latinWords } = require('./web_lib.js');

const [cdsh, fakeModel, sampleCard, shotDir] = process.argv.slice(2);
const chromium = playwright();

function check(cond, msg) {
  if (!cond) throw new Error(`check failed: ${msg}`);
  console.log(`ok   ${msg}`);
}

const say = (...chunks) => ({ delay_ms: 20, chunks: chunks.map((text) => ({ text })), finish_reason: 'stop' });
const A1 = '*Seraphina sets down her lantern.* "You found the glade."';
const A2 = '"The wolves came at dusk," she says.';
const A3 = '*She smiles.* "Rest now."';
const A3B = 'A second telling: the fire crackles.';
const A3C = 'A third telling: rain on the leaves.';
const A2E = 'The river lies east, past the mill.';
const B2 = 'A new road: the hills beyond the glade.';
// one model request per step, in the order the flow asks for them
const SCRIPT = [say(A1), say(A2), say(A3), say(A3B), say(A3C), say(A2E), say(B2)];
const SIZES = [{ name: '1400x900', width: 1400, height: 900 }, { name: '1280x720', width: 1280, height: 720 },
  { name: '414', width: 414, height: 860 }];

async function main() {
  const sera = JSON.parse(fs.readFileSync(sampleCard, 'utf8'));
  sera.data.tags = ['fantasy', 'healer'];
  sera.data.alternate_greetings = ['*A lantern swings in the dark.* "Who walks my woods at this hour, {{user}}?"'];

  const served = await startWeb(cdsh, fakeModel, SCRIPT, { prefix: 'cdsh-e2e-flow-' });
  const { browser, close } = await launch(chromium, { width: 1400, height: 900 });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    await page.goto(served.web.info.url);
    await page.waitForFunction(() => !location.href.includes('token='));
    await page.evaluate(() => localStorage.setItem('cdsh.lang', 'en'));
    // the one step not done through the page: a persona to speak as
    const persona = await page.evaluate(async () => {
      const r = await fetch('/rpc/tavern/savePersona', { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ type: 'client-request', rpcId: '1', method: 'savePersona',
          payload: { name: 'Aldric', description: 'A tired traveller.' } }) });
      return (await r.json()).result.value;
    });

    // ---- gallery: import with the book, the card's page, start a story -----------------
    await page.click('[data-testid=route-characters]');
    await page.waitForSelector('#rp-view[data-ready=gallery]');
    await page.setInputFiles('[data-testid=rp-import-file]', { name: 'seraphina.png', mimeType: 'image/png', buffer: pngCard(sera) });
    const ask = page.locator('[data-testid=rp-dialog]');
    await ask.waitFor();
    check((await ask.textContent()).includes('4 entries'), 'the import asks about the embedded book (4 entries)');
    await ask.locator('button', { hasText: 'Import with the book' }).click();
    await page.waitForSelector('[data-testid=rp-card]');
    check((await page.textContent('[data-testid=rp-card-name]')) === 'Seraphina', 'the card is in the gallery');
    await page.click('[data-testid=rp-card]');
    await page.waitForSelector('#rp-view[data-ready=detail]');
    check((await page.locator('[data-testid=rp-book] details').count()) === 4, 'its page shows the embedded book');
    await page.selectOption('[data-testid=rp-persona]', persona.id);
    await page.locator('[data-testid=rp-greeting] input').nth(1).check();
    await page.click('[data-testid=rp-begin]');
    const opening = page.locator('[data-testid=opening]');
    await opening.waitFor();
    check((await opening.textContent()).includes('Who walks my woods at this hour, Aldric?'),
      'the story opens with the chosen greeting, for the chosen persona');
    const root = await page.getAttribute('[data-testid=session].active', 'data-id');
    check((await page.textContent('[data-testid=session].active .title')) === 'Seraphina', 'the story is named after the character');

    // ---- three turns ----------------------------------------------------------------------
    const text = () => page.textContent('[data-testid=messages]');
    const active = () => page.getAttribute('[data-testid=session].active', 'data-id');
    const idle = () => page.waitForSelector('[data-testid=stop]', { state: 'hidden', timeout: scaled(20000) });
    const shows = (s) => page.waitForFunction((x) => document.querySelector('[data-testid=messages]').textContent.includes(x),
      s, { timeout: scaled(20000) });
    const leaves = (from) => page.waitForFunction((p) => document.querySelector('[data-testid=session].active')?.dataset.id !== p,
      from, { timeout: scaled(20000) });
    const turn = async (say, reply) => {
      await page.fill('[data-testid=input]', say);
      await page.press('[data-testid=input]', 'Enter');
      await shows(reply.replace(/\*/g, '').slice(0, 20));
      await idle();
    };
    await turn('Where am I?', A1);
    await turn('What happened here?', A2);
    await turn('Can I stay?', A3);
    check((await page.locator('.msg.assistant:not(.opening)').count()) === 3 && (await page.locator('.msg.user').count()) === 3,
      'three turns: three messages and three replies');
    check((await page.locator('.msg.assistant[data-turn="1"] em.action').textContent()) === 'Seraphina sets down her lantern.',
      'the reply reads as a story (*action* in italics)');
    const nav = (turnNo) => page.locator(`.msg.assistant[data-turn="${turnNo}"] [data-testid=swipe]`);
    const at = (turnNo) => page.textContent(`.msg.assistant[data-turn="${turnNo}"] [data-testid=swipe-index]`);
    check((await nav(3).count()) === 1 && (await at(3)) === '1/1' && (await nav(2).count()) === 0,
      'only the last reply carries ‹ 1/1 ›');
    check(await nav(3).locator('button').first().isDisabled(), '‹ is off while there is one variant');

    // ---- swipes on the last reply ----------------------------------------------------------
    await page.locator('[data-testid=messages]').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('ArrowRight');
    await leaves(root);
    await shows(A3B);
    await idle();
    const v2 = await active();
    check((await at(3)) === '2/2' && !(await text()).includes('Rest now'), '→ on the last reply makes variant 2/2 in its place');
    check((await page.textContent('.msg.assistant[data-turn="3"]')).includes(A3B), 'the new variant is the third reply');
    await page.keyboard.press('ArrowLeft');
    await page.waitForFunction((p) => document.querySelector('[data-testid=session].active')?.dataset.id === p, root);
    await page.waitForSelector('.msg.assistant[data-turn="3"] [data-testid=swipe-index]');
    check((await at(3)) === '1/2' && (await text()).includes('Rest now'), '← goes back to variant 1/2');
    await nav(3).locator('button').last().click();
    await page.waitForFunction((p) => document.querySelector('[data-testid=session].active')?.dataset.id === p, v2);
    await page.waitForSelector('.msg.assistant[data-turn="3"] [data-testid=swipe-index]');
    check((await at(3)) === '2/2', '› walks to variant 2/2');
    check((await nav(3).locator('button').last().getAttribute('title')) === 'A new variant', '› on the last variant says it makes a new one');
    await nav(3).locator('button').last().click();
    await leaves(v2);
    await shows(A3C);
    await idle();
    const v3 = await active();
    check((await at(3)) === '3/3' && !(await text()).includes(A3B), '› past the last variant makes variant 3/3');

    // ---- roll back, edit inline ------------------------------------------------------------
    await page.locator('.msg.assistant[data-turn="2"] button[data-act=actRollback]').click();
    await leaves(v3);
    await page.waitForFunction(() => document.querySelectorAll('.msg.user').length === 2);
    const rolled = await active();
    check(!(await text()).includes(A3C) && (await text()).includes('wolves came at dusk'), 'roll back to turn 2 drops turn 3');
    check((await at(2)) === '1/1', 'after the roll back turn 2 is the last reply, with its arrows');
    await page.locator('.msg.assistant[data-turn="1"] button[data-act=actEdit]').click();
    let box = page.locator('[data-testid=edit-box]');
    check((await box.inputValue()) === A1, 'the inline edit of a reply holds its original text, markup and all');
    await box.press('Escape');
    check((await box.count()) === 0 && (await text()).includes('You found the glade.'), 'Esc leaves the reply as it was');
    await page.locator('.msg.user[data-turn="2"] button[data-act=actEdit]').click();
    box = page.locator('[data-testid=edit-box]');
    check((await box.inputValue()) === 'What happened here?', 'the inline edit of my message holds the original text');
    await box.fill('Which way to the river?');
    await page.click('[data-testid=edit-save]');
    await leaves(rolled);
    await shows(A2E);
    await idle();
    check((await text()).includes('Which way to the river?') && !(await text()).includes('What happened here?') &&
      !(await text()).includes('wolves'), 'the edited message and its new reply stand in place of turn 2');

    // ---- branch from turn 1 and go on there -----------------------------------------------
    await page.locator(`[data-testid=session][data-id="${root}"]`).click();
    await page.waitForFunction((p) => document.querySelector('[data-testid=session].active')?.dataset.id === p, root);
    await page.waitForSelector('.msg.assistant[data-turn="3"] [data-testid=swipe-index]');
    check((await at(3)) === '1/3', 'the story itself shows its third reply as ‹ 1/3 ›');
    await page.locator('.msg.assistant[data-turn="1"] button[data-act=actRollback]').click();
    await leaves(root);
    await page.waitForFunction(() => document.querySelectorAll('.msg.user').length === 1);
    const fromOne = await active();
    check((await text()).includes('You found the glade.') && !(await text()).includes('wolves'),
      'the branch from turn 1 holds the greeting and turn 1');
    await turn('Take me to the hills.', B2);
    check((await page.textContent('.msg.assistant[data-turn="2"]')).includes(B2), 'the branch goes on with its own turn 2');
    const swAt2 = await at(2);
    check(swAt2 === '2/2', `its turn 2 is variant 2/2 (${swAt2})`);

    // ---- the branch tree --------------------------------------------------------------------
    const tree = await page.evaluate(() => [...document.querySelectorAll('[data-testid=session]')].map((li) => ({
      id: li.dataset.id, parent: li.dataset.parent, title: li.title, shown: li.querySelector('.title').textContent, branch: li.classList.contains('branch'),
      level: li.style.paddingLeft ? Math.round((parseFloat(li.style.paddingLeft) - 0.55) / 0.9) : 0, hidden: li.hidden,
      count: li.querySelector('[data-testid=branches]')?.textContent || '' })));
    console.log(tree.map((r) => `     ${r.hidden ? '(hidden) ' : ''}${'  '.repeat(r.level)}${r.shown} ${r.count}`).join('\n'));
    const row = (id) => tree.find((r) => r.id === id);
    // root: the swipes v2, v3 and the branch from turn 1; v3: the roll back; that: the edit
    check(tree.length === 6, `the tree holds the story and its 5 branches (${tree.length})`);
    check(tree.every((r) => r.id === root ? !r.branch : r.branch), 'every branch sits under the story');
    check(tree.every((r) => r.id === root || /^Seraphina — turn \d+, variant \d+$/.test(r.title)),
      'every branch has a readable name (character, turn, variant), no method names');
    check(/^Seraphina — turn 2, variant \d+$/.test(row(fromOne).title) && !row(fromOne).hidden,
      `the branch from turn 1 is named for the turn it changes (${row(fromOne).title}) and shown`);
    check(tree.every((r) => r.id === root || r.shown === r.title.replace(/^Seraphina — turn (\d+), variant (\d+)$/, 'turn $1 · variant $2')),
      'under its story a branch row reads "turn n · variant k" (the full name in its tooltip)');
    check(await page.evaluate((id) => { const e = document.querySelector(`[data-testid=session][data-id="${id}"] .title`); return e.scrollWidth <= e.clientWidth; }, fromOne),
      'the branch row is not cut off');
    const direct = tree.filter((r) => r.level === 1).length;
    check(row(root).count.endsWith('3') && direct === 3, `the story counts its ${direct} direct branches`);
    check(tree.every((r) => tree.filter((x) => x.parent === r.parent && x.title === r.title).length === 1),
      'no two branches of one session share a name');
    const under = (id) => tree.filter((r) => r.parent === id).map((r) => r.title);
    check(JSON.stringify(under(root)) === JSON.stringify(['Seraphina — turn 2, variant 2',
      'Seraphina — turn 3, variant 2', 'Seraphina — turn 3, variant 3']),
    `a session's branches are listed by turn and variant (${under(root).join(' | ')})`);
    check(row(v3).count.endsWith('1') && row(rolled).hidden, 'a branch of a branch is folded under it until opened');

    // ---- Chinese, three sizes, narrow window ----------------------------------------------
    const ALLOW = ['Seraphina', 'Aldric', 'Eldoria', 'fake-model', 'cdsh', 'Shift', 'English'];
    const overflow = () => page.evaluate(() => {
      const wide = [];
      if (document.documentElement.scrollWidth > innerWidth) wide.push(`page ${document.documentElement.scrollWidth}`);
      for (const e of document.querySelectorAll('body *')) {
        const r = e.getBoundingClientRect();
        if (!r.width || e.closest('[hidden], .messages pre, .tool-card pre')) continue;
        // inside a scrolled box (the transcript, the session list) only the box itself counts
        const clip = e.parentElement && e.parentElement.closest('.messages, .sessions, .panels');
        const right = clip ? Math.min(innerWidth, clip.getBoundingClientRect().right) : innerWidth;
        if (r.right > right + 1 || r.left < -1) wide.push(`${e.tagName}.${String(e.className).split(' ')[0]} ${Math.round(r.left)}..${Math.round(r.right)}`);
      }
      return wide.slice(0, 6);
    });
    const atEnd = () => page.evaluate(() => {
      const box = document.querySelector('[data-testid=messages]').getBoundingClientRect();
      const tools = [...document.querySelectorAll('.msg.assistant [data-testid=msg-actions]')].pop().getBoundingClientRect();
      return tools.top >= box.top && tools.bottom <= box.bottom + 1;
    });
    const settle = () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    for (const lang of ['en', 'zh']) {
      if (lang === 'zh') {
        await page.click('[data-testid=lang]');
        await page.waitForSelector('[data-testid=rp-bar] #rp-continue:text-is("继续写这条回复")');
        await page.waitForSelector('.msg.assistant[data-turn="2"] [data-testid=swipe-index]');
        check((await page.getAttribute(`[data-testid=session][data-id="${fromOne}"]`, 'title')).startsWith('Seraphina — 第 2 轮，版本 ') &&
          (await page.textContent(`[data-testid=session][data-id="${fromOne}"] .title`)).startsWith('第 2 轮 · 版本 '),
          'in zh the branch reads 第 2 轮 · 版本 n');
        check((await nav(2).locator('button').first().getAttribute('title')) === '上一个版本', 'the arrows speak zh');
        check((await page.textContent('.msg.assistant[data-turn="2"]')).includes(B2), 'the language switch keeps the open branch');
      }
      for (const size of SIZES) {
        await page.setViewportSize({ width: size.width, height: size.height });
        await settle();
        let over = await overflow();
        check(over.length === 0, `${lang} ${size.name} story: nothing wider than the window ${over.join('; ')}`);
        const actions = await page.locator('.msg.assistant[data-turn="2"] [data-testid=msg-actions]').boundingBox();
        check(actions && actions.x >= 0 && actions.x + actions.width <= size.width,
          `${lang} ${size.name}: the reply's arrows and tools fit the window`);
        check(await atEnd(), `${lang} ${size.name}: the transcript stays at its end (the last reply's tools in view)`);
        await page.screenshot({ path: path.join(shotDir, `e2e-flow-${lang}-${size.name}.png`) });
        if (size.width < 900) {
          check(await page.isVisible('[data-testid=narrow-tabs]'), `${lang} ${size.name}: the narrow window has tabs`);
          await page.click('.narrow-tabs button[data-view=sessions]');
          check(await page.isVisible(`[data-testid=session][data-id="${fromOne}"]`), `${lang} ${size.name}: the branch tree is a tab`);
          over = await overflow();
          check(over.length === 0, `${lang} ${size.name} sessions: nothing wider than the window ${over.join('; ')}`);
          await page.screenshot({ path: path.join(shotDir, `e2e-flow-${lang}-${size.name}-sessions.png`) });
          await page.click('.narrow-tabs button[data-view=panels]');
          check(await page.isVisible('.panel[data-plugin=tavern]'), `${lang} ${size.name}: the panels are a tab`);
          over = await overflow();
          check(over.length === 0, `${lang} ${size.name} panels: nothing wider than the window ${over.join('; ')}`);
          await page.screenshot({ path: path.join(shotDir, `e2e-flow-${lang}-${size.name}-panels.png`) });
          await page.click('.narrow-tabs button[data-view=chat]');
          await settle();
          check(await atEnd(), `${lang} ${size.name}: back on the story tab, the transcript is at its end`);
          // a swipe in the narrow window, by its button
          if (lang === 'zh') {
            await nav(2).locator('button').first().click();
            await page.waitForFunction((p) => document.querySelector('[data-testid=session].active')?.dataset.id !== p, fromOne);
            await page.waitForSelector('.msg.assistant[data-turn="2"] [data-testid=swipe-index]');
            check((await at(2)) === '1/2' && (await at(3)) === '1/3',
              `${lang} ${size.name}: ‹ goes back to the story, whose turns 2 and 3 both show their variants`);
            await nav(2).locator('button').last().click();
            await page.waitForFunction((p) => document.querySelector('[data-testid=session].active')?.dataset.id === p, fromOne);
            await page.waitForSelector('.msg.assistant[data-turn="2"] [data-testid=swipe-index]');
          }
        }
      }
      await page.setViewportSize({ width: 1400, height: 900 });
    }
    const found = await latinWords(page, ALLOW);
    check(found.length === 0, `the zh story has no Latin text but names and code:\n  ${found.join('\n  ')}`);
    check(errors.length === 0, `no console errors: ${errors.join('; ')}`);
  } finally {
    await close();
  }
  stopWeb(served);
}

run(main);
