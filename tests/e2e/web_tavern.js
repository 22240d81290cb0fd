// web_tavern.js — browser test of the role-play UI under `cdsh web`
// (Playwright driving Debian's Chromium, the scripted fake model, a temp
// CDSH_HOME with the tavern plugin enabled): import a card with its lorebook
// (answering the embedded-book question), bind, see the card's greeting HTML
// run in the sandboxed frame (it can swipe the greeting; it cannot fetch,
// reach the page's DOM or cookies, or use any other bridge message; messages
// from other windows are ignored; inert text when interactive cards are off),
// play turns in which the model writes memory and world state, regenerate
// (the page follows the child session, siblings ‹ n/m ›), edit a user
// message, roll back, preview the prompt, restart cdsh web on the same home
// and find everything as it was; zh/en toggling. Screenshot into the build dir.
// Usage: node web_tavern.js <cdsh> <fake_model> <card.json> <screenshot.png>
// Exits 77 (skipped) when Chromium or playwright-core is missing.
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { playwright, start, launch, run, scaled } = require('./web_lib.js');

const [cdsh, fakeModel, sampleCard, shot] = process.argv.slice(2);
const chromium = playwright();

function stop(proc) {
  return new Promise((resolve) => {
    if (proc.child.exitCode !== null) return resolve();
    proc.child.removeAllListeners('exit');
    proc.child.once('exit', () => resolve());
    proc.child.kill('SIGTERM');
  });
}

function check(cond, msg) {
  if (!cond) throw new Error(`check failed: ${msg}`);
  console.log(`ok   ${msg}`);
}

// The card's first greeting is an interactive document probing its sandbox;
// the second is plain text.
const CARD_HTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>card</title></head><body>
<p id="out">waiting</p><button id="swipe">next greeting</button>
<script>
const out = { ran: true, violations: [] };
const show = () => { document.getElementById('out').textContent = JSON.stringify(out); };
document.addEventListener('securitypolicyviolation', (e) => { out.violations.push(e.effectiveDirective); show(); });
try { out.parentDom = String(!!parent.document.body); } catch (e) { out.parentDom = 'blocked'; }
try { out.cookie = 'read:' + document.cookie; } catch (e) { out.cookie = 'blocked'; }
try { out.storage = String(!!localStorage); } catch (e) { out.storage = 'blocked'; }
out.bridge = typeof SillyTavern.swipeGreeting;
fetch('/api/sessions').then((r) => { out.fetch = 'status ' + r.status; show(); },
  () => { out.fetch = 'refused'; show(); });
