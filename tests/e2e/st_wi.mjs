// st_wi.mjs — the world-info differential: the same book, chat, settings,
// generation type and seed go to SillyTavern 1.19.0's own checkWorldInfo()
// (in its page, st_lib.mjs) and to `cdsh tavern preview --json --book
// --wi-settings --seed`; the activated entries (order included), their
// positions, depths and roles, and the final text of every position must be
// equal. Timed effects run turn after turn on both sides (ST keeps them in
// chat_metadata, cdsh's preview reports the state it would leave,
// worldInfo.timedAfter, which the next turn reads).
//
// Cases: one fixed case per rule, then N random ones (default 120,
// CDSH_ST_WI_CASES) drawn from a printed seed (CDSH_TEST_SEED replays a run;
// CDSH_ST_WI_ONLY=K runs random case K alone). A mismatch prints its case
// seed, the case and a minimal diff; the run ends with the agreement rate.
// Usage: node st_wi.mjs CDSH_BINARY
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchST, run } from './st_lib.mjs';

const CDSH = process.argv[2] || process.env.CDSH_BINARY;
if (!CDSH || !fs.existsSync(CDSH)) {
  console.error('usage: node st_wi.mjs CDSH_BINARY');
  process.exit(2);
}

// ---- seeded generator (mulberry32, as the page's Math.random) ----------
function rng(seed) {
  let state = seed >>> 0;
  const next = () => {
    let t = (state = (state + 0x6D2B79F5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = (xs) => xs[int(0, xs.length - 1)];
  const chance = (p) => next() < p;
  return { next, int, pick, chance, u32: () => Math.floor(next() * 4294967296) >>> 0 };
}

function runSeed() {
  const raw = process.env.CDSH_TEST_SEED;
  if (raw !== undefined && raw !== '') {
    const v = raw.startsWith('0x') ? parseInt(raw, 16) : Number(raw);
    if (!Number.isInteger(v) || v < 0) throw new Error(`CDSH_TEST_SEED=${raw} is not a whole number`);
    return v >>> 0;
  }
  // A fresh seed per run, printed so that any mismatch replays.
  return (Math.floor(Math.random() * 4294967296) >>> 0);
}

// Words in several scripts and cases: Latin, Greek (final sigma, accents),
// Cyrillic, CJK, Vietnamese (stacked diacritics, Đ).
const WORDS = [
  'dragon', 'Dragon', 'DRAGON', 'sword', 'art', 'heart', 'Kyiv', 'tower', 'moon', 'Moonlight',
  'άλφα', 'Άλφα', 'σοφία', 'ΣΟΦΙΑ', 'λόγος', 'Λόγος',
  'Москва', 'москва', 'дракон', 'ДРАКОН', 'ёлка',
  '猫', '東京', '龍', 'ドラゴン', '서울',
  'Việt', 'phở', 'Đà Lạt', 'ĐÀ LẠT', 'người',
  'straße', 'STRASSE', 'İstanbul', 'café',
];
const KEYWORDS = WORDS.concat(['dragon sword', 'the moon', 'phở bò', '东京塔']);
const REGEX_KEYS = ['/drag(on|ón)/i', '/^User:/m', '/\\bmoon\\w*/', '/[猫龍]/', '/σοφ[ιί]α/iu', '/MOSKVA|Москва/', '/(?<!he)art/'];
const TRIGGERS = ['normal', 'continue', 'impersonate', 'swipe', 'regenerate', 'quiet'];
const CHAR = { name: 'Alice', description: 'A quiet librarian from Kyiv who keeps a 猫.',
  personality: 'curious, fond of the moon', scenario: 'A tower library in Đà Lạt.',
  depthPrompt: 'Remember the 龍 above the tower.', creatorNotes: 'Written for sword and σοφία fans.' };
const PERSONA = 'User';

function sentence(r, n) {
  const parts = [];
  for (let i = 0; i < n; i++) parts.push(r.pick(WORDS));
  const punct = r.pick([' ', ', ', '! ', '. ', '… ', '—', ' (', '"']);
  return parts.join(r.chance(0.3) ? punct : ' ') + r.pick(['', '.', '!', '?', ' 。']);
}

// One random case: {book, settings, maxContext, turns:[{chat, trigger, seed}]}.
function randomCase(seed) {
  const r = rng(seed);
  const n = r.int(1, 14);
  const groups = ['g1', 'g2', 'g1,g2', 'g3'];
  const entries = {};
  for (let uid = 0; uid < n; uid++) {
    const e = {
      uid,
      key: [],
      keysecondary: [],
      comment: `entry ${uid}`,
      content: sentence(r, r.int(1, 6)),
      constant: r.chance(0.08),
      selective: true,
      selectiveLogic: r.int(0, 3),
      order: r.pick([100, 100, 50, 150, r.int(0, 300)]),
      position: r.pick([0, 0, 1, 1, 2, 3, 4, 4, 5, 6, 7]),
      disable: r.chance(0.05),
      excludeRecursion: r.chance(0.15),
      preventRecursion: r.chance(0.15),
      delayUntilRecursion: r.chance(0.12) ? r.int(1, 2) : 0,
      probability: r.chance(0.25) ? r.pick([0, 25, 50, 75]) : 100,
      useProbability: r.chance(0.8),
      depth: r.int(0, 4),
      role: r.int(0, 2),
      group: r.chance(0.3) ? r.pick(groups) : '',
      groupOverride: r.chance(0.15),
      groupWeight: r.pick([100, 100, 50, 10, 300]),
      useGroupScoring: r.chance(0.2) ? r.chance(0.5) : null,
      scanDepth: r.chance(0.2) ? r.int(0, 5) : null,
      caseSensitive: r.chance(0.2) ? r.chance(0.5) : null,
      matchWholeWords: r.chance(0.3) ? r.chance(0.5) : null,
      sticky: r.chance(0.15) ? r.int(1, 3) : null,
      cooldown: r.chance(0.15) ? r.int(1, 3) : null,
      delay: r.chance(0.1) ? r.int(1, 6) : null,
      ignoreBudget: r.chance(0.1),
      outletName: r.pick(['', 'lore', 'lore', 'side']),
      matchPersonaDescription: false,
      matchCharacterDescription: r.chance(0.08),
      matchCharacterPersonality: r.chance(0.08),
      matchCharacterDepthPrompt: r.chance(0.08),
      matchScenario: r.chance(0.08),
      matchCreatorNotes: r.chance(0.08),
      triggers: r.chance(0.15) ? [r.pick(TRIGGERS)].concat(r.chance(0.3) ? [r.pick(TRIGGERS)] : []) : [],
      addMemo: true,
      vectorized: false,
      automationId: '',
    };
    const nk = r.int(0, 3);
    for (let k = 0; k < nk; k++) e.key.push(r.chance(0.15) ? r.pick(REGEX_KEYS) : r.pick(KEYWORDS));
    if (r.chance(0.4)) {
      const ns = r.int(1, 3);
      for (let k = 0; k < ns; k++) e.keysecondary.push(r.chance(0.1) ? r.pick(REGEX_KEYS) : r.pick(KEYWORDS));
    }
    if (r.chance(0.05)) e.content = `@@activate\n${e.content}`;
    if (r.chance(0.03)) e.content = `@@dont_activate\n${e.content}`;
    entries[uid] = e;
  }
  const settings = {
    world_info_depth: r.pick([1, 2, 2, 3, 4, 6]),
    world_info_budget: r.pick([25, 25, 5, 1, 50, 100]),
    world_info_budget_cap: r.pick([0, 0, 0, 20, 60]),
    world_info_min_activations: r.pick([0, 0, 0, 1, 2, 4]),
    world_info_min_activations_depth_max: r.pick([0, 0, 3, 8]),
    world_info_max_recursion_steps: r.pick([0, 0, 0, 1, 2, 3]),
    world_info_recursive: r.chance(0.7),
    world_info_case_sensitive: r.chance(0.2),
    world_info_match_whole_words: r.chance(0.6),
    world_info_include_names: r.chance(0.8),
    world_info_use_group_scoring: r.chance(0.25),
    world_info_character_strategy: 1,
    world_info_overflow_alert: false,
  };
  // ST: a non-zero max recursion steps turns min activations off in its UI;
  // its engine still reads both, so both are drawn independently.
  const maxContext = r.pick([8192, 8192, 4096, 1024, 300, 120]);
  const turns = [];
  const msgs = [];
  const nturns = r.chance(0.35) ? r.int(2, 4) : 1;
  const first = r.int(0, 6);
  for (let i = 0; i < first; i++) msgs.push(message(r, i));
  for (let t = 0; t < nturns; t++) {
    if (t > 0) { msgs.push(message(r, msgs.length)); msgs.push(message(r, msgs.length)); }
    turns.push({ chat: msgs.slice(), trigger: r.chance(0.2) ? r.pick(TRIGGERS) : 'normal', seed: r.u32() });
  }
  return { name: `random-${seed}`, book: { name: 'lore', entries }, settings, maxContext, turns };
}

function message(r, i) {
  const user = i % 2 === 0;
  let text = sentence(r, r.int(1, 8));
  if (r.chance(0.05)) text = `  ${text}\n`;
  return { role: user ? 'user' : 'assistant', name: user ? PERSONA : CHAR.name, text };
}

// An entry with ST's defaults (newWorldInfoEntryTemplate) under `fields`.
function entry(uid, fields) {
  return {
    uid, key: [], keysecondary: [], comment: '', content: '', constant: false, vectorized: false,
    selective: true, selectiveLogic: 0, addMemo: false, order: 100, position: 0, disable: false,
    ignoreBudget: false, excludeRecursion: false, preventRecursion: false,
    matchPersonaDescription: false, matchCharacterDescription: false, matchCharacterPersonality: false,
    matchCharacterDepthPrompt: false, matchScenario: false, matchCreatorNotes: false,
    delayUntilRecursion: 0, probability: 100, useProbability: true, depth: 4, outletName: '',
    group: '', groupOverride: false, groupWeight: 100, scanDepth: null, caseSensitive: null,
    matchWholeWords: null, useGroupScoring: null, automationId: '', role: 0, sticky: null,
    cooldown: null, delay: null, triggers: [], ...fields,
  };
}

const DEFAULTS = {
  world_info_depth: 2, world_info_budget: 25, world_info_budget_cap: 0, world_info_min_activations: 0,
  world_info_min_activations_depth_max: 0, world_info_max_recursion_steps: 0, world_info_recursive: true,
  world_info_case_sensitive: false, world_info_match_whole_words: true, world_info_include_names: true,
  world_info_use_group_scoring: false, world_info_character_strategy: 1, world_info_overflow_alert: false,
};

function fixed(name, entries, { settings = {}, chat = ['hello there'], maxContext = 8192, trigger = 'normal', seed = 1, turns } = {}) {
  const msgs = chat.map((text, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', name: i % 2 === 0 ? PERSONA : CHAR.name, text }));
  const book = { name: 'lore', entries: Object.fromEntries(entries.map((e) => [e.uid, e])) };
  return { name, book, settings: { ...DEFAULTS, ...settings }, maxContext,
    turns: turns || [{ chat: msgs, trigger, seed }] };
}

// One fixed case per rule.
function fixedCases() {
  const grow = (n) => Array.from({ length: n }, (_, i) => (i % 2 ? 'the moon rises' : 'quiet night'));
  const asMsgs = (texts) => texts.map((text, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', name: i % 2 === 0 ? PERSONA : CHAR.name, text }));
  return [
    fixed('key: plain', [entry(0, { key: ['dragon'], content: 'D' })], { chat: ['a Dragon!'] }),
    fixed('whole words: art not in heart', [entry(0, { key: ['art'], content: 'A' })], { chat: ['I love my heart'] }),
    fixed('whole words off: art in heart', [entry(0, { key: ['art'], content: 'A' })], { chat: ['I love my heart'], settings: { world_info_match_whole_words: false } }),
    fixed('case sensitive', [entry(0, { key: ['Dragon'], content: 'D' }), entry(1, { key: ['dragon'], content: 'd', caseSensitive: true })], { chat: ['a Dragon'] }),
    fixed('regex key', [entry(0, { key: ['/dr[a-z]+n/i'], content: 'R' }), entry(1, { key: ['/^User: a/'], content: 'N' })], { chat: ['a DRAGON'] }),
    fixed('include names off', [entry(0, { key: ['User'], content: 'U' })], { chat: ['hi'], settings: { world_info_include_names: false } }),
    fixed('scan depth', [entry(0, { key: ['old'], content: 'O' }), entry(1, { key: ['old'], content: 'P', scanDepth: 3 })], { chat: ['old', 'mid', 'new'] }),
    fixed('AND ANY', [entry(0, { key: ['moon'], keysecondary: ['sun', 'star'], selectiveLogic: 0, content: 'X' })], { chat: ['moon and star'] }),
    fixed('NOT ALL', [entry(0, { key: ['moon'], keysecondary: ['sun', 'star'], selectiveLogic: 1, content: 'X' })], { chat: ['moon and star and sun'] }),
    fixed('NOT ANY', [entry(0, { key: ['moon'], keysecondary: ['sun', 'star'], selectiveLogic: 2, content: 'X' }), entry(1, { key: ['moon'], keysecondary: ['cloud'], selectiveLogic: 2, content: 'Y' })], { chat: ['moon and star'] }),
    fixed('AND ALL', [entry(0, { key: ['moon'], keysecondary: ['sun', 'star'], selectiveLogic: 3, content: 'X' }), entry(1, { key: ['moon'], keysecondary: ['star'], selectiveLogic: 3, content: 'Y' })], { chat: ['moon and star'] }),
    fixed('recursion', [entry(0, { key: ['moon'], content: 'the tower glows' }), entry(1, { key: ['tower'], content: 'T' })], { chat: ['moon'] }),
    fixed('recursion off', [entry(0, { key: ['moon'], content: 'the tower glows' }), entry(1, { key: ['tower'], content: 'T' })], { chat: ['moon'], settings: { world_info_recursive: false } }),
    fixed('prevent / exclude recursion', [entry(0, { key: ['moon'], content: 'tower', preventRecursion: true }), entry(1, { key: ['sun'], content: 'tower sword' }), entry(2, { key: ['tower'], content: 'T', excludeRecursion: true }), entry(3, { key: ['sword'], content: 'S' })], { chat: ['moon sun'] }),
    fixed('delay until recursion levels', [entry(0, { key: ['moon'], content: 'tower' }), entry(1, { key: ['tower'], content: 'sword', delayUntilRecursion: 1 }), entry(2, { key: ['sword'], content: 'S', delayUntilRecursion: 2 }), entry(3, { key: ['moon'], content: 'late', delayUntilRecursion: 2 })], { chat: ['moon'] }),
    fixed('max recursion steps', [entry(0, { key: ['a1'], content: 'a2' }), entry(1, { key: ['a2'], content: 'a3' }), entry(2, { key: ['a3'], content: 'a4' })], { chat: ['a1'], settings: { world_info_max_recursion_steps: 2 } }),
    fixed('min activations', [entry(0, { key: ['deep'], content: 'D' }), entry(1, { key: ['deeper'], content: 'E' })], { chat: ['deeper', 'x', 'deep', 'y', 'z'], settings: { world_info_min_activations: 2, world_info_depth: 1 } }),
    fixed('min activations depth max', [entry(0, { key: ['deep'], content: 'D' })], { chat: ['deep', 'a', 'b', 'c', 'd'], settings: { world_info_min_activations: 1, world_info_depth: 1, world_info_min_activations_depth_max: 2 } }),
    fixed('constant and disabled', [entry(0, { constant: true, content: 'C' }), entry(1, { constant: true, disable: true, content: 'X' })]),
    fixed('order and positions', [0, 1, 2, 3, 4, 5, 6, 7].map((p) => entry(p, { constant: true, position: p, order: 100 - p * 10, content: `P${p}`, outletName: p === 7 ? 'side' : '', depth: p % 3, role: p % 3 }))),
    fixed('equal order keeps book order', [entry(0, { constant: true, content: 'first' }), entry(1, { constant: true, content: 'second' }), entry(2, { constant: true, content: 'third', order: 100 })]),
    fixed('outlet join order', [entry(0, { constant: true, position: 7, outletName: 'o', content: 'A', order: 10 }), entry(1, { constant: true, position: 7, outletName: 'o', content: 'B', order: 20 })]),
    fixed('depth groups by depth and role', [entry(0, { constant: true, position: 4, depth: 2, role: 1, content: 'A', order: 10 }), entry(1, { constant: true, position: 4, depth: 2, role: 1, content: 'B', order: 20 }), entry(2, { constant: true, position: 4, depth: 2, role: 0, content: 'C' })]),
    fixed('inclusion group: override', [entry(0, { key: ['moon'], group: 'g', content: 'A' }), entry(1, { key: ['moon'], group: 'g', groupOverride: true, content: 'B', order: 50 }), entry(2, { key: ['moon'], group: 'g', groupOverride: true, content: 'C', order: 60 })], { chat: ['moon'] }),
    fixed('inclusion group: weighted random', [entry(0, { key: ['moon'], group: 'g', groupWeight: 10, content: 'A' }), entry(1, { key: ['moon'], group: 'g', groupWeight: 90, content: 'B' })], { chat: ['moon'], seed: 42 }),
    fixed('inclusion group: scoring', [entry(0, { key: ['moon'], group: 'g', content: 'A' }), entry(1, { key: ['moon', 'star'], group: 'g', content: 'B' })], { chat: ['moon star'], settings: { world_info_use_group_scoring: true } }),
    fixed('inclusion groups: several', [entry(0, { key: ['moon'], group: 'g1, g2', content: 'A', groupOverride: true }), entry(1, { key: ['moon'], group: 'g2', content: 'B' })], { chat: ['moon'] }),
    fixed('inclusion groups: a shared member removed twice', [entry(0, { key: ['moon'], group: 'g1,g2', content: 'A' }), entry(1, { key: ['moon'], group: 'g1', groupOverride: true, content: 'B' }), entry(2, { key: ['moon'], group: 'g2', groupOverride: true, content: 'C' }), entry(3, { key: ['moon'], content: 'D' })], { chat: ['moon'], settings: { world_info_recursive: false } }),
    fixed('inclusion groups: a removed member still weighs', [entry(0, { key: ['moon'], group: 'g1,g2', content: 'A', groupWeight: 300 }), entry(1, { key: ['moon'], group: 'g1', groupOverride: true, content: 'B' }), entry(2, { key: ['moon'], group: 'g2', content: 'C' }), entry(3, { key: ['moon'], content: 'D' })], { chat: ['moon'], seed: 11 }),
    fixed('inclusion groups: index names first', [entry(0, { key: ['moon'], group: 'b', content: 'A' }), entry(1, { key: ['moon'], group: 'b', content: 'B' }), entry(2, { key: ['moon'], group: '10', content: 'C' }), entry(3, { key: ['moon'], group: '10', content: 'D' }), entry(4, { key: ['moon'], group: '9', content: 'E' }), entry(5, { key: ['moon'], group: '9', content: 'F' })], { chat: ['moon'], seed: 5 }),
    fixed('inclusion group: constant loser and max recursion steps', [entry(0, { constant: true, group: 'g', content: 'moon' }), entry(1, { key: ['moon'], group: 'g', groupOverride: true, content: 'star' }), entry(2, { key: ['star'], content: 'S' }), entry(3, { constant: true, group: 'g, h', content: 'H' })], { chat: ['moon'], settings: { world_info_max_recursion_steps: 2 } }),
    fixed('probability', [entry(0, { key: ['moon'], probability: 50, content: 'A' }), entry(1, { key: ['moon'], probability: 50, content: 'B' }), entry(2, { key: ['moon'], probability: 0, useProbability: false, content: 'C' })], { chat: ['moon'], seed: 7 }),
    fixed('budget', [entry(0, { key: ['moon'], content: 'x'.repeat(40), order: 300 }), entry(1, { key: ['moon'], content: 'y'.repeat(40) }), entry(2, { key: ['moon'], content: 'z'.repeat(40), ignoreBudget: true, order: 10 })], { chat: ['moon'], maxContext: 100, settings: { world_info_budget: 25 } }),
    fixed('budget cap', [entry(0, { key: ['moon'], content: 'x'.repeat(40), order: 300 }), entry(1, { key: ['moon'], content: 'y'.repeat(40) })], { chat: ['moon'], settings: { world_info_budget_cap: 20 } }),
    fixed('generation-type triggers', [entry(0, { key: ['moon'], triggers: ['continue'], content: 'C' }), entry(1, { key: ['moon'], triggers: ['normal', 'swipe'], content: 'N' })], { chat: ['moon'], trigger: 'swipe' }),
    fixed('generation-type triggers: impersonate', [entry(0, { key: ['moon'], triggers: ['impersonate'], content: 'I' }), entry(1, { key: ['moon'], triggers: ['quiet', 'swipe'], content: 'Q' }), entry(2, { key: ['moon'], triggers: ['normal'], content: 'N' })], { chat: ['moon'], trigger: 'impersonate' }),
    fixed('generation-type triggers: quiet', [entry(0, { key: ['moon'], triggers: ['impersonate'], content: 'I' }), entry(1, { key: ['moon'], triggers: ['quiet', 'swipe'], content: 'Q' }), entry(2, { constant: true, triggers: ['quiet'], content: 'C' })], { chat: ['moon'], trigger: 'quiet' }),
    fixed('decorators', [entry(0, { content: '@@activate\nA' }), entry(1, { key: ['moon'], content: '@@dont_activate\nB' }), entry(2, { content: '@@activate \nC' })], { chat: ['moon'] }),
    fixed('character fields', [entry(0, { key: ['librarian'], matchCharacterDescription: true, content: 'D' }), entry(1, { key: ['curious'], matchCharacterPersonality: true, content: 'P' }), entry(2, { key: ['Lạt'], matchScenario: true, content: 'S' }), entry(3, { key: ['librarian'], content: 'no' }), entry(4, { key: ['龍'], matchCharacterDepthPrompt: true, content: 'DP' }), entry(5, { key: ['σοφία'], matchCreatorNotes: true, content: 'CN' }), entry(6, { key: ['sword'], content: 'no2' })]),
    fixed('Greek: accents and final sigma', [entry(0, { key: ['άλφα'], content: 'A' }), entry(1, { key: ['ΣΟΦΙΑΣ'], content: 'S' })], { chat: ['ΆΛΦΑ και σοφίας'] }),
    fixed('Cyrillic', [entry(0, { key: ['москва'], content: 'M' }), entry(1, { key: ['ЁЛКА'], content: 'E' })], { chat: ['Москва, ёлка!'] }),
    fixed('CJK whole words', [entry(0, { key: ['猫'], content: 'C' }), entry(1, { key: ['東京'], content: 'T' })], { chat: ['我的猫在東京塔'] }),
    fixed('Vietnamese', [entry(0, { key: ['đà lạt'], content: 'V' }), entry(1, { key: ['PHỞ'], content: 'P' })], { chat: ['ĐÀ LẠT có phở ngon'] }),
    fixed('Unicode case: ẞ, İ, fullwidth', [entry(0, { key: ['ß'], content: 'S' }), entry(1, { key: ['i̇stanbul'], content: 'I' }), entry(2, { key: ['ａｂｃ'], content: 'F' })], { chat: ['ẞ İstanbul ＡＢＣ'] }),
    fixed('sticky and cooldown over turns', [entry(0, { key: ['moon'], sticky: 2, cooldown: 2, content: 'S' }), entry(1, { key: ['moon'], cooldown: 1, content: 'C' })], {
      turns: [2, 4, 6, 8, 10].map((n, i) => ({ chat: asMsgs(i === 0 ? ['moon', 'x'] : grow(n)).map((m, j) => (i === 2 && j === n - 1 ? { ...m, text: 'moon' } : m)), trigger: 'normal', seed: i })),
    }),
    fixed('delay', [entry(0, { key: ['moon'], delay: 3, content: 'D' })], {
      turns: [1, 3, 5].map((n, i) => ({ chat: asMsgs(Array.from({ length: n }, () => 'moon')), trigger: 'normal', seed: i })),
    }),
  ];
}

// ---- SillyTavern's side (runs in its page) ------------------------------
async function stSetup(st) {
  await st.call(async (_a, api) => {
    const script = await api.imp('/script.js');
    const tok = await api.imp('/scripts/tokenizers.js');
    const pu = await api.imp('/scripts/power-user.js');
    // No API connected: ST's own fallback estimate (bytes / 3.35), the one
    // cdsh uses without a tokenizer.
    script.changeMainAPI('kobold');
    pu.power_user.tokenizer = tok.tokenizers.NONE;
  });
}

async function stTurn(st, c, turn, first) {
  return st.call(async (a, api) => {
    const wi = await api.imp('/scripts/world-info.js');
    const script = await api.imp('/script.js');
    if (a.first) {
      for (const k of Object.keys(script.chat_metadata)) delete script.chat_metadata[k];
      wi.worldInfoCache.clear();
    }
    wi.worldInfoCache.set(a.book.name, a.book);
    wi.updateWorldInfoSettings(a.settings, [a.book.name]);
    api.seed(a.seed);
    const names = a.settings.world_info_include_names;
    const chat = a.chat.map((m) => (names ? `${m.name}: ${m.text}` : m.text)).reverse();
    const res = await wi.checkWorldInfo(chat, a.maxContext, false, {
      personaDescription: '', characterDescription: a.char.description, characterPersonality: a.char.personality,
      characterDepthPrompt: a.char.depthPrompt, scenario: a.char.scenario, creatorNotes: a.char.creatorNotes,
      trigger: a.trigger,
    });
    const roles = ['system', 'user', 'assistant'];
    return {
      activated: [...res.allActivatedEntries].map((e) => `${e.world}.${e.uid}`),
      before: res.worldInfoBefore,
      after: res.worldInfoAfter,
      examples: res.EMEntries.map((e) => `${e.position === 0 ? 'before' : 'after'}:${e.content}`),
      anTop: res.ANBeforeEntries,
      anBottom: res.ANAfterEntries,
      depth: res.WIDepthEntries.map((d) => `${d.depth}/${roles[d.role] ?? d.role}:${d.entries.join('\n')}`),
      outlets: Object.fromEntries(Object.entries(res.outletEntries).map(([k, v]) => [k, v.join('\n')])),
      randomCalls: 0,
    };
  }, { book: c.book, settings: c.settings, chat: turn.chat, trigger: turn.trigger, seed: turn.seed,
    maxContext: c.maxContext, char: CHAR, first });
}

// ---- cdsh's side ---------------------------------------------------------
function cdshEnv(home) {
  return { ...process.env, CDSH_HOME: home, CDSH_MODEL: 'fake-model', DEEPSEEK_API_KEY: '', CDSH_API_KEY: '' };
}

function cdshSetup(home) {
  const card = path.join(home, 'alice.json');
  fs.writeFileSync(card, JSON.stringify({ spec: 'chara_card_v2', spec_version: '2.0', data: {
    name: CHAR.name, description: CHAR.description, personality: CHAR.personality, scenario: CHAR.scenario,
    first_mes: 'Hello.', mes_example: '', creator_notes: CHAR.creatorNotes, system_prompt: '', post_history_instructions: '',
    alternate_greetings: [], tags: [], creator: '', character_version: '',
    extensions: { depth_prompt: { prompt: CHAR.depthPrompt, depth: 4, role: 'system' } } } }));
  const out = execFileSync(CDSH, ['tavern', 'import', card, '--json'], { env: cdshEnv(home), encoding: 'utf8' });
  const id = JSON.parse(out).cardId || JSON.parse(out).id;
  assert.ok(id, `cdsh tavern import: ${out}`);
  return id;
}

function cdshTurn(home, cardId, c, turn, first) {
  const dir = path.join(home, 'case');
  fs.mkdirSync(dir, { recursive: true });
  const state = path.join(home, 'tavern', 'state', `${cardId}.json`);
  if (first) fs.rmSync(state, { force: true });
  fs.writeFileSync(path.join(dir, 'lore.json'), JSON.stringify(c.book));
  fs.writeFileSync(path.join(dir, 'chat.json'), JSON.stringify(turn.chat));
  fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify(c.settings));
  let out;
  try {
    out = execFileSync(CDSH, ['tavern', 'preview', cardId, '--json', '--chat', path.join(dir, 'chat.json'),
      '--book', path.join(dir, 'lore.json'), '--wi-settings', path.join(dir, 'settings.json'),
      '--context', String(c.maxContext), '--seed', String(turn.seed), '--generation-type', turn.trigger],
    { env: cdshEnv(home), encoding: 'utf8', maxBuffer: 64 << 20 });
  } catch (e) {
    return { error: `cdsh tavern preview failed (${e.status}): ${e.stdout || ''}${e.stderr || ''}` };
  }
  const plan = JSON.parse(out);
  if (!plan.ok) return { error: `cdsh tavern preview: ${out}` };
  const w = plan.worldInfo;
  fs.mkdirSync(path.dirname(state), { recursive: true });
  fs.writeFileSync(state, JSON.stringify({ timed: w.timedAfter || {} }));
  const roles = ['system', 'user', 'assistant'];
  return {
    activated: w.activated.map((e) => `${e.book}.${e.uid}`),
    before: w.before,
    after: w.after,
    examples: w.examples.map((e) => `${e.position}:${e.content}`),
    anTop: w.anTop,
    anBottom: w.anBottom,
    depth: w.depth.map((d) => `${d.depth}/${roles[d.role] ?? d.role}:${d.content}`),
    outlets: w.outlets,
    randomCalls: 0,
  };
}

// The fields that differ, each as {field, st, cdsh}.
function diff(a, b) {
  const out = [];
  for (const k of ['activated', 'before', 'after', 'examples', 'anTop', 'anBottom', 'depth', 'outlets']) {
    const x = JSON.stringify(a[k]);
    const y = JSON.stringify(b[k]);
    if (x !== y) out.push({ field: k, st: a[k], cdsh: b[k] });
  }
  return out;
}

// Smallest failing book: drops entries while the mismatch stays.
async function minimise(st, home, cardId, c, ti) {
  let cur = c;
  const fails = async (cc) => {
    let d = [];
    for (let t = 0; t <= ti; t++) {
      const a = await stTurn(st, cc, cc.turns[t], t === 0);
      const b = cdshTurn(home, cardId, cc, cc.turns[t], t === 0);
      d = b.error ? [{ field: 'error', st: '', cdsh: b.error }] : diff(a, b);
    }
    return d.length > 0;
  };
  for (const uid of Object.keys(c.book.entries)) {
    const entries = { ...cur.book.entries };
    delete entries[uid];
    const cand = { ...cur, book: { ...cur.book, entries } };
    if (await fails(cand)) cur = cand;
  }
  return cur;
}

async function runCase(st, home, cardId, c, { minimal = true } = {}) {
  for (let t = 0; t < c.turns.length; t++) {
    const a = await stTurn(st, c, c.turns[t], t === 0);
    const b = cdshTurn(home, cardId, c, c.turns[t], t === 0);
    const d = b.error ? [{ field: 'error', st: '', cdsh: b.error }] : diff(a, b);
    if (d.length) {
      const small = minimal ? await minimise(st, home, cardId, c, t) : c;
      return { turn: t, diff: d, small };
    }
  }
  return null;
}

run(async () => {
  const seed = runSeed();
  const ncases = Number(process.env.CDSH_ST_WI_CASES || 120);
  const only = process.env.CDSH_ST_WI_ONLY;
  console.log(`test seed (st_wi): ${seed} (replay with CDSH_TEST_SEED=${seed})`);
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'cdsh-st-wi-'));
  const st = await launchST({ seed: 0 });
  const failures = [];
  let total = 0;
  try {
    await stSetup(st);
    const cardId = cdshSetup(home);
    const r = rng(seed);
    const randoms = Array.from({ length: ncases }, () => r.u32());
    const cases = [];
    if (only === undefined) for (const c of fixedCases()) cases.push({ c, label: `fixed "${c.name}"` });
    randoms.forEach((s, k) => {
      if (only === undefined || Number(only) === k) cases.push({ c: randomCase(s), label: `random #${k} (case seed ${s})` });
    });
    for (const { c, label } of cases) {
      total++;
      const bad = await runCase(st, home, cardId, c);
      if (bad) {
        failures.push(label);
        console.log(`MISMATCH ${label}, turn ${bad.turn}${label.startsWith('random') ? ` — replay: CDSH_TEST_SEED=${seed} CDSH_ST_WI_ONLY=${label.match(/#(\d+)/)[1]}` : ''}`);
        for (const d of bad.diff) console.log(`  ${d.field}:\n    ST:   ${JSON.stringify(d.st)}\n    cdsh: ${JSON.stringify(d.cdsh)}`);
        console.log(`  minimal book (${Object.keys(bad.small.book.entries).length} entries), settings, turns:\n    ${JSON.stringify(bad.small.book.entries)}\n    ${JSON.stringify(bad.small.settings)} maxContext ${bad.small.maxContext}\n    ${JSON.stringify(bad.small.turns.slice(0, bad.turn + 1))}`);
      }
    }
  } finally {
    await st.close();
    fs.rmSync(home, { recursive: true, force: true });
  }
  const agree = total - failures.length;
  console.log(`world-info agreement with SillyTavern 1.19.0: ${agree}/${total} cases (${(100 * agree / total).toFixed(1)} %), seed ${seed}`);
  if (failures.length) throw new Error(`${failures.length} case(s) differ from SillyTavern: ${failures.join('; ')}`);
});
