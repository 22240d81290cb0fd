// board.js — the xiangqi board panel: an SVG board with Chinese glyphs,
// click-to-move driven only by the projection's legalTargets (the browser
// never computes rules), last-move and check marks, the move list, hint
// arrows, the review chart, the action buttons and the pending indicator.
// Talks to the host half only through the /xiangqi-mate RPC channel and
// listens to plugin/state events; polls while the model thinks (seed §4.3).
//
// mount(el, host) — host is the page's panel API (docs/web.md): rpc(channel,
// endpoint, payload), onState(fn), sessionId(), onSession(fn), lang(),
// onLang(fn). Without a host, standaloneHost() talks to /rpc/xiangqi-mate
// over fetch and to /api/sessions/<id>/events over EventSource. The endpoint
// names come from the channel's operations table ($ops, web/remote.js).

import { lazyRemote } from '../remote.js';

const CHANNEL = '/xiangqi-mate';
const NS = 'http://www.w3.org/2000/svg';
const CELL = 40, PAD = 30;
const GLYPH = {
  K: '帅', A: '仕', B: '相', N: '马', R: '车', C: '炮', P: '兵',
  k: '将', a: '士', b: '象', n: '马', r: '车', c: '炮', p: '卒',
};
const TEXT = {
  en: {
    title: 'Xiangqi', new: 'New game', undo: 'Undo', hint: 'Hint', resign: 'Resign',
    review: 'Review', fallback: 'Let the local engine move', thinking: 'Opponent is thinking…',
    failed: 'The model could not move', yourTurn: 'Your move', theirTurn: "Opponent's move",
    over: 'Game over', moves: 'Moves', noSession: 'Open a session to play.',
    unavailable: 'The xiangqi channel is not available (start cdsh web).',
    stopped: 'Still thinking — you can let the local engine move.',
    confirmResign: 'Resign this game?', red: 'Red', black: 'Black', you: 'you',
    'ai.timeout': 'The model took too long; the local engine moved.',
    'ai.budget': 'The model budget is spent; the local engine moved.',
    'ai.fallback.local': 'The local engine moved for the opponent.',
    'ai.error': 'The model failed; use the local engine.',
    cause: 'Cause', whatToDo: 'What to do',
    turning: 'turning points', opponent: 'Opponent', local: 'local engine', model: 'model',
  },
  zh: {
    title: '象棋', new: '新局', undo: '悔棋', hint: '提示', resign: '认输', review: '复盘',
    fallback: '由本地引擎代走', thinking: '对手思考中…', failed: '模型未能走子',
    yourTurn: '轮到你走', theirTurn: '轮到对手', over: '对局结束', moves: '棋谱',
    noSession: '打开一个会话即可下棋。', unavailable: '象棋通道不可用（请用 cdsh web 启动）。',
    stopped: '对手仍在思考——可以点「由本地引擎代走」。', confirmResign: '确定认输吗？',
    red: '红方', black: '黑方', you: '你',
    'ai.timeout': '模型超时，已由本地引擎代走。', 'ai.budget': '模型额度已用完，已由本地引擎代走。',
    'ai.fallback.local': '已由本地引擎代走。', 'ai.error': '模型出错，请由本地引擎代走。',
    cause: '原因', whatToDo: '怎么办',
    turning: '转折点', opponent: '对手', local: '本地引擎', model: '模型',
  },
};

// Polling schedule while pending === 'ai-thinking' (seed §4.3).
export const POLL = { first: 800, factor: 1.35, cap: 2000, stopAfter: 30000 };

/* The point of index i (0..89, row 0 = Black's back rank) on the SVG. */
function xy(i) {
  return [PAD + (i % 9) * CELL, PAD + Math.floor(i / 9) * CELL];
}

function el(name, attrs = {}, parent) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.append(e);
  return e;
}

