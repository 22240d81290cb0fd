// xq_rules_oracle.mjs — the live rules oracle (issue 26 item 3): cdsh's
// repetition verdicts against current Fairy-Stockfish (the npm WASM build in
// tests/node_modules/fairy-stockfish-nnue.wasm, variant xiangqi, whose
// chasing rules follow the AXF book).
//
// xq_rep_gen (argv[2]) draws the cases from a printed seed (CDSH_TEST_SEED
// replays a run; CDSH_XQ_ORACLE_CASES sets how many, default 150): a random
// game from the start, then a four-ply cycle played twice, in six kinds
// (perpetual check, mutual check, perpetual chase, mutual chase, checks
// mixed with chases, idle). It prints cdsh's verdict after the eighth ply.
//
// Fairy-Stockfish has no command that prints a game result, so its verdict
// is read from its search: `position fen F moves m1..m7`, then
// `go depth 1 searchmoves m8`. The child after m8 is judged by FSF's
// is_game_end before anything else (at ply 1 a threefold repetition is
// needed, as in a game): a loss for the side to move there shows as
// `score mate 1` at the root, a win as `mate 0`/`mate -1`, a draw as
// `cp 0`. An ongoing child is searched by quiescence, so the same query
// without the history (the FEN after seven plies) gives the same score;
// when the two scores are equal the game goes on. The hash is cleared
// (ucinewgame) before every query.
//
// Every disagreement must be one of the kinds documented in
// docs/xiangqi-engine.md ("The live rules oracle"), recognised from the
// case's features; any other disagreement fails the test with the seed, the
// case and both verdicts.
import { createRequire } from 'node:module';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
const { scaled, within } = require('../support/timing.cjs');

const gen = process.argv[2];
const fsfDir = path.join(here, '..', 'node_modules', 'fairy-stockfish-nnue.wasm');
if (!existsSync(path.join(fsfDir, 'stockfish.js'))) {
  console.log('fairy-stockfish-nnue.wasm not installed in tests/node_modules: skipped');
  process.exit(77);
}

function runSeed() {
  const raw = process.env.CDSH_TEST_SEED;
  if (raw !== undefined && raw !== '') {
    const v = raw.startsWith('0x') ? parseInt(raw, 16) : Number(raw);
    if (!Number.isInteger(v) || v < 0) throw new Error(`CDSH_TEST_SEED=${raw} is not a whole number`);
    return v;
  }
  // Without CDSH_TEST_SEED the run uses seed 2 (150 cases: 149 agree, 1
  // documented difference), so a normal run cannot fail by
  // chance; CDSH_XQ_ORACLE_FRESH=1 draws a fresh seed (printed, so any
  // difference replays).
  if (process.env.CDSH_XQ_ORACLE_FRESH !== '1') return 2;
  return Math.floor(Math.random() * 4294967296);
}

const seed = runSeed();
const count = Number(process.env.CDSH_XQ_ORACLE_CASES || 150);
console.log(`test seed (xq rules oracle): ${seed} (replay with CDSH_TEST_SEED=${seed})`);

const g = spawnSync(gen, [String(seed), String(count)], { encoding: 'utf8', maxBuffer: 64 << 20 });
if (g.status !== 0) {
  console.error(`xq_rep_gen failed (${g.status}): ${g.stderr}`);
  process.exit(1);
}
const cases = g.stdout.trim().split('\n').map((l) => JSON.parse(l));
if (cases.length !== count) {
  console.error(`xq_rep_gen printed ${cases.length} cases, wanted ${count}`);
  process.exit(1);
}

// ---- Fairy-Stockfish over its message interface -----------------------------
const Stockfish = require(path.join(fsfDir, 'stockfish.js'));
const sf = await within('loading Fairy-Stockfish', scaled(60000), Stockfish());
let waiter = null;
let lines = [];
sf.addMessageListener((l) => {
  lines.push(l);
  if (waiter && waiter.re.test(l)) {
    const w = waiter;
    waiter = null;
    const got = lines;
    lines = [];
    w.resolve(got);
  }
});
function ask(cmd, re, step) {
  return within(step, scaled(60000), new Promise((resolve) => {
    waiter = { re, resolve };
    sf.postMessage(cmd);
  }));
}
await ask('uci', /^uciok/, 'uci');
sf.postMessage('setoption name UCI_Variant value xiangqi');
sf.postMessage('setoption name Use NNUE value false');
await ask('isready', /^readyok/, 'isready');

// ICCS ranks 0-9 to Fairy-Stockfish's UCI ranks 1-10.
const uci = (m) => `${m[0]}${Number(m[1]) + 1}${m[2]}${Number(m[3]) + 1}`;

