// web_tavern_library.js — browser test of the tavern editors under `cdsh web`
// (Playwright driving Debian's Chromium, the scripted fake model, a temp
// CDSH_HOME): a library lorebook with two entries made in the Lorebooks tab,
// found again after a reload, bound to the session and seen in the prompt
// preview once its keys are in the chat; the finished turn's floor appears
// in the chat view by itself; the character's embedded book edited, and a
// save from a second page after the first saved shows revisionConflict with
// the reload offer; a persona with an uploaded avatar, picked for the
// session; a regex rule saved and an invalid one refused (the error names
// it, nothing written); deletes through the dialog (never window.confirm);
// the author's note setting in the preview; zh/en on the editor tabs; a
// screenshot of every tab into the build dir.
// Usage: node web_tavern_library.js <cdsh> <fake_model> <card.json> <shot-dir>
// Exits 77 (skipped) when Chromium or playwright-core is missing.
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

const say = (text) => ({ chunks: [{ text }], finish_reason: 'stop' });
const SCRIPT = [say('The dragon stirs in the dark.')];
// A 2×2 PNG (the persona's avatar).
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR4nGM44OAARAwQCgAlDgUBrqS64gAAAABJRU5ErkJggg==', 'base64');

async function main() {
  const cardB64 = fs.readFileSync(sampleCard).toString('base64');
  const served = await startWeb(cdsh, fakeModel, SCRIPT, { plugins: ['tavern'], prefix: 'cdsh-e2e-tavlib-' });
  const { web } = served;

  const { browser, close } = await launch(chromium, { width: 1400, height: 1000 });
  try {
    const errors = [];
    const nativeDialogs = [];
    const open = async () => {
      const page = await browser.newPage();
      page.on('pageerror', (e) => errors.push(e.message));
      page.on('dialog', (d) => { nativeDialogs.push(d.type()); d.dismiss(); });
      return page;
    };
    const page = await open();
    const panel = (p) => p.locator('.panel[data-plugin=tavern]');
    const tv = panel(page);
    const tabOf = (p) => async (name) => {
      await panel(p).locator('nav.tavern-tabs button', { hasText: name }).click();
      await panel(p).locator('nav.tavern-tabs button.active', { hasText: name }).waitFor();
    };
    const tab = tabOf(page);
    const statusOf = (p, text) => panel(p).locator('.tavern-status', { hasText: text }).waitFor();
    const saved = () => statusOf(page, 'Saved.');
    const rpc = (method, payload) => page.evaluate(async ([m, p]) => {
      const r = await fetch(`/rpc/tavern/${m}`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ type: 'client-request', rpcId: 't', method: m, payload: p }) });
      return (await r.json()).result;
    }, [method, payload]);
    const dlg = page.locator('dialog.tavern-dialog');
    const previewText = async () => (await tv.locator('.tavern-view pre:not(.tavern-log)').allTextContents()).join('\n');

    await page.goto(web.info.url);
    await tv.locator('nav.tavern-tabs').waitFor();
    await page.click('[data-testid=new-session]');
    await page.waitForSelector('[data-testid=session].active');
    const sid = await page.evaluate(() => location.hash.slice(1));
    const imp = await rpc('importCharacter', { fileBase64: cardB64, book: 'import' });
    check(imp.ok, 'the sample card is imported with its embedded book');
    const cardId = imp.value.cardId;
    await tab('Chat');
    await tab('Characters');
    const cardRow = tv.locator('ul.tavern-cards:not(.archived) li', { hasText: 'Seraphina' });
    await cardRow.locator('button', { hasText: 'Play in this session' }).click();
    await cardRow.locator('button', { hasText: 'Playing' }).waitFor();

    // ---- a library lorebook with two entries -----------------------------------------
    await tab('Lorebooks');
    await tv.locator('button', { hasText: 'New lorebook' }).click();
    await dlg.waitFor();
    await dlg.locator('textarea').fill('Atlas');
    await dlg.locator('button', { hasText: 'OK' }).click();
    await statusOf(page, 'Created');
    const bookName = tv.locator('input[aria-label="Book name"]');
    await bookName.waitFor();
    check(await bookName.inputValue() === 'Atlas', 'the new book opens in the editor');
    await tv.locator('button', { hasText: 'Add entry' }).click();
    await tv.locator('button', { hasText: 'Add entry' }).click();
    const entry = (i) => tv.locator('fieldset.tavern-entry').nth(i);
    const fillEntry = async (i, f) => {
      const e = entry(i);
      await e.locator('input[aria-label="Comment"]').fill(f.comment);
      await e.locator('input[aria-label="Keys"]').fill(f.keys);
      await e.locator('input[aria-label="Secondary keys"]').fill(f.secondary);
      await e.locator('select[aria-label="Logic"]').selectOption({ label: f.logic });
      await e.locator('textarea[aria-label="Content"]').fill(f.content);
      await e.locator('select[aria-label="Position"]').selectOption({ label: f.position });
      await e.locator('input[aria-label="Depth"]').fill(String(f.depth));
      await e.locator('input[aria-label="Probability (%)"]').fill(String(f.probability));
      await e.locator('input[aria-label="Always on"]').setChecked(f.constant);
    };
    const DRAGON = { comment: 'Dragon lore', keys: 'dragon, wyrm', secondary: 'cave', logic: 'AND ANY',
      content: 'DRAGONLORE: the dragon sleeps under Ash Mountain.', position: 'Before the character',
      depth: 2, probability: 100, constant: false };
    const REALM = { comment: 'Realm', keys: 'realm', secondary: 'crown, throne', logic: 'NOT ALL',
      content: 'REALMLORE: the realm is called Aldmark.', position: 'At depth', depth: 3, probability: 30, constant: true };
    await fillEntry(0, DRAGON);
    await fillEntry(1, REALM);
    await tv.locator('.tavern-book > button', { hasText: 'Save' }).click();
    await saved();
    const books = (await rpc('listLorebooks', {})).value;
    const atlas = books.find((b) => b.name === 'Atlas');
    check(atlas && atlas.entries === 2, 'the library lists Atlas with two entries');

    await page.reload();
    await tv.locator('nav.tavern-tabs').waitFor();
    await tab('Lorebooks');
    await tv.locator('select[aria-label="Lorebook"]').selectOption({ label: 'Atlas (2)' });
    await entry(1).waitFor();
    const readEntry = async (i) => {
      const e = entry(i);
      return { comment: await e.locator('input[aria-label="Comment"]').inputValue(),
        keys: await e.locator('input[aria-label="Keys"]').inputValue(),
        secondary: await e.locator('input[aria-label="Secondary keys"]').inputValue(),
        logic: await e.locator('select[aria-label="Logic"] option:checked').textContent(),
        content: await e.locator('textarea[aria-label="Content"]').inputValue(),
        position: await e.locator('select[aria-label="Position"] option:checked').textContent(),
        depth: Number(await e.locator('input[aria-label="Depth"]').inputValue()),
        probability: Number(await e.locator('input[aria-label="Probability (%)"]').inputValue()),
        constant: await e.locator('input[aria-label="Always on"]').isChecked() };
    };
    check(JSON.stringify(await readEntry(0)) === JSON.stringify(DRAGON), 'after a reload: the first entry as written');
    check(JSON.stringify(await readEntry(1)) === JSON.stringify(REALM), `after a reload: the second entry as written`);

    // ---- bind it; its entry reaches the prompt once its keys are in the chat ----------
    await tab('Prompt preview');
    await tv.locator('pre').first().waitFor();
    check(!(await previewText()).includes('DRAGONLORE'), 'before binding and the keys: no dragon lore in the preview');
    await tab('Characters');
    const bindBook = tv.locator('.tavern-bind-books label', { hasText: 'Atlas' }).locator('input');
    await bindBook.check();
    await saved();
    const binding = (await rpc('getSessionBinding', { sessionId: sid })).value.binding;
    check(binding.cardId === cardId && binding.lorebookIds.includes(atlas.id), 'the session binds Atlas (same card, same story)');

    await tab('Chat');
    await tv.locator('[data-testid=greeting]').waitFor();
    check((await tv.locator('[data-testid=floor]').count()) === 0, 'no floor before the first turn');
    await page.fill('[data-testid=input]', 'I search the cave for the dragon.');
    await page.press('[data-testid=input]', 'Enter');
    await tv.locator('[data-testid=floor][data-turn="1"]').waitFor({ timeout: scaled(20000) });
    check(true, 'the finished turn\'s floor appears in the chat view without a click');
    await page.waitForSelector('[data-testid=stop]', { state: 'hidden', timeout: scaled(20000) });
    await tab('Prompt preview');
    await tv.locator('pre', { hasText: 'DRAGONLORE' }).first().waitFor();
    check(true, 'the prompt preview carries the bound book\'s entry whose keys are in the chat');
    // the trigger log says why: the dragon entry fired on its primary and secondary keys
    const trig = await tv.locator('[data-testid=trigger-log]').textContent();
    check(/Turn 1: \d+ of \d+ entries fired/.test(trig), `the trigger log heads turn 1: ${trig.slice(0, 200)}`);
    check(/✓ Atlas#\d+ Dragon lore — primary key 'dragon' and secondary keys/.test(trig),
      `the trigger log explains the dragon entry: ${trig.slice(0, 400)}`);

    // ---- the character's embedded book; a conflict from a second page -------------------
    await tab('Lorebooks');
    const pickEmbedded = (p) => panel(p).locator('select[aria-label="Lorebook"]').selectOption(`card:${cardId}`);
    await pickEmbedded(page);
    await entry(0).waitFor();
    const n0 = await tv.locator('fieldset.tavern-entry').count();
    check(n0 === 4, `the embedded book shows its ${n0} entries`);
    const page2 = await open();
    await page2.goto(`${web.info.url}#${sid}`);
    await panel(page2).locator('nav.tavern-tabs').waitFor();
    await tabOf(page2)('Lorebooks');
    await pickEmbedded(page2);
    await panel(page2).locator('fieldset.tavern-entry').first().waitFor();
    await entry(0).locator('textarea[aria-label="Content"]').fill('EMBEDDED-FIRST: the glade is warded.');
    await tv.locator('.tavern-book > button', { hasText: 'Save' }).click();
    await saved();
    const detail = (await rpc('getCharacterLorebook', { cardId })).value;
    check(JSON.stringify(detail.book).includes('EMBEDDED-FIRST'), 'the first page saved the embedded book');
    const e2 = panel(page2).locator('fieldset.tavern-entry').first();
    await e2.locator('textarea[aria-label="Content"]').fill('EMBEDDED-SECOND');
    await panel(page2).locator('.tavern-book > button', { hasText: 'Save' }).click();
    const dlg2 = page2.locator('dialog.tavern-dialog');
    await dlg2.waitFor();
    check((await dlg2.textContent()).includes('Someone changed this meanwhile; reload and try again.'),
      'the second page\'s save shows the revisionConflict message');
    check(!JSON.stringify((await rpc('getCharacterLorebook', { cardId })).value.book).includes('EMBEDDED-SECOND'),
      'the conflicting save wrote nothing');
    await dlg2.locator('button', { hasText: 'Reload' }).click();
    await panel(page2).locator('fieldset.tavern-entry textarea').first().waitFor();
    check((await e2.locator('textarea[aria-label="Content"]').inputValue()).startsWith('EMBEDDED-FIRST'),
      'the reload offer reads the book again with the first page\'s edit');
    await page2.close();

    // ---- a persona with an avatar, picked for the session ----------------------------------
    await tab('Presets & rules');
    const personaBox = tv.locator('section.tavern-assets').nth(1);
    await personaBox.locator('input[aria-label="Name"]').fill('Wanderer');
    await personaBox.locator('textarea[aria-label="Description"]').fill('PERSONA: a wanderer from the north.');
    await personaBox.locator('input[type=file]').setInputFiles({ name: 'me.png', mimeType: 'image/png', buffer: PNG });
    await personaBox.locator('img.avatar[src^="data:image/png;base64,"]').waitFor();
    await personaBox.locator('button', { hasText: 'Save' }).click();
    await saved();
    await personaBox.locator('select[aria-label="Persona"] option:checked', { hasText: 'Wanderer' }).waitFor({ state: 'attached' });
    check((await personaBox.locator('img.avatar').getAttribute('src')) === `data:image/png;base64,${PNG.toString('base64')}`,
      'the saved persona is selected with its uploaded avatar');
    const persona = (await rpc('listPersonas', {})).value.find((p) => p.name === 'Wanderer');
    await tab('Characters');
    await tv.locator('select[aria-label="Persona"]').selectOption({ label: 'Wanderer' });
    await saved();
    check((await rpc('getSessionBinding', { sessionId: sid })).value.binding.personaId === persona.id, 'the persona is picked for the session');
    await tab('Prompt preview');
    await tv.locator('pre', { hasText: 'PERSONA: a wanderer from the north.' }).first().waitFor();
    check(true, 'the preview carries the picked persona');

    // ---- regex rules: one saved, an invalid one refused -----------------------------------------
    await tab('Presets & rules');
    const regexBox = tv.locator('section.tavern-assets').nth(2);
    const rulesBefore = (await rpc('listRegexRules', {})).value.length;
    await regexBox.locator('button', { hasText: 'Add rule' }).click();
    const rule = (i) => regexBox.locator('fieldset.tavern-rule').nth(i);
    await rule(rulesBefore).locator('input[aria-label="Name"]').fill('Shout');
    await rule(rulesBefore).locator('input[aria-label="Find"]').fill('/dragon/gi');
    await rule(rulesBefore).locator('input[aria-label="Replace with"]').fill('DRAGON');
    await regexBox.locator(':scope > button', { hasText: 'Save' }).click();
    await saved();
    const rules = (await rpc('listRegexRules', {})).value;
    check(rules.length === rulesBefore + 1 && rules.some((r) => r.name === 'Shout'), 'the rule is saved');
    await regexBox.locator('button', { hasText: 'Add rule' }).click();
    await rule(rulesBefore + 1).locator('input[aria-label="Name"]').fill('Broken');
    await rule(rulesBefore + 1).locator('input[aria-label="Find"]').fill('(unclosed');
    await regexBox.locator(':scope > button', { hasText: 'Save' }).click();
    await statusOf(page, 'Error:');
    const msg = await tv.locator('.tavern-status').textContent();
    check(msg.includes('Broken'), `the error names the invalid rule (${msg})`);
    check((await rpc('listRegexRules', {})).value.length === rulesBefore + 1, 'nothing was saved');

    // ---- delete through the dialog ------------------------------------------------------------------
    const presetBox = tv.locator('section.tavern-assets').nth(0);
    await presetBox.locator('button', { hasText: 'New preset' }).click();
    await presetBox.locator('textarea').fill(JSON.stringify({ name: 'Spare', temperature: 0.7, prompts: [] }));
    await presetBox.locator('button', { hasText: 'Save' }).click();
    await saved();
    await presetBox.locator('select[aria-label="Preset"] option:checked', { hasText: 'Spare' }).waitFor({ state: 'attached' });
    const hasSpare = async () => (await rpc('listPresets', {})).value.some((p) => p.name === 'Spare');
    check(await hasSpare(), 'the new preset is saved and selected');
    await presetBox.locator('button', { hasText: 'Delete' }).click();
    await dlg.waitFor();
    check((await dlg.textContent()).includes('Delete Spare?'), 'the delete dialog names the preset');
    await dlg.locator('button', { hasText: 'Cancel' }).click();
    await dlg.waitFor({ state: 'detached' });
    check(await hasSpare(), 'Cancel keeps it');
    await presetBox.locator('button', { hasText: 'Delete' }).click();
    await dlg.locator('button', { hasText: 'Delete' }).click();
    await tv.locator('section.tavern-assets').nth(0).locator('select[aria-label="Preset"] option', { hasText: 'Spare' }).waitFor({ state: 'detached' });
    check(!(await hasSpare()), 'Delete in the dialog deletes it');
    check(nativeDialogs.length === 0, `no window.confirm / alert / prompt (${nativeDialogs.join(', ')})`);

    // ---- the author's note setting --------------------------------------------------------------------
    await tab('Settings');
    await tv.locator('[data-testid=author-note]').fill('ANOTE: keep the replies short.');
    await tv.locator('select[aria-label="Note position"]').selectOption({ label: 'In chat, at depth' });
    await tv.locator('.tavern-an input[aria-label="Depth"]').fill('1');
    await tv.locator('select[aria-label="Note role"]').selectOption({ label: 'System' });
    await tv.locator('.tavern-view > button', { hasText: 'Save' }).click();
    await saved();
    const an = (await rpc('getSettings', {})).value.authorNote;
    check(an.text === 'ANOTE: keep the replies short.' && an.position === 1 && an.depth === 1 && an.role === 0 && an.allowWIScan === false,
      `the author's note is saved (${JSON.stringify(an)})`);
    await tab('Prompt preview');
    await tv.locator('pre', { hasText: 'ANOTE: keep the replies short.' }).first().waitFor();
    check(true, 'the prompt preview carries the author\'s note');
    await tab('Settings');
    check(await tv.locator('[data-testid=author-note]').inputValue() === 'ANOTE: keep the replies short.', 'Settings shows the saved note again');

    // ---- screenshots of every tab ---------------------------------------------------------------------
    for (const name of ['Characters', 'Chat', 'Story lore', 'Lorebooks', 'Presets & rules', 'Memory', 'World state',
      'Journal', 'Settings', 'Prompt preview']) {
      await tv.locator('nav.tavern-tabs button', { hasText: new RegExp(`^${name.replace(/[&]/g, '\\$&')}$`) }).click();
      await tv.locator('nav.tavern-tabs button.active', { hasText: new RegExp(`^${name}$`) }).waitFor();
      if (name === 'Lorebooks') {
        await tv.locator('select[aria-label="Lorebook"]').selectOption({ label: 'Atlas (2)' });
        await entry(1).waitFor();
      }
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
      await tv.screenshot({ path: path.join(shotDir, `e2e-tavern-tab-${name.replace(/[^A-Za-z]+/g, '-').toLowerCase()}.png`) });
    }
    check(true, `screenshots of every tab in ${shotDir}`);

    // ---- zh / en on the editor tabs -------------------------------------------------------------------
    await page.click('[data-testid=lang]');
    await tv.locator('nav.tavern-tabs button', { hasText: '世界书库' }).click();
    await tv.locator('button', { hasText: '新建世界书' }).waitFor();
    await entry(1).waitFor(); // the last book reopens once its entries arrived
    check((await tv.locator('fieldset.tavern-entry legend').count()) === 2 &&
      (await tv.locator('.tavern-view').textContent()).includes('次要关键词'), 'zh: the Lorebooks tab is Chinese');
    await tv.locator('nav.tavern-tabs button', { hasText: '预设与规则' }).click();
    await tv.locator('h4', { hasText: '正则规则' }).waitFor();
    check((await tv.locator('h4', { hasText: '人设' }).count()) === 1, 'zh: the Presets & rules tab is Chinese');
    await tv.locator('nav.tavern-tabs button', { hasText: '设置' }).click();
    await tv.locator('legend', { hasText: '作者注释' }).waitFor();
    check(true, 'zh: the author\'s note in Settings is Chinese');
    await page.click('[data-testid=lang]');
    await tv.locator('legend', { hasText: 'Author’s note' }).waitFor();
    check(true, 'en again');

    check(errors.length === 0, `no page errors: ${errors.join('; ')}`);
    console.log('ok: tavern editors in the browser');
  } finally {
    await close();
  }
  stopWeb(served);
}

run(main);
