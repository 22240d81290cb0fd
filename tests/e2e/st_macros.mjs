// st_macros.mjs — the macro differential (issue 18, item 8's macro part):
// SillyTavern 1.19.0's own macro engine (MacroEngine.evaluate in its page,
// through st_lib.mjs: headless Chromium, Math.random = mulberry32 from the
// case's seed, the clock fixed) against cdsh's (st_macro_eval, the engine
// of src/plugins/tavern/macros.c) on the same text, names, card fields,
// chat, variables, settings and seed. Compared byte for byte: the output
// and the variables afterwards. Cases: the registry (the same 136 names
// in both), every example usage ST's registry gives for each macro, fixed
// cases per rule, and CDSH_MACRO_CASES (default 300) strings generated from
// a printed seed (CDSH_TEST_SEED replays it). A mismatch prints its case and
// seed. {{random}} draws fresh entropy in ST, so its output is checked for
// membership; the macros cdsh declares unsupported must stay verbatim.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { FIXED_TIME, launchST, run } from './st_lib.mjs';

const EVAL = process.env.CDSH_MACRO_EVAL;
if (!EVAL) throw new Error('CDSH_MACRO_EVAL (the st_macro_eval binary) is not set');

function mulberry32(seed) {
  let s = seed >>> 0;
  return () => {
    let t = (s = (s + 0x6D2B79F5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SEED = process.env.CDSH_TEST_SEED ? Number(process.env.CDSH_TEST_SEED) >>> 0
  : (Math.floor(Math.random() * 2 ** 32) >>> 0);
const COUNT = Number(process.env.CDSH_MACRO_CASES || 300);
console.log(`st_macros: seed ${SEED} (replay with CDSH_TEST_SEED=${SEED}), ${COUNT} generated cases`);

// The shared scene: names, card fields (plain text, so ST's baseChatReplace
// of them is the identity apart from trimming), chat and outlets.
const SCENE = {
  user: 'Ann', char: 'Seraphina', chatId: 'chat-macro-diff',
  description: 'A guardian of the forest.', personality: 'kind, stern', scenario: 'a glade at dusk',
  persona: 'a traveller', firstMessage: 'Welcome, traveller.', alternateGreetings: ['Hello again.', 'Who goes there?'],
  mesExamples: '<START>\nAnn: hi\nSeraphina: hello\n<START>\nSeraphina: again', version: '1.4',
  charPrompt: 'Stay in character.', charInstruction: 'Be brief.', charDepthPrompt: 'Remember the oath.',
  creatorNotes: 'Made for tests.', outlets: { lore: 'The old oak.', empty: '' },
  chat: [
    { name: 'Seraphina', is_user: false, mes: 'Welcome, traveller.' },
    { name: 'Ann', is_user: true, mes: 'Where am I?' },
    { name: 'Seraphina', is_user: false, mes: 'In my glade.' },
    { name: 'Ann', is_user: true, mes: 'Thank you.' },
  ],
};

// ---- the ST side -------------------------------------------------------------

async function stPrepare(st) {
  return st.call(async (scene, api) => {
    const { macros } = await api.imp('/scripts/macros/macro-system.js');
    const script = await api.imp('/script.js');
    const ext = await api.imp('/scripts/extensions.js');
    const pu = await api.imp('/scripts/power-user.js');
    const names = macros.registry.getAllMacros().map((d) => ({ name: d.name, examples: d.exampleUsage || [],
      minArgs: d.minArgs, maxArgs: d.maxArgs, list: !!d.list, aliasOf: d.aliasOf || null }));
    // cdsh is a chat-completion client: ST's "openai" API (mesExamples' headings, prompt sizes).
    window.$('#main_api').val('openai');
    script.changeMainAPI('openai');
    script.chat.length = 0;
    for (const m of scene.chat) script.chat.push({ ...m, is_system: false, send_date: '' });
    for (const [k, v] of Object.entries(scene.outlets)) script.extension_prompts[`customWIOutlet_${k}`] = { value: v };
    window.__cdshScene = scene;
    window.__cdshEval = (text) => {
      const env = {
        content: text, contentHash: 0,
        names: { user: scene.user, char: scene.char, group: scene.char, groupNotMuted: scene.char, notChar: scene.user },
        character: { charPrompt: scene.charPrompt, charInstruction: scene.charInstruction, description: scene.description,
          personality: scene.personality, scenario: scene.scenario, persona: scene.persona,
          mesExamplesRaw: scene.mesExamples, version: scene.version, charDepthPrompt: scene.charDepthPrompt,
          creatorNotes: scene.creatorNotes, firstMessage: scene.firstMessage, alternateGreetings: scene.alternateGreetings },
        system: { model: 'gpt-test' },
        functions: { postProcess: (x) => x, original: (() => { let used = false; return () => (used ? '' : (used = true, 'ORIG')); })() },
        dynamicMacros: {}, extra: {},
      };
      return env;
    };
    return {
      names,
      mainApi: script.main_api,
      maxContext: script.getMaxContextTokens(), maxResponse: script.getMaxResponseTokens(),
      instruct: pu.power_user.instruct, sysprompt: pu.power_user.sysprompt, context: pu.power_user.context,
      reasoning: pu.power_user.reasoning, extVarsOk: !!ext.extension_settings.variables,
    };
  }, SCENE);
}

async function stRun(st, cases) {
  return st.call(async (cs, api) => {
    const { macros } = await api.imp('/scripts/macros/macro-system.js');
    const script = await api.imp('/script.js');
    const ext = await api.imp('/scripts/extensions.js');
    const { getStringHash } = await api.imp('/scripts/utils.js');
    const { eventSource, event_types } = await api.imp('/scripts/events.js');
    const out = [];
    for (const c of cs) {
      // ST's {{lastGenerationType}} tracks GENERATION_STARTED (not dry runs)
      if (c.gen !== undefined) await eventSource.emit(event_types.GENERATION_STARTED, c.gen, {}, c.dry === true);
      script.chat_metadata.variables = { ...(c.local || {}) };
      ext.extension_settings.variables.global = { ...(c.global || {}) };
      script.chat_metadata.main_chat = window.__cdshScene.chatId;
      delete script.chat_metadata.chat_id_hash;
      delete script.chat_metadata.pick_reroll_seed;
      api.seed(c.seed);
      const env = window.__cdshEval(c.text);
      env.contentHash = getStringHash(c.text);
      let r;
      try {
        r = macros.engine.evaluate(c.text, env);
      } catch (e) {
        r = `THROW ${e}`;
      }
      out.push({ out: r, local: script.chat_metadata.variables, global: ext.extension_settings.variables.global });
    }
    return JSON.parse(JSON.stringify(out));
  }, cases);
}

// ---- the cdsh side -----------------------------------------------------------

function cdshRun(cases, st) {
  const chat = SCENE.chat;
  const last = (f) => { for (let i = chat.length - 1; i >= 0; i--) if (f(chat[i])) return chat[i].mes; return ''; };
  const env = {
    user: SCENE.user, char: SCENE.char, description: SCENE.description, personality: SCENE.personality,
    scenario: SCENE.scenario, persona: SCENE.persona, firstMessage: SCENE.firstMessage,
    alternateGreetings: SCENE.alternateGreetings, mesExamples: SCENE.mesExamples, version: SCENE.version,
    charPrompt: SCENE.charPrompt, charInstruction: SCENE.charInstruction, charDepthPrompt: SCENE.charDepthPrompt,
    creatorNotes: SCENE.creatorNotes, model: 'gpt-test', original: 'ORIG', chatId: SCENE.chatId,
    lastMessage: last(() => true), lastUserMessage: last((m) => m.is_user), lastCharMessage: last((m) => !m.is_user),
    lastMessageId: chat.length - 1, chatLength: chat.length,
    maxContext: st.maxContext, maxResponse: st.maxResponse, generationType: '',
    instruct: st.instruct, sysprompt: st.sysprompt, context: st.context, reasoning: st.reasoning,
    outlets: SCENE.outlets, nowMs: FIXED_TIME, tzOffsetMin: 0,
  };
  const input = JSON.stringify(cases.map((c) => ({ text: c.text, local: c.local || {}, global: c.global || {},
    env: { ...env, seed: c.seed, generationType: c.genAfter ?? '' } })));
  const r = spawnSync(EVAL, [], { input, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`st_macro_eval failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout);
}

// ---- cases -------------------------------------------------------------------

const FIXED = [
  '{{setvar::a::1}}A={{getvar::a}} {{setvar::a::2}}B={{getvar::a}}',
  '{{ char }} and {{ user }}', '{{CHAR}}/{{User}}', '<USER> <BOT> <CHAR> <GROUP> <CHARIFNOTGROUP>',
  '{{roll::1d1}}', '{{reverse::abc}}', '{{date}} {{time}} {{weekday}} {{isodate}} {{isotime}}',
  '{{time::UTC+2}} {{time_UTC-5}} {{datetimeformat::dddd, MMMM Do YYYY, h:mm:ss a [Q]Q}}',
  '{{datetimeformat::LLLL}}|{{datetimeformat::l LT LTS}}|{{datetimeformat::W WW w ww GGGG gggg E e DDD DDDD}}',
  '{{timeDiff::2026-12-02T10:00:00Z::2026-12-01T10:00:00Z}}|{{timeDiff::2026-01-01::2026-03-15}}|{{timeDiff::x::y}}',
  '{{if 1}}yes{{else}}no{{/if}}|{{if 0}}yes{{else}}no{{/if}}|{{if !description}}none{{else}}has{{/if}}',
  '{{if description}}\n  # Description\n  {{description}}\n{{/if}}',
  '{{#if 1}}  kept  {{/if}}|{{trim}}  x  {{/trim}}|a\n{{trim}}\nb',
  '{{if::{{getvar::flag}}::set}}{{setvar::flag::on}}{{if::{{getvar::flag}}::set}}',
  '{{.hp = 10}}{{.hp -= 3}}{{.hp}} {{.hp++}} {{.hp > 5}} {{$g ??= x}}{{$g}} {{.nope || fb}}',
  '{{setvar::list::[]}}{{addvar::list::a}}{{addvar::list::b}}{{getvar::list}} {{getvarkey::list::1}}',
  '{{setvarkey::obj::name::Ann}}{{setvarkey::obj::age::30}}{{getvar::obj}}|{{getvarkey::obj::age}}',
  '{{incvar::n}}{{incvar::n}}{{decvar::m}}{{addvar::s::x}}{{addvar::s::y}}|{{getvar::s}}',
  '{{pick::a::b::c::d::e}} {{pick::a::b::c::d::e}} {{pick a,b,c,d,e}}',
  '{{lastMessage}}|{{lastUserMessage}}|{{lastCharMessage}}|{{lastMessageId}}|{{allChatRange}}',
  '{{outlet::lore}}|{{outlet::empty}}|{{outlet::missing}}',
  '{{nosuch}} {{nosuch::{{user}}}} {{user::x}} {{space::x}} {{//}} {{comment}}',
  '\\{\\{user\\}\\} {{{user}}} {{}} {{ 1}} {{user',
  '{{foo}}x{{/foo}}|{{user}}x{{/user}}|{{/if}}',
];

// A generated macro string: words, macros of every family, scopes, shorthands
// and malformed braces, from rnd.
function generate(rnd) {
  const pick = (a) => a[Math.floor(rnd() * a.length)];
  const v = () => pick(['a', 'b', 'hp', 'list']);
  const val = () => pick(['1', '2', '-3', '007', 'x', 'yes', '', '1.5', 'off', '0', '[1,2]', '{{user}}', '  pad  ']);
  const atoms = [
    () => pick(['hello ', 'the ', '  ', '\n', 'é', '😀', ':', '::', '}', '{', '|', '=']),
    () => pick(['{{user}}', '{{char}}', '{{ user }}', '{{Char}}', '<USER>', '{{group}}', '{{notChar}}']),
    () => pick(['{{description}}', '{{personality}}', '{{greeting}}', '{{greeting::1}}', '{{greeting::2}}', '{{charVersion}}', '{{mesExamples}}', '{{persona}}']),
    () => `{{setvar::${v()}::${val()}}}`,
    () => `{{getvar::${v()}}}`,
    () => `{{addvar::${v()}::${val()}}}`,
    () => pick(['{{incvar::', '{{decvar::', '{{hasvar::', '{{deletevar::']) + v() + '}}',
    () => `{{.${v()}${pick([' = ' + val(), '++', '--', ' += ' + val(), ' || d', ' ?? d', ' == 1', ' > 1', ''])}}}`,
    () => `{{$${v()}${pick([' = ' + val(), '++', '', ' ??= g'])}}}`,
    () => `{{setglobalvar::${v()}::${val()}}}{{getglobalvar::${v()}}}`,
    () => `{{if ${pick(['1', '0', '.a', '$a', '!.b', 'description', '{{getvar::a}}', 'off'])}}}${pick(['T', ' T ', '{{user}}'])}${pick(['', '{{else}}E'])}{{/if}}`,
    () => `{{if::${pick(['1', '', '{{getvar::hp}}'])}::inline}}`,
    () => `{{trim}}${pick([' a ', '\n b \n', ''])}{{/trim}}`,
    () => pick(['{{trim}}', '\n{{trim}}\n', '{{newline}}', '{{newline::2}}', '{{space::3}}', '{{noop}}', '{{// c}}']),
    () => `{{reverse::${pick(['abc', 'héllo', '{{user}}', ''])}}}`,
    () => `{{roll::${pick(['1d6', '2d10+3', '20', 'd4', '1d1-1', 'x', '0'])}}}`,
    () => `{{pick::${pick(['a::b::c', 'x::y'])}}}`,
    () => pick(['{{time}}', '{{date}}', '{{isodate}}', '{{datetimeformat::YYYY-MM-DD HH:mm}}', '{{time::UTC+9}}']),
    () => pick(['{{lastMessage}}', '{{lastMessageId}}', '{{outlet::lore}}', '{{maxContext}}', '{{original}}']),
    () => pick(['{{unknown}}', '{{x::{{user}}}}', '{{', '}}', '{{ }}', '{{user', '\\{\\{', '{{{char}}}']),
  ];
  let s = '';
  const n = 1 + Math.floor(rnd() * 6);
  for (let i = 0; i < n; i++) s += pick(atoms)();
  return s;
}

// ---- run -----------------------------------------------------------------------

run(async () => {
  const names = JSON.parse(spawnSync(EVAL, ['--names'], { encoding: 'utf8' }).stdout);
  const unsupported = new Set(names.filter((n) => n.unsupported).map((n) => n.name.toLowerCase()));
  const st = await launchST({ seed: SEED });
  try {
    const info = await stPrepare(st);
    // 1. The same registry: every ST name (with aliases) and no other.
    const stNames = info.names.map((d) => d.name.toLowerCase()).sort();
    const ours = names.map((d) => d.name.toLowerCase()).sort();
    // ST registers these only while their extensions (memory, expressions,
    // image generation) are enabled; a fresh ST page has them off.
    const EXTENSION_ONLY = ['summary', 'defaultexpression', 'lastexpression', 'availableexpressions',
      'charprefix', 'charnegativeprefix'];
    assert.deepEqual(ours.filter((n) => !stNames.includes(n) && !EXTENSION_ONLY.includes(n)), [],
      'cdsh has names ST does not');
    assert.deepEqual(stNames.filter((n) => !ours.includes(n)), [], 'ST has names cdsh lacks');
    console.log(`registry: ${stNames.length} names in both (${unsupported.size} unsupported in cdsh); ST main_api ${info.mainApi}`);

    // 2. Cases: every registry name bare and each of ST's example usages,
    // the fixed rule cases and the generated ones.
    const rnd = mulberry32(SEED);
    const cases = [];
    for (const d of info.names) {
      cases.push({ kind: 'name', name: d.name, text: `{{${d.name}}}` });
      for (const ex of d.examples) cases.push({ kind: 'example', name: d.name, text: ex });
    }
    for (const t of FIXED) cases.push({ kind: 'fixed', text: t });
    for (let i = 0; i < COUNT; i++) cases.push({ kind: 'generated', text: generate(rnd) });
    // Generation types last (ST's tracker keeps the last type): each
    // generation ST starts sets {{lastGenerationType}} ('' reads 'normal'),
    // a dry run does not; cdsh gets the type its plan is built for.
    let prevGen = '';
    for (const [gen, dry] of [['normal'], ['impersonate'], ['swipe'], ['quiet'], ['continue', true], ['regenerate'], ['', false]]) {
      const genAfter = dry ? prevGen : (gen || 'normal');
      cases.push({ kind: 'fixed', text: `{{lastGenerationType}}|{{if {{lastGenerationType}}}}set{{/if}}`, gen, dry, genAfter });
      prevGen = genAfter;
    }
    cases.forEach((c, i) => {
      c.seed = (SEED + i * 2654435761) >>> 0;
      c.local = { hp: '5', list: '["x"]' };
      c.global = { a: '1' };
    });
    const a = await stRun(st, cases);
    const b = cdshRun(cases, info);
    const macroName = (t) => (/^\{\{\s*([a-zA-Z][\w-]*|\/\/)/.exec(t) || [])[1]?.toLowerCase();
    let bad = 0, random = 0, skippedUnsupported = 0;
    const norm = (o) => Object.fromEntries(Object.entries(o || {}).map(([k, x]) => [k, typeof x === 'string' ? x : JSON.stringify(x)]));
    for (let i = 0; i < cases.length; i++) {
      const c = cases[i], x = a[i], y = b[i];
      const name = macroName(c.text);
      if ((c.kind === 'name' || c.kind === 'example') && unsupported.has((c.name || '').toLowerCase())) {
        skippedUnsupported++;
        if (!(y.out === c.text || y.out.startsWith('{{')) || !y.unknown.map((u) => u.toLowerCase()).includes(c.name.toLowerCase())) {
          bad++;
          console.log(`MISMATCH unsupported ${JSON.stringify(c.text)}: cdsh ${JSON.stringify(y.out)}, listed ${JSON.stringify(y.unknown)}`);
        }
        continue;
      }
      if (name === 'random' && c.kind !== 'generated') {
        random++;
        continue; // checked for membership below
      }
      const same = x.out === y.out && JSON.stringify(norm(x.local)) === JSON.stringify(norm(y.local))
        && JSON.stringify(norm(x.global)) === JSON.stringify(norm(y.global));
      if (!same) {
        bad++;
        console.log(`MISMATCH [${c.kind}${c.name ? ' ' + c.name : ''}] case ${i} seed ${c.seed} (run seed ${SEED})\n  text ${JSON.stringify(c.text)}\n  st   ${JSON.stringify(x.out)} ${JSON.stringify(norm(x.local))}\n  cdsh ${JSON.stringify(y.out)} ${JSON.stringify(norm(y.local))}`);
      }
    }
    // {{random}}: ST draws fresh entropy; cdsh's pick must be one of the items.
    const rc = ['{{random::a::b::c}}', '{{random:x,y,z}}', '{{random a\\,b,c}}'];
    const rr = cdshRun(rc.map((text, i) => ({ text, seed: SEED + i })), info);
    const members = [['a', 'b', 'c'], ['x', 'y', 'z'], ['a,b', 'c']];
    rr.forEach((r, i) => assert.ok(members[i].includes(r.out), `{{random}} gave ${r.out} for ${rc[i]}`));
    console.log(`${cases.length} cases (${cases.filter((c) => c.kind === 'generated').length} generated), ${bad} mismatches, ${random} random-only, ${skippedUnsupported} unsupported (verbatim in cdsh)`);
    assert.equal(bad, 0, `${bad} macro outputs differ from SillyTavern's (seed ${SEED})`);
  } finally {
    await st.close();
  }
});