async function score(position, move) {
  sf.postMessage('ucinewgame');
  await ask('isready', /^readyok/, 'ucinewgame');
  sf.postMessage(position);
  const out = await ask(`go depth 1 searchmoves ${uci(move)}`, /^bestmove/, `go (${position})`);
  const info = out.filter((l) => /^info depth 1 .* score /.test(l)).pop();
  const m = info && info.match(/ score (cp|mate) (-?\d+)/);
  if (!m) throw new Error(`no score from Fairy-Stockfish for ${position} / ${move}: ${out.join(' | ')}`);
  return { unit: m[1], value: Number(m[2]), line: info };
}

// FSF's verdict for the side to move after the eighth ply.
async function fsfVerdict(c) {
  const hist = await score(`position fen ${c.fen} moves ${c.moves.slice(0, 7).map(uci).join(' ')}`, c.moves[7]);
  const base = await score(`position fen ${c.fen7}`, c.moves[7]);
  if (hist.unit === 'mate') return { v: hist.value > 0 ? 'loss' : 'win', hist, base };
  if (hist.unit === base.unit && hist.value === base.value)
    return { v: hist.value === 0 ? 'unclear' : 'ongoing', hist, base };
  if (hist.value === 0) return { v: 'draw', hist, base };
  return { v: 'unclear', hist, base };
}

// ---- the documented kinds of disagreement ----------------------------------
// Side that made move i (0-based) of the eight: 0 = the first mover.
// (1) A check inside the cycle without a one-sided perpetual check: cdsh
//     (Pikafish) leaves the chase test out and draws; FSF (AXF) counts the
//     check as an attack, so a side that checked or chased after each of
//     its moves loses.
function mixedChecks(c) {
  const any = c.checks.some(Boolean);
  const oneSided = [0, 1].some((s) => c.checks.filter((_, i) => i % 2 === s).every(Boolean));
  return any && !oneSided;
}
// (2) The chase test's own differences, on check-free cycles: cdsh follows
//     Pikafish (every attack of the side after its move counts, also one
//     that was there before and became a chase when the target lost its
//     protection or was left alone), FSF only the attacks the moved piece
//     makes anew (directly or by discovery); the two also differ on what
//     protects (FSF counts a recapture that is illegal because of a pin
//     through the general line as protection in some cases).
function chaseRuleKind(c) {
  return !c.checks.some(Boolean) && (c.chased.some((x) => x.length) || c.kind === 'idle');
}
function explain(c, cdsh, fsf) {
  if (mixedChecks(c)) return 'check mixed with chase (一将一捉): Pikafish draws, AXF judges the attack';
  if (chaseRuleKind(c)) return 'chase definition: Pikafish (every attack after the move) vs AXF (the moved piece\'s new attacks)';
  return null;
}

// ---- run --------------------------------------------------------------------
const byKind = {};
const unexplained = [];
let agree = 0, documented = 0, unclear = 0;
for (const c of cases) {
  if (c.before !== 'ongoing') {
    unexplained.push({ c, why: `cdsh ended the game after seven plies (${c.before})` });
    continue;
  }
  const f = await fsfVerdict(c);
  const k = (byKind[c.kind] ??= { n: 0, agree: 0, documented: 0, unclear: 0 });
  k.n++;
  if (f.v === 'unclear') {
    unclear++;
    k.unclear++;
    continue;
  }
  if (f.v === c.verdict) {
    agree++;
    k.agree++;
    continue;
  }
  const why = explain(c, c.verdict, f.v);
  const text = `case ${c.id} (${c.kind}): cdsh ${c.verdict} (${c.reason}), Fairy-Stockfish ${f.v} [${f.hist.line}]\n  position fen ${c.fen} moves ${c.moves.join(' ')}\n  checks ${c.checks.join('')} chased ${JSON.stringify(c.chased)}`;
  if (why) {
    documented++;
    k.documented++;
    console.log(`documented difference — ${why}\n  ${text}`);
  } else {
    unexplained.push({ c, why: text });
  }
}
sf.postMessage('quit');

for (const [kind, k] of Object.entries(byKind))
  console.log(`${kind}: ${k.n} cases, ${k.agree} agree, ${k.documented} documented differences, ${k.unclear} unclear`);
console.log(`total: ${cases.length} cases, ${agree} agree, ${documented} documented differences, ${unclear} unclear, ${unexplained.length} unexplained`);
for (const u of unexplained) console.error(`UNEXPLAINED ${u.why}`);
// Each kind must have been judged (not only "unclear") for the run to mean
// anything.
const thin = Object.entries(byKind).filter(([, k]) => k.agree + k.documented < Math.ceil(k.n / 2));
for (const [kind] of thin) console.error(`kind ${kind}: fewer than half its cases were judged`);
if (unexplained.length || thin.length) {
  console.error(`test seed (xq rules oracle): ${seed} (replay with CDSH_TEST_SEED=${seed})`);
  process.exit(1);
}
process.exit(0);
