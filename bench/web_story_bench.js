// web_story_bench.js — how the role-play chat holds up with a long story:
// a card-bound session with 500 messages (250 turns with the fake model,
// replies with *actions* and "speech"), then in headless Chromium the time
// from navigation to the transcript drawn (the page's performance mark
// 'cdsh:transcript') and the time from sending a message to its turn's end
// drawn ('cdsh:turn-end'), medians of 5 — and, beside these wall times, the
// page's main-thread CPU time for each (Chromium's thread ticks through
// CDP), which a loaded machine does not inflate. Prints figures; asserts
// nothing.
// Usage: node bench/web_story_bench.js <cdsh> <fake_model> <card.json>
'use strict';
const fs = require('node:fs');
const { playwright, startWeb, stopWeb, launch, run } = require('../tests/e2e/web_lib.js');

const [cdsh, fakeModel, sampleCard] = process.argv.slice(2);
const TURNS = Number(process.env.CDSH_BENCH_TURNS) || 250; // 500 messages
const reply = (i) => ({ chunks: [{ text: `*Seraphina nods (${i}).* "Go on," she says. The forest is **quiet** tonight, and the path bends north.` }], finish_reason: 'stop' });

async function main() {
  const chromium = playwright();
  const steps = [];
  for (let i = 0; i < TURNS + 10; i++) steps.push(reply(i));
  const served = await startWeb(cdsh, fakeModel, steps, { prefix: 'cdsh-bench-story-' });
  const base = `http://127.0.0.1:${served.web.info.port}`;
  const token = new URL(served.web.info.url).searchParams.get('token');
  const call = async (method, path, body) => {
    const r = await fetch(base + path, { method, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body) });
    return r.json();
  };
  const rpc = async (m, p) => (await call('POST', `/rpc/tavern/${m}`, { type: 'client-request', rpcId: '1', method: m, payload: p })).result.value;
  const card = await rpc('importCharacter', { fileBase64: fs.readFileSync(sampleCard).toString('base64'), book: 'import' });
  const sid = (await call('POST', '/api/sessions', { title: 'bench' })).session.id;
  await rpc('setSessionBinding', { sessionId: sid, cardId: card.cardId });
  const t0 = Date.now();
  for (let i = 0; i < TURNS; i++) {
    for (;;) {
      const r = await call('POST', `/api/sessions/${sid}/messages`, { text: `Step ${i}: I walk on.` });
      if (!r.error) break;
      await new Promise((res) => setTimeout(res, 20));
    }
    for (;;) {
      const s = await call('GET', `/api/sessions/${sid}?after=999999999`);
      if (!s.session.running) break;
      await new Promise((res) => setTimeout(res, 20));
    }
  }
  console.log(`story of ${TURNS * 2} messages played in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const { browser, close } = await launch(chromium, { width: 1400, height: 900 });
  try {
    // the page's main-thread CPU time (thread ticks: what the page costs,
    // not how long the loaded machine took to give it the CPU); each first
    // paint in a fresh tab, so its counters hold that load only
    const open = async () => {
      const p = await browser.newPage();
      const c = await p.context().newCDPSession(p);
      await c.send('Performance.enable', { timeDomain: 'threadTicks' });
      return { p, c };
    };
    const cpuOf = async (c) => {
      const m = Object.fromEntries((await c.send('Performance.getMetrics')).metrics.map((x) => [x.name, x.value]));
      return { task: m.TaskDuration * 1000, script: m.ScriptDuration * 1000, layout: (m.LayoutDuration + m.RecalcStyleDuration) * 1000 };
    };
    const minus = (a, b) => ({ task: a.task - b.task, script: a.script - b.script, layout: a.layout - b.layout });
    const frames = (p) => p.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const paints = [];
    const paintCpu = [];
    let page;
    let cdp;
    for (let k = 0; k < 5; k++) {
      if (page) await page.close();
      ({ p: page, c: cdp } = await open());
      await page.goto(`${served.web.info.url}#${sid}`);
      await page.waitForFunction(() => performance.getEntriesByName('cdsh:transcript').length > 0, null, { timeout: 60000 });
      paints.push(await page.evaluate(() => performance.getEntriesByName('cdsh:transcript')[0].startTime));
      await frames(page);
      paintCpu.push(await cpuOf(cdp));
    }
    const cpu = () => cpuOf(cdp);
    const n = await page.evaluate(() => document.querySelectorAll('.msg').length);
    const turns = [];
    const turnCpu = [];
    for (let k = 0; k < 5; k++) {
      await page.evaluate(() => performance.clearMarks('cdsh:turn-end'));
      const before = await cpu();
      await page.fill('[data-testid=input]', `One more step ${k}.`);
      const t = await page.evaluate(() => performance.now());
      await page.press('[data-testid=input]', 'Enter');
      await page.waitForFunction(() => performance.getEntriesByName('cdsh:turn-end').length > 0, null, { timeout: 60000 });
      turns.push(await page.evaluate((s) => performance.getEntriesByName('cdsh:turn-end')[0].startTime - s, t));
      await page.waitForSelector('[data-testid=stop]', { state: 'hidden' });
      await frames(page);
      turnCpu.push(minus(await cpu(), before));
    }
    const med = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)];
    console.log(`first paint of the transcript (${n} messages): median ${med(paints).toFixed(0)} ms from navigation (${paints.map((x) => x.toFixed(0)).join(', ')})`);
    console.log(`one turn, send to its end drawn: median ${med(turns).toFixed(0)} ms (${turns.map((x) => x.toFixed(0)).join(', ')})`);
    const cpuLine = (a) => `median ${med(a.map((x) => x.task)).toFixed(0)} ms of main-thread CPU (script ${med(a.map((x) => x.script)).toFixed(0)}, ` +
      `style+layout ${med(a.map((x) => x.layout)).toFixed(0)}; all: ${a.map((x) => x.task.toFixed(0)).join(', ')})`;
    console.log(`  page CPU for the first paint: ${cpuLine(paintCpu)}`);
    console.log(`  page CPU for one turn: ${cpuLine(turnCpu)}`);
    console.log(`  load average during the run: ${require('node:os').loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  } finally {
    await close();
  }
  stopWeb(served);
}

run(main);
