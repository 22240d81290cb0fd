// panel_cdp.js — drives Chromium over the DevTools protocol (no extra npm
// packages) through the xiangqi panel served by test_xq_plugin_panel.c:
// click the h2 cannon and e2, see the engine's reply without reloading, a
// change made outside the page arrives through plugin/state events, undo,
// hint arrows, review chart. Prints "panel ok"; exits 77 when Chromium
// cannot start. Usage: node --experimental-websocket panel_cdp.js URL SESSION
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const [url, sessionId] = process.argv.slice(2);
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'cdsh-xq-chromium-'));
const chrome = spawn('/usr/bin/chromium', [
  '--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run',
  '--remote-debugging-port=0', `--user-data-dir=${profile}`, 'about:blank',
], { stdio: ['ignore', 'ignore', 'pipe'] });

// Stops Chromium (SIGTERM lets it take its helper processes down with it;
// SIGKILL after 5 s), waits for it to be gone (its profile is written until
// then), removes the profile and exits with `code`.
async function shutdown(code) {
  for (const [signal, ms] of [['SIGTERM', 5000], ['SIGKILL', 5000]]) {
    if (chrome.exitCode !== null || chrome.signalCode !== null) break;
    const gone = new Promise((resolve) => { chrome.once('exit', resolve); setTimeout(resolve, ms); });
    chrome.kill(signal);
    await gone;
  }
  try { fs.rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 }); } catch {}
  process.exit(code);
}

function fail(msg) {
  throw new Error(`check failed: ${msg}`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function browserUrl() {
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error('no DevTools URL')), 20000);
    chrome.stderr.on('data', (d) => {
      buf += d;
      const m = buf.match(/DevTools listening on (ws:\/\/\S+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    chrome.once('exit', () => reject(new Error('chromium exited')));
  });
}

async function main() {
  let ws;
  try { ws = await browserUrl(); } catch (e) { console.log(`skipped: ${e.message}`); await shutdown(77); }
  const port = new URL(ws).port;
  let pages = [];
  for (let i = 0; i < 50 && !pages.length; i++) {
    pages = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()).filter((t) => t.type === 'page');
    if (!pages.length) await sleep(100);
  }
  const sock = new WebSocket(pages[0].webSocketDebuggerUrl);
  await new Promise((r, j) => { sock.onopen = r; sock.onerror = j; });
  let id = 0;
  const waiting = new Map();
  const logs = [];
  sock.onmessage = (m) => {
    const msg = JSON.parse(m.data);
    if (msg.id && waiting.has(msg.id)) { waiting.get(msg.id)(msg); waiting.delete(msg.id); }
    if (msg.method === 'Runtime.consoleAPICalled') logs.push(msg.params.args.map((a) => a.value).join(' '));
    if (msg.method === 'Runtime.exceptionThrown') logs.push(JSON.stringify(msg.params.exceptionDetails));
  };
  const send = (method, params = {}) => new Promise((r) => {
    const n = ++id;
    waiting.set(n, r);
    sock.send(JSON.stringify({ id: n, method, params }));
  });
  const js = async (expr) => {
    const r = await send('Runtime.evaluate', { expression: expr, awaitPromise: true, returnByValue: true });
    if (r.result.exceptionDetails) throw new Error(`${expr}: ${JSON.stringify(r.result.exceptionDetails)}`);
    return r.result.result.value;
  };
  const until = async (expr, what, ms = 10000) => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      if (await js(expr)) return;
      await sleep(50);
    }
    fail(`${what} (logs: ${logs.join(' | ')})`);
  };
  const click = (sel) => js(`(() => { const e = document.querySelector(${JSON.stringify(sel)});
    if (!e) return false; e.dispatchEvent(new MouseEvent('click', { bubbles: true })); return true; })()`);
  const count = (sel) => js(`document.querySelectorAll(${JSON.stringify(sel)}).length`);

  await send('Runtime.enable');
  await send('Page.enable');
  await send('Page.navigate', { url });
  await until(`document.querySelectorAll('.xq-piece').length === 32`, 'the board shows 32 pieces');
  if ((await js(`document.querySelector('.xq-piece[data-index="70"] text').textContent`)) !== '炮')
    fail('h2 (index 70) holds the red cannon 炮');
  if (!(await click('.xq-piece[data-index="70"]'))) fail('the cannon is clickable');
  await until(`document.querySelectorAll('.xq-target').length > 0`, 'legal targets appear');
  if (!(await js(`!!document.querySelector('.xq-target[data-index="67"]')`))) fail('e2 is a target');
  // a black piece is not movable on red's turn: clicking it selects nothing
  await click('.xq-piece[data-index="1"]');
  await click('.xq-target[data-index="67"]');
  await until(`document.querySelectorAll('.xq-moves li').length === 2`, 'the engine replied (two moves listed)');
  const first = await js(`document.querySelector('.xq-moves li').textContent`);
  if (first !== '炮二平五') fail(`first move in Chinese notation, got ${first}`);
  if ((await count('.xq-last')) !== 2) fail('last move marked on two points');

  // a change made elsewhere (the person's /xiangqi, another tab) arrives by SSE
  const rpc = async (endpoint, payload) => {
    const res = await fetch(new URL(`/rpc/xiangqi-mate/${endpoint}`, url), {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ type: 'client-request', rpcId: 'x1', method: endpoint, payload: { sessionId, ...payload } }),
    });
    return (await res.json()).result;
  };
  const r = await rpc('new', { side: 'b', opponent: 'local' });
  if (!r.ok) fail(`out-of-band new: ${JSON.stringify(r)}`);
  await until(`document.querySelectorAll('.xq-moves li').length === 1`, 'the new game arrived through plugin/state');

  // hint arrows on the person's turn
  await click('button[data-action="hint"]');
  await until(`document.querySelectorAll('.xq-arrow').length === 3`, 'three hint arrows');
  // play a black move by clicking: the h9 horse (index 7) to g7 (index 24)
  await click('.xq-piece[data-index="7"]');
  await until(`!!document.querySelector('.xq-target[data-index="24"]')`, 'g7 is a target of the h9 horse');
  await click('.xq-target[data-index="24"]');
  await until(`document.querySelectorAll('.xq-moves li').length === 3`, 'the reply to the horse move');
  if ((await count('.xq-arrow')) !== 0) fail('hint arrows are cleared after a move');
  // undo gives the person's move back
  await click('button[data-action="undo"]');
  await until(`document.querySelectorAll('.xq-moves li').length === 1`, 'undo took back two plies');
  // review chart
  await click('.xq-piece[data-index="7"]');
  await click('.xq-target[data-index="24"]');
  await until(`document.querySelectorAll('.xq-moves li').length === 3`, 'moved again');
  await click('button[data-action="review"]');
  await until(`!document.querySelector('.xq-chart').hasAttribute('hidden') && !!document.querySelector('.xq-chart polyline')`,
    'the review chart is drawn');
  const points = await js(`document.querySelector('.xq-chart polyline').getAttribute('points').split(' ').length`);
  if (points !== 4) fail(`one chart point per ply plus the start, got ${points}`);
  if (!(await js(`document.querySelector('button[data-action="fallback"]').disabled`)))
    fail('the fallback button is disabled while nobody is thinking');
  console.log('panel ok');
  sock.close();
  await shutdown(0);
}

main().catch(async (e) => {
  console.error(e.message.startsWith('check failed') ? e.message : e.stack || String(e));
  await shutdown(1);
});
