// st_smoke.mjs — checks the SillyTavern loader (st_lib.mjs): ST 1.19.0's
// page comes up on 127.0.0.1, Math.random is cdsh's mulberry32 from the
// given seed and reseeds, the clock is fixed, ST's own modules are callable
// (a one-entry book through checkWorldInfo) and a request that would leave
// 127.0.0.1 is refused.
import assert from 'node:assert/strict';
import { FIXED_TIME, launchST, run } from './st_lib.mjs';

// cdsh_tavern_rng_next (src/plugins/tavern/seed.c) in node.
function mulberry32(seed) {
  let state = seed >>> 0;
  return () => {
    let t = (state = (state + 0x6D2B79F5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

run(async () => {
  const st = await launchST({ seed: 7 });
  try {
    const got = await st.call(async (_arg, api) => {
      const { getClientVersion } = await api.imp('/scripts/extensions.js').catch(() => ({}));
      void getClientVersion;
      return { now: Date.now(), iso: new Date().toISOString() };
    });
    assert.equal(got.now, FIXED_TIME, 'the page clock is fixed');
    assert.equal(got.iso, new Date(FIXED_TIME).toISOString());

    await st.seed(12345);
    const draws = await st.call(() => [Math.random(), Math.random(), Math.random()]);
    const ref = mulberry32(12345);
    assert.deepEqual(draws, [ref(), ref(), ref()], 'Math.random is mulberry32 from the seed');
    assert.equal(await st.randomCalls(), 3);

    const version = await st.call(async () => (await fetch('/version')).json());
    assert.equal(version.pkgVersion, '1.19.0', `SillyTavern's version: ${JSON.stringify(version)}`);

    // ST's own world-info engine: one keyed entry, whole words on.
    const wi = await st.call(async (arg, api) => {
      const m = await api.imp('/scripts/world-info.js');
      m.updateWorldInfoSettings({ world_info_depth: 2, world_info_budget: 25, world_info_recursive: true,
        world_info_match_whole_words: true }, ['smoke']);
      m.worldInfoCache.set('smoke', arg);
      const run1 = await m.checkWorldInfo(['I love my heart', 'hello'], 8192, true, { trigger: 'normal' });
      const run2 = await m.checkWorldInfo(['Some art here', 'hello'], 8192, true, { trigger: 'normal' });
      return [run1.worldInfoBefore, run2.worldInfoBefore];
    }, { entries: { 0: { uid: 0, key: ['art'], keysecondary: [], content: 'ART ENTRY', order: 100, position: 0,
      selective: true, selectiveLogic: 0, constant: false, disable: false, probability: 100, useProbability: true } } });
    assert.deepEqual(wi, ['', 'ART ENTRY'], 'checkWorldInfo: whole word "art" is not in "heart"');

    const blocked = await st.call(async () => {
      try {
        await fetch('http://192.0.2.1/');
        return 'fetched';
      } catch (e) {
        return `refused: ${e.name}`;
      }
    });
    assert.match(blocked, /^refused/, 'a request off 127.0.0.1 is refused');
    console.log('ok: SillyTavern 1.19.0 loads with a seeded Math.random and a fixed clock');
  } finally {
    await st.close();
  }
});
