// timing.cjs — the node tests' side of support/timing.h: every wait budget
// is multiplied by CDSH_TEST_TIMEOUT_SCALE (default 1; .ci/run sets 3), and a
// budget that runs out says which step, how long it waited and the tail of
// the peer's stderr. CommonJS so both the .js and the .mjs tests load it.
'use strict';

function readScale() {
  const raw = process.env.CDSH_TEST_TIMEOUT_SCALE;
  if (raw === undefined || raw === '') return 1;
  const v = Number(raw);
  if (!(v > 0) || v > 1000) {
    console.error(`CDSH_TEST_TIMEOUT_SCALE=${raw} is not a number in (0, 1000]`);
    process.exit(2);
  }
  return v;
}

const SCALE = readScale();

// ms times the scale (whole milliseconds).
function scaled(ms) {
  return Math.round(ms * SCALE);
}

// The last `max` characters of text, marked when cut.
function tail(text, max = 2000) {
  const s = String(text ?? '');
  return s.length <= max ? s : `…${s.slice(-max)}`;
}

// The message of an exhausted budget.
function budgetMessage(step, ms, stderr) {
  const scale = SCALE === 1 ? '' : ` (${Math.round(ms / SCALE)} ms x CDSH_TEST_TIMEOUT_SCALE ${SCALE})`;
  const err = stderr === undefined ? '' : `\n--- stderr tail ---\n${tail(stderr) || '(empty)'}`;
  return `${step}: no result within ${ms} ms${scale}${err}`;
}

// Resolves like `promise`, or rejects with budgetMessage after scaled(ms);
// stderr (a function) supplies the peer's stderr at that moment.
function within(step, ms, promise, stderr) {
  const budget = scaled(ms);
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(budgetMessage(step, budget, stderr ? stderr() : undefined))), budget);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

module.exports = { SCALE, scaled, tail, budgetMessage, within };