export function standaloneHost(base = '') {
  const params = new URLSearchParams(location.search);
  let sid = params.get('session');
  const state = new Set();
  let es = null;
  const follow = () => {
    if (es) es.close();
    if (!sid || typeof EventSource === 'undefined') return;
    es = new EventSource(`${base}/api/sessions/${sid}/events`);
    es.addEventListener('plugin/state', (m) => {
      const d = JSON.parse(m.data);
      if (d.plugin === 'xiangqi') for (const fn of state) fn(d);
    });
  };
  follow();
  return {
    plugin: 'xiangqi',
    async rpc(channel, endpoint, payload) {
      const rpcId = String(Math.random()).slice(2);
      const res = await fetch(`${base}/rpc/${channel.replace(/^\//, '')}/${endpoint}`, {
        method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ type: 'client-request', rpcId, method: endpoint, payload }),
      });
      const data = await res.json();
      return data.result;
    },
    onState(fn) { state.add(fn); return () => state.delete(fn); },
    sessionId: () => sid,
    onSession() { return () => {}; },
    setSession(id) { sid = id; follow(); },
    lang: () => (navigator.language || 'en').startsWith('zh') ? 'zh' : 'en',
    onLang() { return () => {}; },
    setTitle() {},
  };
}

export function mount(root, host = standaloneHost()) {
  const ui = { root, host, view: null, selected: null, arrows: [], review: null, timer: null };
  const t = (k) => (TEXT[host.lang && host.lang() === 'zh' ? 'zh' : 'en'][k] ?? k);
  const css = document.createElement('link');
  css.rel = 'stylesheet';
  css.href = new URL('./board.css', import.meta.url).href;
  root.classList.add('xq-panel');
  root.append(css);
  const status = document.createElement('div');
  status.className = 'xq-status';
  const cause_ = document.createElement('div');
  cause_.className = 'xq-cause';
  cause_.dataset.testid = 'xq-cause-box';
  cause_.hidden = true;
  const svg = el('svg', { viewBox: `0 0 ${PAD * 2 + CELL * 8} ${PAD * 2 + CELL * 9}`, class: 'xq-board' });
  const bar = document.createElement('div');
  bar.className = 'xq-buttons';
  const list = document.createElement('ol');
  list.className = 'xq-moves';
  const chart = el('svg', { viewBox: '0 0 300 100', class: 'xq-chart', hidden: '' });
  root.append(status, cause_, svg, bar, list, chart);
  const buttons = {};
  for (const name of ['new', 'undo', 'hint', 'resign', 'review', 'fallback']) {
    const b = document.createElement('button');
    b.type = 'button';
    b.dataset.action = name;
    b.addEventListener('click', () => act(name));
    bar.append(b);
    buttons[name] = b;
  }

  const sid = () => host.sessionId && host.sessionId();

  // The endpoints are the plugin's own: the remote is built from the channel's $ops.
  const remote = lazyRemote(host, CHANNEL);
  async function call(endpoint, payload = {}) {
    if (!sid()) return null;
    let res;
    try {
      res = await remote(endpoint, { sessionId: sid(), ...payload });
    } catch (e) {
      status.textContent = t('unavailable');
      return null;
    }
    if (!res) return null;
    if (res.ok) return res.value;
    if (res.error && res.error.code === 'not-found') status.textContent = t('unavailable');
    else status.textContent = (res.error && res.error.message) || 'error';
    status.dataset.tone = 'error';
    return null;
  }

  // Newer revisions only: a slow response never overwrites a fresh state.
  function show(v) {
    if (!v || typeof v.revision !== 'number') return;
    if (ui.view && v.revision < ui.view.revision) return;
    if (ui.view && v.revision === ui.view.revision && !v.candidates && !v.curve) return;
    ui.view = v;
    ui.selected = null;
    ui.arrows = v.candidates || [];
    draw();
    schedulePoll();
  }

  function draw() {
    const v = ui.view;
    for (const [name, b] of Object.entries(buttons)) b.textContent = t(name);
    if (host.setTitle) host.setTitle(t('title'));
    svg.replaceChildren();
    drawGrid();
    if (!v) {
      status.textContent = sid() ? '' : t('noSession');
      return;
    }
    const mine = v.turn === v.hero && v.phase === 'playing' && !v.pending;
    const last = v.lastMove;
    if (last) for (const i of [last.from, last.to]) mark(i, 'xq-last');
    if (v.inCheck) {
      const king = v.board.findIndex((p) => p === (v.turn === 'r' ? 'K' : 'k'));
      if (king >= 0) mark(king, 'xq-check');
    }
    v.board.forEach((p, i) => { if (p) piece(i, p, mine); });
    if (ui.selected !== null)
      for (const to of v.legalTargets[String(ui.selected)] || []) target(to);
    ui.arrows.forEach((c, n) => arrow(c.from, c.to, n));
    // status line
    let s;
    if (v.phase === 'over') s = `${t('over')}: ${v.status.reasonZh}`;
    else if (v.pending === 'ai-thinking') s = t('thinking');
    else if (v.pending === 'ai-failed') s = t('failed');
    else s = v.turn === v.hero ? t('yourTurn') : t('theirTurn');
    if (v.message) s += ` — ${t(v.message.code)}`;
    status.textContent = s;
    // a model failure: the endpoint's own words and what to do
    const cause = v.message && v.message.cause;
    cause_.hidden = !cause;
    if (cause) {
      const fix = host.lang && host.lang() === 'zh' ? cause.fixZh : cause.fix;
      cause_.replaceChildren();
      const why = document.createElement('div');
      why.className = 'xq-cause-text';
      why.dataset.testid = 'xq-cause';
      why.textContent = `${t('cause')}: ${cause.message} (${cause.code})`;
      cause_.append(why);
      if (fix) {
        const todo = document.createElement('div');
        todo.className = 'xq-fix';
        todo.dataset.testid = 'xq-fix';
        todo.textContent = `${t('whatToDo')}: ${fix}`;
        cause_.append(todo);
      }
    }
    status.dataset.tone = v.message ? v.message.tone : v.pending === 'ai-failed' ? 'error' : 'info';
    status.dataset.pending = v.pending || '';
    buttons.fallback.disabled = !(v.pending && v.turn !== v.hero && v.phase === 'playing');
    buttons.undo.disabled = v.history.length === 0;
    buttons.resign.disabled = v.phase !== 'playing';
    buttons.hint.disabled = v.phase !== 'playing';
    list.replaceChildren(...v.history.map((h, i) => {
      const li = document.createElement('li');
      li.textContent = h.zh + (h.captured ? ' ×' : '');
      li.title = h.iccs;
      if (ui.review && ui.review.turningPoints.some((tp) => tp.ply === i + 1)) li.className = 'xq-turning';
      return li;
    }));
    drawChart();
  }

  function drawGrid() {
    const g = el('g', { class: 'xq-grid' }, svg);
    for (let r = 0; r < 10; r++) el('line', { x1: PAD, y1: PAD + r * CELL, x2: PAD + 8 * CELL, y2: PAD + r * CELL }, g);
    for (let f = 0; f < 9; f++) {
      const edge = f === 0 || f === 8;
      el('line', { x1: PAD + f * CELL, y1: PAD, x2: PAD + f * CELL, y2: PAD + (edge ? 9 : 4) * CELL }, g);
      if (!edge) el('line', { x1: PAD + f * CELL, y1: PAD + 5 * CELL, x2: PAD + f * CELL, y2: PAD + 9 * CELL }, g);
    }
    for (const top of [0, 7]) {
      el('line', { x1: PAD + 3 * CELL, y1: PAD + top * CELL, x2: PAD + 5 * CELL, y2: PAD + (top + 2) * CELL }, g);
      el('line', { x1: PAD + 5 * CELL, y1: PAD + top * CELL, x2: PAD + 3 * CELL, y2: PAD + (top + 2) * CELL }, g);
    }
    const river = el('text', { x: PAD + 4 * CELL, y: PAD + 4.5 * CELL + 6, class: 'xq-river' }, svg);
    river.textContent = '楚 河　　　　漢 界';
  }

  function mark(i, cls) {
    const [x, y] = xy(i);
    el('rect', { x: x - CELL / 2 + 2, y: y - CELL / 2 + 2, width: CELL - 4, height: CELL - 4, class: cls }, svg);
  }

  function piece(i, p, mine) {
    const [x, y] = xy(i);
    const red = p === p.toUpperCase();
    const g = el('g', { class: `xq-piece ${red ? 'xq-red' : 'xq-black'}`, 'data-index': i }, svg);
    el('circle', { cx: x, cy: y, r: CELL * 0.44 }, g);
    const txt = el('text', { x, y: y + 7 }, g);
    txt.textContent = GLYPH[p] || p;
    const v = ui.view;
    if (mine && v.legalTargets[String(i)]) {
      g.classList.add('xq-movable');
      if (ui.selected === i) g.classList.add('xq-selected');
      g.addEventListener('click', () => { ui.selected = ui.selected === i ? null : i; draw(); });
    } else if (ui.selected !== null && (v.legalTargets[String(ui.selected)] || []).includes(i)) {
      g.addEventListener('click', () => play(ui.selected, i));
    }
  }

  function target(i) {
    const [x, y] = xy(i);
    const dot = el('circle', { cx: x, cy: y, r: 7, class: 'xq-target', 'data-index': i }, svg);
    dot.addEventListener('click', () => play(ui.selected, i));
  }

  function arrow(from, to, n) {
    const [x1, y1] = xy(from), [x2, y2] = xy(to);
    el('line', { x1, y1, x2, y2, class: `xq-arrow xq-arrow-${n}`, 'marker-end': 'url(#xq-head)' }, svg);
    if (!svg.querySelector('#xq-head')) {
      const defs = el('defs', {}, svg);
      const m = el('marker', { id: 'xq-head', markerWidth: 6, markerHeight: 6, refX: 3, refY: 3, orient: 'auto' }, defs);
      el('path', { d: 'M0,0 L6,3 L0,6 z', class: 'xq-arrowhead' }, m);
    }
  }

  function drawChart() {
    const r = ui.review;
    if (!r || !r.curve || r.curve.length < 2) { chart.setAttribute('hidden', ''); return; }
    chart.removeAttribute('hidden');
    chart.replaceChildren();
    const max = Math.max(200, ...r.curve.map((c) => Math.abs(c.score)));
    const px = (ply) => 5 + (290 * ply) / (r.curve.length - 1);
    const py = (s) => 50 - (45 * s) / max;
    el('line', { x1: 5, y1: 50, x2: 295, y2: 50, class: 'xq-axis' }, chart);
    el('polyline', { points: r.curve.map((c) => `${px(c.ply)},${py(c.score)}`).join(' '), class: 'xq-curve' }, chart);
    for (const tp of r.turningPoints) {
      const c = el('circle', { cx: px(tp.ply), cy: py(tp.score), r: 3, class: 'xq-tp' }, chart);
      const title = el('title', {}, c);
      title.textContent = `${tp.ply}. ${tp.zh} ${tp.kindZh} (${tp.delta > 0 ? '+' : ''}${tp.delta})`;
    }
  }

  async function play(from, to) {
    const v = ui.view;
    if (!v || from === null) return;
    ui.selected = null;
    ui.arrows = [];
    // the panel sends indexes; the host also takes move / iccs (§4.1)
    show(await call('move', { from, to }));
  }

  async function act(name) {
    if (name === 'resign' && typeof confirm === 'function' && !confirm(t('confirmResign'))) return;
    if (name === 'hint') {
      const v = await call('hint', { count: 3 });
      if (v) { ui.arrows = v.candidates; draw(); }
      return;
    }
    if (name === 'review') {
      const v = await call('review', { highlight: 'turning' });
      if (v) { ui.review = v; draw(); }
      return;
    }
    if (name === 'new') ui.review = null;
    show(await call(name === 'new' ? 'new' : name, name === 'undo' ? { plies: 2 } : {}));
  }

  // Poll only while the model thinks and the panel is visible (§4.3).
  let pollStart = 0, delay = POLL.first;
  function visible() {
    return (typeof document === 'undefined' || document.visibilityState !== 'hidden') && root.isConnected;
  }
  function schedulePoll() {
    clearTimeout(ui.timer);
    const v = ui.view;
    if (!v || v.pending !== 'ai-thinking') { pollStart = 0; delay = POLL.first; return; }
    if (!pollStart) { pollStart = Date.now(); delay = POLL.first; }
    if (Date.now() - pollStart >= POLL.stopAfter) { status.textContent = t('stopped'); return; }
    ui.timer = setTimeout(async () => {
      if (visible()) show(await call('state'));
      delay = Math.min(POLL.cap, delay * POLL.factor);
      schedulePoll();
    }, delay);
  }

  async function reload() {
    ui.view = null;
    ui.review = null;
    ui.arrows = [];
    draw();
    show(await call('state'));
  }

  const offState = host.onState((ev) => {
    if (ev && ev.state && (!ev.sessionId || ev.sessionId === sid())) show(ev.state);
  });
  const offSession = host.onSession ? host.onSession(reload) : () => {};
  const offLang = host.onLang ? host.onLang(draw) : () => {};
  reload();
  return () => { clearTimeout(ui.timer); offState(); offSession(); offLang(); root.replaceChildren(); };
}
