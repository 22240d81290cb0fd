// tool_cards.js — draws a tool card's body from the render intent the host
// sent with the call or result (`present`, host-contracts §1): terminal
// output, a diff, search results, a file read, a web page, a xiangqi board.
// app.js keeps the card itself (name, state, arguments); a card without an
// intent (or the generic one) keeps its plain text result. No network here.

const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

// Line diff (longest common subsequence; small inputs — a tool's edit).
function diffLines(a, b) {
  const x = a.split('\n');
  const y = b.split('\n');
  if (x.length * y.length > 250000) return [...x.map((l) => ['-', l]), ...y.map((l) => ['+', l])];
  const n = x.length;
  const m = y.length;
  const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) { out.push([' ', x[i]]); i++; j++; } else if (L[i + 1][j] >= L[i][j + 1]) out.push(['-', x[i++]]);
    else out.push(['+', y[j++]]);
  }
  while (i < n) out.push(['-', x[i++]]);
  while (j < m) out.push(['+', y[j++]]);
  return out;
}

// Content a tool produced (queries, paths, titles, snippets, commands): shown
// as is in either language, so the language checks skip it.
const data = (tag, cls, text) => {
  const e = el(tag, cls, text);
  e.dataset.i18nSkip = '';
  return e;
};

// FEN board → 10 rows of 9 points, Chinese piece names (red upper case).
const PIECES = { K: '帥', A: '仕', B: '相', N: '傌', R: '俥', C: '炮', P: '兵',
  k: '將', a: '士', b: '象', n: '馬', r: '車', c: '砲', p: '卒' };
function board(fen) {
  const grid = el('div', 'xq-board');
  grid.dataset.testid = 'card-board';
  const rows = (fen || '').split(' ')[0].split('/');
  for (const row of rows) {
    const r = el('div', 'xq-row');
    for (const ch of row) {
      if (/[1-9]/.test(ch)) for (let k = 0; k < Number(ch); k++) r.append(el('span', 'xq-pt', '·'));
      else r.append(el('span', `xq-pt ${ch === ch.toUpperCase() ? 'red' : 'black'}`, PIECES[ch] || ch));
    }
    grid.append(r);
  }
  return grid;
}

// Fills `body` for `intent`; returns false for the generic card (the caller
// then shows the plain text).
export function renderIntent(body, intent, t) {
  if (!intent || !intent.card) return false;
  body.replaceChildren();
  body.dataset.card = intent.card;
  switch (intent.card) {
    case 'terminal': {
      if (intent.command) body.append(data('div', 'term-cmd', `$ ${intent.command}`));
      const pre = el('pre', 'term-out', intent.output || '');
      pre.dataset.testid = 'card-terminal';
      body.append(pre);
      if (intent.exitCode !== undefined && intent.exitCode !== null)
        body.append(el('div', 'term-exit', `${t('card.exit')} ${intent.exitCode}`));
      return true;
    }
    case 'diff': {
      body.append(data('div', 'card-path', intent.path));
      const pre = el('pre', 'diff');
      pre.dataset.testid = 'card-diff';
      for (const [op, line] of diffLines(intent.oldText || '', intent.newText || '')) {
        pre.append(el('span', op === '+' ? 'add' : op === '-' ? 'del' : 'same', `${op} ${line}\n`));
      }
      body.append(pre);
      return true;
    }
    case 'search': {
      const q = el('div', 'card-query', `${t('card.query')}: `);
      q.append(data('span', 'q', intent.query || ''));
      body.append(q);
      const ol = el('ol', 'search-hits');
      ol.dataset.testid = 'card-search';
      for (const r of intent.results || []) {
        const li = el('li');
        li.append(data('strong', null, r.title), data('div', 'snippet', r.snippet || ''));
        ol.append(li);
      }
      if (!(intent.results || []).length) ol.append(el('li', 'none', t('card.noHits')));
      body.append(ol);
      return true;
    }
    case 'read':
      body.append(data('div', 'card-path', intent.path), el('pre', 'read', intent.text || ''));
      return true;
    case 'web': {
      const a = data('a', 'card-web', intent.title || intent.url);
      a.href = /^https?:/.test(intent.url) ? intent.url : '#';
      a.target = '_blank';
      a.rel = 'noopener noreferrer';
      body.append(a);
      return true;
    }
    case 'generic':
      if (intent.view === 'xiangqi-board' && intent.fen) { body.append(board(intent.fen)); return true; }
      return false;
    default:
      return false;
  }
}