parent.postMessage({ type: 'tavern:deleteCharacter', cardId: 'x' }, '*');
parent.postMessage({ type: 'tavern:swipeGreeting', index: 'one' }, '*');
parent.postMessage({ type: 'tavern:setSessionBinding', sessionId: 'x' }, '*');
document.getElementById('swipe').onclick = () => SillyTavern.swipeGreeting(1);
show();
</script></body></html>`;
const SECOND_GREETING = '*Seraphina smiles.* Welcome back, traveller.';

const call = (id, name, args) => ({
  tool_calls: [{ index: 0, id, name, arguments: JSON.stringify(args) }], finish_reason: 'tool_calls' });
const say = (text) => ({ chunks: [{ text }], finish_reason: 'stop' });
const SCRIPT = [
  call('c1', 'tavern_memory_write', { body: 'Seraphina healed the traveller.' }),
  call('c2', 'tavern_worldstate_update', { type: 'add', content: 'Night falls over Eldoria.' }),
  say('You wake in the glade.'),
  call('c3', 'tavern_memory_write', { body: 'The traveller owes Seraphina a favour.' }),
  say('She smiles.'),
  say('A different smile.'),      // regenerate turn 2 (in the child)
  say('The glade lies north.'),   // edit of turn 1 (in a child of the child)
];

async function main() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'cdsh-e2e-tavern-'));
  const script = path.join(home, 'script.json');
  fs.writeFileSync(script, JSON.stringify(SCRIPT));
  const card = JSON.parse(fs.readFileSync(sampleCard, 'utf8'));
  card.data.first_mes = CARD_HTML;
  card.data.alternate_greetings = [SECOND_GREETING];
  const cardBytes = Buffer.from(JSON.stringify(card));
  const bookEntries = (card.data.character_book.entries || []).length;

  const fake = await start(fakeModel, ['--script', script], {});
  const env = { CDSH_HOME: home, CDSH_BASE_URL: fake.info.url, CDSH_MODEL: 'fake-model',
                DEEPSEEK_API_KEY: '', CDSH_API_KEY: '' };
  execFileSync(cdsh, ['config', 'enable', 'tavern'], { env: { ...process.env, ...env } });
  let web = await start(cdsh, ['web', '--no-open', '--json', '--port', '0'], env);

  const { browser, close } = await launch(chromium, { width: 1400, height: 1000 });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const swipeCalls = [];
    page.on('request', (r) => { if (r.url().endsWith('/rpc/tavern/swipeGreeting')) swipeCalls.push(r.postData()); });
    const tv = page.locator('.panel[data-plugin=tavern]');
    const tab = async (name) => {
      await tv.locator('nav.tavern-tabs button', { hasText: name }).click();
      await tv.locator('nav.tavern-tabs button.active', { hasText: name }).waitFor();
    };
    const rpc = (method, payload) => page.evaluate(async ([m, p]) => {
      const r = await fetch(`/rpc/tavern/${m}`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ type: 'client-request', rpcId: 't', method: m, payload: p }) });
      return (await r.json()).result;
    }, [method, payload]);
    const current = () => page.evaluate(() => location.hash.slice(1));
    const waitReply = (text) => page.waitForFunction((t) => [...document.querySelectorAll('.msg.assistant:not(.streaming) .text')]
      .some((e) => e.textContent === t), text, { timeout: scaled(20000) });
    const idle = () => page.waitForSelector('[data-testid=stop]', { state: 'hidden', timeout: scaled(20000) });
    const transcript = () => page.textContent('[data-testid=messages]');

    await page.goto(web.info.url);
    await tv.locator('nav.tavern-tabs').waitFor();
    check(true, 'the tavern panel is mounted in the panel area');

    // ---- import with the embedded-book question, bind ----------------------------
    await page.click('[data-testid=new-session]');
    await page.waitForSelector('[data-testid=session].active');
    const parent = await current();
    await tab('Characters');
    await tv.locator('input[type=file]').setInputFiles({ name: 'seraphina.json', mimeType: 'application/json', buffer: cardBytes });
    const dlg = page.locator('dialog.tavern-dialog');
    await dlg.waitFor();
    check((await dlg.textContent()).includes(`${bookEntries} entries`), 'the embedded-book question names the entry count');
    await dlg.locator('button', { hasText: 'Import with the lorebook' }).click();
    const row = tv.locator('ul.tavern-cards:not(.archived) li', { hasText: 'Seraphina' });
    await row.waitFor();
    const cards = (await rpc('listCharacters', {})).value;
    const detail = await rpc('getCharacterDetail', { cardId: cards[0].cardId });
    const firstEntry = card.data.character_book.entries[0].content.slice(0, 40);
    check(detail.ok && JSON.stringify(detail.value).includes(JSON.stringify(firstEntry).slice(1, -1)),
      'the embedded lorebook was imported with the card');
    await row.locator('button', { hasText: 'Play in this session' }).click();
    await row.locator('button', { hasText: 'Playing' }).waitFor();
    check(true, 'the session is bound to the card');

    // ---- the frame route: headers, access checks --------------------------------
    const frameUrl = `/frame/tavern/frameGreeting?sessionId=${parent}`;
    const head = await page.evaluate(async (u) => {
      const r = await fetch(u);
      return { status: r.status, csp: r.headers.get('content-security-policy'),
               xfo: r.headers.get('x-frame-options'), type: r.headers.get('content-type'), body: await r.text() };
    }, frameUrl);
    check(head.status === 200 && head.type.startsWith('text/html'), 'the card document is served as HTML');
    check(/sandbox allow-scripts;/.test(head.csp) && head.csp.includes("connect-src 'none'") &&
          head.csp.includes("default-src 'none'") && !head.csp.includes('allow-same-origin'),
          `the card document has its own sandbox CSP (${head.csp})`);
    check(head.xfo === 'SAMEORIGIN', 'only this origin may frame it');
    check(head.body.includes('window.SillyTavern={swipeGreeting'), 'the bridge is injected');
    const anon = await fetch(`http://127.0.0.1:${web.info.port}${frameUrl}`);
    check(anon.status === 401, 'without the token the frame route answers 401');
    const other = await page.evaluate(async (s) => (await fetch(`/frame/tavern/getSessionBinding?sessionId=${s}`)).status, parent);
    check(other === 404, 'non-frame RPC endpoints cannot be reached by GET');
    const pageCsp = await page.evaluate(async () => (await fetch('/')).headers.get('content-security-policy'));
    check(pageCsp.startsWith("default-src 'self'") && !pageCsp.includes('unsafe-inline\'; script') &&
          !pageCsp.includes("script-src 'unsafe-inline'"), 'the main page CSP stays strict');

    // ---- interactive cards off: inert text ---------------------------------------
    await tab('Settings');
    await tv.locator('[data-testid=interactive-cards]').uncheck();
    await tv.getByRole('button', { name: 'Save', exact: true }).click();
    await tv.locator('.tavern-status', { hasText: 'Saved.' }).waitFor();
    await tab('Chat');
    await tv.locator('[data-testid=card-inert]').waitFor();
    check((await tv.locator('[data-testid=card-frame]').count()) === 0, 'cards off: no frame');
    check((await tv.locator('[data-testid=card-inert]').textContent()).includes('<script>'), 'cards off: the HTML is shown as inert text');
    const off = await page.evaluate(async (u) => { const r = await fetch(u); return [r.status, (await r.json()).error.code]; }, frameUrl);
    check(off[0] === 422 && off[1] === 'interactive-cards-off', 'cards off: the frame route refuses');
    await tab('Settings');
    await tv.locator('[data-testid=interactive-cards]').check();
    await tv.getByRole('button', { name: 'Save', exact: true }).click();
    await tv.locator('.tavern-status', { hasText: 'Saved.' }).waitFor();

    // ---- interactive cards on: the sandboxed frame --------------------------------
    await tab('Chat');
    const frameEl = tv.locator('[data-testid=card-frame]');
    await frameEl.waitFor();
    check((await frameEl.getAttribute('sandbox')) === 'allow-scripts', 'the frame is sandbox="allow-scripts"');
    const frame = page.frameLocator('.panel[data-plugin=tavern] [data-testid=card-frame]');
    const probe = async () => JSON.parse(await frame.locator('#out').textContent());
    await page.waitForFunction(() => true);
    await frame.locator('#out').filter({ hasText: '"fetch"' }).waitFor({ timeout: scaled(15000) });
    const p = await probe();
    check(p.ran === true, 'the card script runs');
    check(p.fetch === 'refused' && p.violations.includes('connect-src'), `fetch is refused by the CSP (${p.fetch}, ${p.violations})`);
    check(p.parentDom === 'blocked', 'the card cannot reach the parent DOM');
    check(p.cookie === 'blocked' && p.storage === 'blocked', 'the card cannot read cookies or storage (opaque origin)');
    check(p.bridge === 'function', 'the card sees the swipeGreeting bridge');
    // Messages from other windows: the page itself and another same-origin frame.
    await page.evaluate(() => {
      window.postMessage({ type: 'tavern:swipeGreeting', index: 1 }, '*');
      const f = document.createElement('iframe');
      f.name = 'intruder';
      document.body.append(f);
    });
    const intruder = page.frame({ name: 'intruder' });
    await intruder.evaluate(() => parent.postMessage({ type: 'tavern:swipeGreeting', index: 1 }, '*'));
    await page.evaluate(() => document.querySelector('iframe[name=intruder]').remove());
    check((await tv.locator('[data-testid=greeting-index]').textContent()) === '1/2', 'greeting 1/2 before the card asks');
    await frame.locator('#swipe').click();
    await tv.locator('[data-testid=greeting-index]', { hasText: '2/2' }).waitFor();
    check((await tv.locator('[data-testid=greeting]').textContent()).includes('Welcome back, traveller.'),
      'the card swiped the greeting through the bridge');
    check(swipeCalls.length === 1 && JSON.parse(swipeCalls[0]).payload.index === 1,
      `only the card's own swipeGreeting reached the service (${swipeCalls.length} calls)`);

    // ---- play: memory and world state --------------------------------------------
    await page.fill('[data-testid=input]', 'Where am I?');
    await page.press('[data-testid=input]', 'Enter');
    await waitReply('You wake in the glade.');
    await idle();
    await page.fill('[data-testid=input]', 'Thank you.');
    await page.press('[data-testid=input]', 'Enter');
    await waitReply('She smiles.');
    await idle();
    check((await page.locator('[data-testid=tool-card].ok').count()) === 3, 'three tavern tool calls succeeded');
    await tab('Memory');
    await tv.locator('li', { hasText: 'The traveller owes Seraphina a favour.' }).waitFor();
    check((await tv.locator('li', { hasText: 'Seraphina healed the traveller.' }).count()) === 1, 'Memory shows what the model wrote');
    await tab('World state');
    await tv.locator('li', { hasText: 'add: Night falls over Eldoria.' }).waitFor();
    check(true, 'World state shows the model\'s delta');

    // ---- regenerate: the page follows the child ------------------------------------
    await tab('Chat');
    await tv.locator('[data-testid=floor][data-turn="2"] button', { hasText: 'Regenerate' }).click();
    await waitReply('A different smile.');
    await idle();
    const child = await current();
    check(child !== parent, 'the page switched to the child session');
    check(await page.locator('[data-testid=session].active').getAttribute('data-id') === child, 'the session list marks the child');
    check((await page.locator('[data-testid=session]').count()) === 2, 'the child is in the session list');
    const tx = await transcript();
    check(tx.includes('You wake in the glade.') && !tx.includes('She smiles.'), 'the transcript is the child\'s');
    await tab('Chat');
    check((await tv.locator('[data-testid=sibling-index]').textContent()) === '2/2', 'siblings ‹2/2› in the child');
    await tab('Memory');
    await tv.locator('li', { hasText: 'Seraphina healed the traveller.' }).waitFor();
    check((await tv.locator('li', { hasText: 'owes Seraphina' }).count()) === 0, 'the child\'s story dropped the regenerated floor\'s memory');
    await tab('Chat');
    await tv.locator('[data-testid=siblings] button[aria-label="Previous variant"]').click();
    await tv.locator('[data-testid=sibling-index]', { hasText: '1/2' }).waitFor();
    check(await current() === parent && (await transcript()).includes('She smiles.'), 'siblings ‹1/2›: back on the parent with its transcript');
    await tv.locator('[data-testid=siblings] button[aria-label="Next variant"]').click();
    await tv.locator('[data-testid=sibling-index]', { hasText: '2/2' }).waitFor();
    check(await current() === child, '› goes to the child again');
    await tv.locator('[data-testid=parent-session]').click();
    await tv.locator('[data-testid=sibling-index]', { hasText: '1/2' }).waitFor();
    check(await current() === parent, '"back to the parent" opens the parent');
    await tv.locator('[data-testid=siblings] button[aria-label="Next variant"]').click();
    await tv.locator('[data-testid=sibling-index]', { hasText: '2/2' }).waitFor();

    // ---- edit a user message (in the child) ------------------------------------------
    await tv.locator('[data-testid=floor][data-turn="1"] button', { hasText: 'Edit my message' }).click();
    await dlg.waitFor();
    await dlg.locator('textarea').fill('Where is the glade?');
    await dlg.locator('button', { hasText: 'OK' }).click();
    await waitReply('The glade lies north.');
    await idle();
    const edited = await current();
    check(edited !== child && edited !== parent, 'the edit opened a new child');
    const etx = await transcript();
    check(etx.includes('Where is the glade?') && !etx.includes('Where am I?'), 'the transcript shows the edited message');

    // ---- roll back (in the parent) -----------------------------------------------------
    await page.locator(`[data-testid=session][data-id="${parent}"]`).click();
    await page.waitForFunction((id) => location.hash === `#${id}`, parent);
    await tab('Chat');
    await tv.locator('[data-testid=floor][data-turn="2"]').waitFor();
    await tv.locator('[data-testid=floor][data-turn="1"] button', { hasText: 'Roll back here' }).click();
    await page.waitForFunction((ids) => !ids.includes(location.hash.slice(1)) && location.hash.length > 1, [parent, child, edited]);
    const rolled = await current();
    await page.waitForFunction(() => document.querySelector('[data-testid=messages]').textContent.includes('You wake in the glade.'));
    check(!(await transcript()).includes('She smiles.'), 'the rolled-back child ends at turn 1');
    await tab('Chat');
    await tv.locator('[data-testid=floor][data-turn="1"]').waitFor();
    check((await tv.locator('[data-testid=floor]').count()) === 1, 'one floor after the roll back');
    check((await tv.locator('[data-testid=sibling-index]').textContent()) === '3/3', 'the roll back is the third variant of turn 2');
    await tab('Memory');
    await tv.locator('li', { hasText: 'Seraphina healed the traveller.' }).waitFor();
    check((await tv.locator('li', { hasText: 'owes Seraphina' }).count()) === 0, 'the roll back undid turn 2\'s memory');

    // ---- prompt preview ------------------------------------------------------------------
    await tab('Prompt preview');
    await tv.locator('pre', { hasText: 'Night falls over Eldoria.' }).first().waitFor();
    check(true, 'the prompt preview carries the world state');
    // the standing segment, the turn context and the sampling (not the trigger log)
    const previewText = () => tv.locator('.tavern-view pre:not(.tavern-log)').allTextContents();
    const preview = await previewText();

    // ---- restart cdsh web on the same home ---------------------------------------------
    await stop(web);
    web = await start(cdsh, ['web', '--no-open', '--json', '--port', '0'], env);
    await page.goto(`${web.info.url}#${child}`);
    await page.waitForFunction((id) => document.querySelector('[data-testid=session].active')?.dataset.id === id, child);
    check((await page.locator('[data-testid=session]').count()) === 4, 'after the restart: four sessions');
    await waitReply('A different smile.');
    await tab('Chat');
    await tv.locator('[data-testid=floor][data-turn="2"]').waitFor();
    // the roll back to floor 1 made a third variant of turn 2
    check((await tv.locator('[data-testid=sibling-index]').textContent()) === '2/3', 'after the restart: siblings ‹2/3›');
    check((await tv.locator('[data-testid=floor]').count()) === 2, 'after the restart: the child\'s floors');
    await tab('Memory');
    await tv.locator('li', { hasText: 'Seraphina healed the traveller.' }).waitFor();
    check((await tv.locator('li', { hasText: 'owes Seraphina' }).count()) === 0, 'after the restart: the child\'s memory');
    await page.locator(`[data-testid=session][data-id="${parent}"]`).click();
    await page.waitForFunction((id) => location.hash === `#${id}`, parent);
    await waitReply('She smiles.');
    await tab('Memory');
    await tv.locator('li', { hasText: 'owes Seraphina' }).waitFor();
    check(true, 'after the restart: the parent\'s memory');
    await tab('World state');
    await tv.locator('li', { hasText: 'Night falls over Eldoria.' }).waitFor();
    await page.locator(`[data-testid=session][data-id="${rolled}"]`).click();
    await page.waitForFunction((id) => location.hash === `#${id}`, rolled);
    await tab('Prompt preview');
    await tv.locator('pre', { hasText: 'Night falls over Eldoria.' }).first().waitFor();
    const again = await previewText();
    check(JSON.stringify(again) === JSON.stringify(preview), `after the restart: the same prompt preview (${JSON.stringify(again).slice(0, 300)})`);
    await tab('Characters');
    await tv.locator('ul.tavern-cards:not(.archived) li', { hasText: 'Seraphina' }).locator('button', { hasText: 'Playing' }).waitFor();
    check(true, 'after the restart: the binding');

    // ---- zh / en ----------------------------------------------------------------------------
    await page.click('[data-testid=lang]');
    await tv.locator('nav.tavern-tabs button.active', { hasText: '角色' }).waitFor();
    check((await tv.locator('nav.tavern-tabs').textContent()).includes('记忆'), 'zh: the tavern tabs are Chinese');
    await tab('对话');
    await tv.locator('[data-testid=floor] button', { hasText: '重新生成' }).first().waitFor();
    check(true, 'zh: the chat view is Chinese');
    await page.click('[data-testid=lang]');
    await tv.locator('nav.tavern-tabs button.active', { hasText: 'Chat' }).waitFor();
    check(true, 'en again');

    await page.screenshot({ path: shot, fullPage: true });
    check(errors.length === 0, `no page errors: ${errors.join('; ')}`);
    console.log(`ok: role-play UI end to end; screenshot ${shot}`);
  } finally {
    await close();
  }
  await stop(web);
  fake.child.stdin.end();
  fs.rmSync(home, { recursive: true, force: true });
}

run(main);
