// app.js — the cdsh web page: sessions sidebar, chat with streamed text,
// folded reasoning, tool-call cards, commands, the model status banner, the
// engine picker (sessions bound to an ACP agent), the approval dialog, the
// Fork action and the panel area. Server events arrive over SSE (see docs/web.md).
import { api } from './api.js';
import { t, getLang, setLang, onLang, applyStatic } from './i18n.js';
import { mountPanels, panelsDeliver, panelsSetSession } from './panels.js';
import { renderStory, tavernNotice, scoredHits } from './story.js';
import { createCharacters } from './characters.js';
import { renderIntent } from './tool_cards.js';
import { mountJobs } from './jobs.js';

const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

const state = {
  sessions: [],
  current: null,      // session id
  running: false,
  turnsEnded: 0,      // live turn/end and turn/error events seen
  seen: new Set(),    // logged event seqs already rendered
  stream: null,       // the assistant bubble being streamed
  reasoning: null,    // its reasoning <details>
  cards: new Map(),   // callId -> tool card
  es: null,           // EventSource of the current session
  status: null,
  engines: [],        // the acp plugin's engine rows (/rpc/acp/engines)
  bound: null,        // the current session's engine binding {engineId, cwd, ...}, or null
  approvals: [],      // pending approval requests of the current session, oldest first
  speakers: null,     // {user:{name, avatar}, assistant:{name, avatar}} of a role-play session
  avatars: new Map(), // cardId -> data: URL of the card's image
  expanded: new Set(), // sessions whose branches the person unfolded
  binding: null,      // the tavern binding of the open session, or null
  swipe: null,        // its variants {turn, index, total, siblings[]} (getFloorSiblings), or null
  turnNow: null,      // the turn of the event being rendered
};

// ---- rendering -------------------------------------------------------------------

function messages() { return $('messages'); }

function scrollDown() {
  const m = messages();
  m.scrollTop = m.scrollHeight;
}

function clearEmpty() {
  const e = messages().querySelector('.empty');
  if (e) e.remove();
}

// The speakers of the open session: a role-play session (a tavern card
// bound) shows the character's and the persona's names and avatars; any other
// session "You" and the assistant.
function speaker(role) {
  const sp = state.speakers && state.speakers[role];
  return { name: (sp && sp.name) || t(role === 'user' ? 'you' : 'assistantName'), avatar: sp && sp.avatar };
}

function avatarEl(role) {
  const who = speaker(role);
  const box = el('div', `avatar ${role}`);
  box.setAttribute('aria-hidden', 'true');
  if (who.avatar) {
    const img = el('img');
    img.alt = '';
    img.src = who.avatar;
    box.append(img);
  } else {
    box.textContent = [...who.name][0] || '?';
  }
  return box;
}

// One message: avatar, the speaker's name, the text (rendered as a story).
function messageEl(role, extra) {
  clearEmpty();
  const row = el('div', `msg-row ${role}`);
  const b = el('div', `msg ${role}${extra ? ` ${extra}` : ''}`);
  const who = el('div', 'who', speaker(role).name);
  who.dataset.testid = 'speaker';
  b.append(who, el('div', 'text'));
  if (state.turnNow) b.dataset.turn = String(state.turnNow);
  row.append(avatarEl(role), b);
  messages().append(row);
  if (state.binding && !extra?.includes('opening')) addActions(b, role);
  return b;
}

// ---- role-play: actions on a message, variants, inline edits ----------------------

// A message's tools in a role-play session: regenerate / edit / roll back /
// delete on a reply, edit on the person's message. Each makes a branch (a
// child session, the source is never rewritten) that the page then shows.
function addActions(b, role) {
  const bar = el('div', 'msg-actions');
  bar.dataset.testid = 'msg-actions';
  const act = (icon, key, fn) => {
    const x = el('button', 'ghost act', icon);
    x.type = 'button';
    x.title = t(key);
    x.setAttribute('aria-label', t(key));
    x.dataset.act = key;
    x.onclick = (e) => { e.stopPropagation(); if (!state.running) fn(); };
    bar.append(x);
  };
  const turn = () => Number(b.dataset.turn);
  if (role === 'assistant') {
    act('↻', 'actRegenerate', () => branchFrom('regenerate', { turn: turn() }));
    act('✎', 'actEdit', () => editInline(b, 'editAssistantMessage'));
    act('⤺', 'actRollback', () => branchFrom('rollbackToFloor', { turn: turn() }));
    act('✕', 'actDelete', () => (turn() > 1
      ? branchFrom('rollbackToFloor', { turn: turn() - 1 })
      : addNotice({ level: 'error', text: t('cannotDeleteFirst') })));
  } else {
    act('✎', 'actEdit', () => editInline(b, 'editUserMessage'));
  }
  b.append(bar);
}

// Shows variant arrows ‹ n/m › on the last reply of the turn where this
// session's branches part (the parent counts as variant 1).
function drawSwipe() {
  for (const x of messages().querySelectorAll('.swipe-nav')) x.remove();
  const sw = state.swipe;
  if (!sw || sw.total < 2) return;
  const replies = [...messages().querySelectorAll(`.msg.assistant[data-turn="${sw.turn}"]`)];
  const b = replies[replies.length - 1];
  if (!b) return;
  const nav = el('div', 'swipe-nav');
  nav.dataset.testid = 'swipe';
  const go = (d) => swipeTo(d);
  const prev = el('button', 'ghost', '‹');
  prev.type = 'button';
  prev.setAttribute('aria-label', t('prevVariant'));
  prev.onclick = () => go(-1);
  const next = el('button', 'ghost', '›');
  next.type = 'button';
  next.setAttribute('aria-label', t('nextVariant'));
  next.onclick = () => go(1);
  const at = el('span', 'at', `${sw.index}/${sw.total}`);
  at.dataset.testid = 'swipe-index';
  nav.append(prev, at, next);
  (b.querySelector('.msg-actions') || b).prepend(nav);
}

async function swipeTo(d) {
  const sw = state.swipe;
  if (!sw || sw.total < 2 || state.running) return;
  // › on the last variant asks for a new one, as SillyTavern's swipe does:
  // a branch of the parent at that turn whose turn is a `swipe` generation
  if (d > 0 && sw.index === sw.total) {
    await branchFrom('regenerate', { sessionId: sw.siblings[0], turn: sw.turn, generationType: 'swipe' });
    return;
  }
  const i = (sw.index - 1 + d + sw.total) % sw.total;
  await openSession(sw.siblings[i]);
}

async function branchFrom(method, extra) {
  const r = await api.rpc('tavern', method, { sessionId: state.current, ...extra }).catch((e) => ({ ok: false, error: e }));
  if (!r.ok) { addNotice({ level: 'error', text: r.error.message, code: r.error.code }); return; }
  await refreshSessions();
  await openSession(r.value.childSessionId);
  if (r.value.resend) await send(r.value.resend.text);
}

// Edit in place: the message's text becomes a box holding the original.
function editInline(b, method) {
  if (b.querySelector('.edit-box')) return;
  const box = b.querySelector('.text');
  const area = el('textarea', 'edit-box');
  area.value = box.dataset.raw || box.textContent;
  area.rows = Math.min(12, Math.max(3, area.value.split('\n').length + 1));
  area.dataset.testid = 'edit-box';
  const save = el('button', 'primary', t('save'));
  save.type = 'button';
  save.dataset.testid = 'edit-save';
  const cancel = el('button', 'ghost', t('cancel'));
  cancel.type = 'button';
  const row = el('div', 'edit-row');
  row.append(save, cancel);
  box.hidden = true;
  box.after(area, row);
  area.focus();
  const close = () => { area.remove(); row.remove(); box.hidden = false; };
  cancel.onclick = close;
  save.onclick = () => {
    const text = area.value.trim();
    if (!text || text === (box.dataset.raw || '').trim()) return close();
    branchFrom(method, { turn: Number(b.dataset.turn), text });
  };
  area.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') close();
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) save.click();
  });
}

function setText(b, text) {
  const box = b.querySelector('.text');
  box.dataset.raw = text;
  box.innerHTML = renderStory(text); // escaped by renderStory: no HTML from the model
}

function addUser(p) {
  const note = tavernNotice(p);
  if (note) return addChip(note);
  const b = messageEl('user');
  setText(b, p.text || '');
}

// The tavern's own messages (a same-turn write, a "continue" request) are
// small system chips in the page's language, never the person's bubbles.
function addChip(note) {
  clearEmpty();
  const c = el('div', `chip ${note.kind}`, t(note.key));
  c.dataset.testid = 'tavern-note';
  // the tavern's own words (English, as the model reads them) as the tooltip, in the en view
  if (note.raw && getLang() === 'en') c.title = note.raw;
  messages().append(c);
}

// The session's opening (a character's greeting): the first assistant
// message; a later one (a greeting swapped before the talk began) replaces it.
function showOpening(p) {
  clearEmpty();
  let b = messages().querySelector('[data-testid="opening"]');
  if (!b) {
    b = messageEl('assistant', 'opening');
    b.dataset.testid = 'opening';
    messages().prepend(b.parentElement);
  }
  setText(b, p.text || '');
}

function ensureStream() {
  if (!state.stream) {
    state.stream = messageEl('assistant', 'streaming');
    state.stream.dataset.testid = 'assistant';
    state.stream.querySelector('.text').dataset.raw = '';
  }
  return state.stream;
}

function appendReasoning(text) {
  const b = ensureStream();
  if (!state.reasoning) {
    state.reasoning = el('details', 'reasoning');
    state.reasoning.append(el('summary', null, t('thinking')), el('span', 'rtext'));
    b.querySelector('.text').before(state.reasoning);
  }
  state.reasoning.querySelector('.rtext').textContent += text;
}

// Streamed text is re-rendered at most once a frame.
let paintQueued = null;
function appendText(text) {
  const b = ensureStream();
  const box = b.querySelector('.text');
  box.dataset.raw += text;
  if (paintQueued === box) return;
  paintQueued = box;
  requestAnimationFrame(() => {
    if (paintQueued === box) paintQueued = null;
    box.innerHTML = renderStory(box.dataset.raw);
    scrollDown();
  });
}

// Replaces the streamed bubble with the final message (or renders a stored one).
function finishAssistant(p) {
  // An engine turn advertises its tool calls in a message without text while
  // its reply still streams (the text is written once, at the end): keep the
  // streaming bubble and just add the cards.
  if (!p.text && !p.reasoning && (p.toolCalls || []).length) {
    for (const c of p.toolCalls) toolCard(c.id, c.name, c.arguments);
    return;
  }
  const b = ensureStream();
  b.classList.remove('streaming');
  paintQueued = null;
  setText(b, p.text || '');
  if (p.reasoning) {
    if (!state.reasoning) appendReasoning('');
    state.reasoning.querySelector('.rtext').textContent = p.reasoning;
  }
  if (!p.text && !p.reasoning) b.parentElement.remove();
  state.stream = null;
  state.reasoning = null;
  for (const c of p.toolCalls || []) toolCard(c.id, c.name, c.arguments);
}

// A tool call: one line (name, state) that opens to the arguments and result.
function toolCard(callId, name, args, present) {
  let card = state.cards.get(callId);
  if (card) return card;
  clearEmpty();
  card = el('details', 'tool-card');
  card.dataset.testid = 'tool-card';
  card.dataset.callId = callId;
  const head = el('summary');
  head.append(el('span', 'icon', 'ƒ'), el('span', 'name', name), el('span', 'state', t('running')));
  card.append(head, el('div', 'label', t('args')), el('pre', 'args', prettyArgs(args)));
  if (present) drawIntent(card, present);
  messages().append(card);
  state.cards.set(callId, card);
  return card;
}

function prettyArgs(args) {
  try { return JSON.stringify(JSON.parse(args || '{}'), null, 2); } catch { return args || ''; }
}

function toolResult(p) {
  const card = toolCard(p.callId, p.name || '?', '');
  card.classList.add(p.isError ? 'error' : 'ok');
  card.querySelector('.state').textContent = p.isError
    ? `${t('failed')}${p.error && p.error.code ? ` · ${p.error.code}` : ''}` : t('ok');
  const text = (p.content || []).map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('\n');
  let pre = card.querySelector('pre.result');
  if (!pre) {
    card.append(el('div', 'label', t('result')));
    pre = el('pre', 'result');
    card.append(pre);
  }
  pre.textContent = text;
  // search hits: their relevance to the best hit instead of raw scores
  const hits = !p.isError && scoredHits(text);
  card.querySelector('ol.hits')?.remove();
  if (hits) {
    const ol = el('ol', 'hits');
    ol.dataset.testid = 'hits';
    for (const h of hits) {
      const li = el('li');
      const score = el('span', 'score', t('hitRelevance').replace('{p}', h.pct));
      score.title = t('hitScore').replace('{s}', h.raw);
      li.append(score, el('span', 'body', h.body));
      ol.append(li);
    }
    pre.before(ol);
  }
  if (p.present) drawIntent(card, p.present);
}

// The card's render intent (tool_cards.js) above the plain result.
function drawIntent(card, present) {
  let body = card.querySelector('.card-body');
  if (!body) { body = el('div', 'card-body'); card.querySelector('summary').after(body); }
  if (renderIntent(body, present, t)) card.dataset.card = present.card;
}

// Model failures: the cause as the endpoint said it (the message carries
// "HTTP <status>: <the endpoint's message>") and what to do, by code.
const MODEL_CODES = new Set(['MISSING_CREDENTIAL', 'INVALID_CREDENTIAL', 'QUOTA', 'RATE_LIMIT',
  'CONTEXT_WINDOW_EXCEEDED', 'TIMEOUT', 'LLM_STREAM_IDLE_TIMEOUT', 'TRANSPORT', 'SERVER',
  'INVALID_REQUEST', 'BAD_RESPONSE', 'EMPTY_RESPONSE', 'REPLY_TOO_LARGE', 'INVALID_CONFIG']);

function addNotice(p) {
  clearEmpty();
  const n = el('div', `notice ${p.level === 'error' ? 'error' : ''}`);
  n.dataset.testid = 'notice';
  if (p.code) n.dataset.code = p.code;
  if (p.level === 'error' && MODEL_CODES.has(p.code)) {
    n.classList.add('model-error');
    n.append(el('strong', null, t('modelFailed')), el('div', 'cause', p.text || p.code));
    n.append(el('div', 'fix', t(`fix.${p.code}`)));
  } else {
    n.textContent = p.text;
  }
  if (p.code) n.title = p.code;
  messages().append(n);
}

function addCommand(run, done) {
  clearEmpty();
  const box = el('div', `command ${done && done.kind === 'error' ? 'error' : ''}`);
  box.dataset.testid = 'command';
  box.append(el('header', null, `/${run.name}${run.args ? ` ${run.args}` : ''}`));
  if (done && done.text) box.append(el('pre', null, done.text));
  messages().append(box);
}

// One event, from the stored log (live=false) or the SSE stream (live=true).
function render(type, p, live) {
  if (p && p.seq !== undefined) {
    if (state.seen.has(p.seq)) return;
    state.seen.add(p.seq);
  }
  if (p && p.turn) state.turnNow = p.turn;
  switch (type) {
    case 'user/message': addUser(p); break;
    case 'reasoning/delta': appendReasoning(p.text || ''); break;
    case 'text/delta': appendText(p.text || ''); break;
    case 'assistant/message': finishAssistant(p); break;
    case 'session/opening': showOpening(p); break;
    case 'tool/call': toolCard(p.callId, p.name, p.arguments, p.present); break;
    case 'tool/result': toolResult(p); break;
    case 'tool/update': {
      const card = toolCard(p.callId, p.name || '?', '');
      card.querySelector('.state').textContent = p.status;
      break;
    }
    case 'approval/request': showApproval(p); break;
    case 'approval/resolved': dropApproval(p.id); break;
    case 'notice': addNotice(p); break;
    case 'command/done':
      if (live) addCommand({ name: p.name || '', args: '' }, p);
      break;
    case 'turn/start': if (live) setRunning(true); break;
    case 'turn/end':
      if (live) performance.mark('cdsh:turn-end');
      if (live) { setRunning(false); renderEngine(); }
      if (state.stream) finishAssistant({ text: state.stream.querySelector('.text').dataset.raw || '' });
      if (live) drawSwipe(); // a branch's first reply arrives after the arrows were drawn
      break;
    case 'turn/error': addNotice({ level: 'error', text: p.message, code: p.code }); setRunning(false); break;
    default: break;
  }
  // a stored transcript scrolls once at its end (openSession): scrolling per
  // message would lay the page out again for each of them
  if (live) scrollDown();
}

function setRunning(on) {
  if (!on) state.turnsEnded++;
  state.running = on;
  $('stop').hidden = !on;
  $('send').disabled = on;
  $('fork').disabled = on;
  $('engine-select').disabled = on || !!$('engine-lock').textContent;
  renderSessions();
}

// ---- sessions ---------------------------------------------------------------------

// A session's title in the page's language ("New chat" is the server's
// default for a session made without one).
function sessionTitle(s) {
  if (!s.title) return t('untitled');
  if (s.title === 'New chat') return t('newChat');
  // a tavern branch: "<character> — turn N, variant K"
  const m = /^(.*) — turn (\d+), variant (\d+)$/.exec(s.title);
  if (m) return t('branchTitle').replace('{name}', m[1]).replace('{turn}', m[2]).replace('{variant}', m[3]);
  return s.title;
}

// The sidebar: sessions as a tree (a fork or a tavern branch under the
// session it came from). A session's branches are folded behind a
// "n branches" toggle unless it or one of them is open, so regenerating and
// editing do not flood the list.
function renderSessions() {
  const ul = $('sessions');
  ul.textContent = '';
  const byId = new Map(state.sessions.map((s) => [s.id, s]));
  const kids = new Map();
  for (const s of state.sessions) {
    const p = s.parentId && byId.has(s.parentId) ? s.parentId : null;
    if (!kids.has(p)) kids.set(p, []);
    kids.get(p).push(s);
  }
  const holdsCurrent = (id) => id === state.current || (kids.get(id) || []).some((k) => holdsCurrent(k.id));
  const add = (s, depth, shown) => {
    const li = el('li', s.id === state.current ? 'active' : '');
    li.dataset.id = s.id;
    li.dataset.testid = 'session';
    li.hidden = !shown;
    if (depth) { li.classList.add('branch'); li.style.paddingLeft = `${0.55 + Math.min(depth, 4) * 0.9}rem`; }
    li.append(el('span', 'title', sessionTitle(s)));
    li.title = sessionTitle(s);
    if (s.running || (s.id === state.current && state.running)) li.append(el('span', 'busy'));
    const children = kids.get(s.id) || [];
    const open = state.expanded.has(s.id) || holdsCurrent(s.id);
    if (children.length) {
      const tog = el('button', 'branches', `${open ? '▾' : '▸'} ${children.length}`);
      tog.title = t('branches').replace('{n}', children.length);
      tog.dataset.testid = 'branches';
      tog.onclick = (e) => {
        e.stopPropagation();
        if (state.expanded.has(s.id)) state.expanded.delete(s.id); else state.expanded.add(s.id);
        renderSessions();
      };
      li.append(tog);
    }
    const del = el('button', 'del', '×');
    del.title = t('delete');
    del.onclick = async (e) => {
      e.stopPropagation();
      if (!confirm(t('deleteConfirm'))) return;
      await api.deleteSession(s.id).catch((err) => alert(err.message));
      if (state.current === s.id) openSession(null);
      refreshSessions();
    };
    li.append(del);
    li.onclick = () => { showView('chat'); openSession(s.id); };
    ul.append(li);
    for (const k of children) add(k, depth + 1, shown && open);
  };
  for (const s of kids.get(null) || []) add(s, 0, true);
}

async function refreshSessions() {
  try {
    state.sessions = (await api.sessions()).sessions;
  } catch { state.sessions = []; }
  renderSessions();
}

// `quiet`: the same session drawn again (a panel's reload, a language
// switch): the panels are not told of a session change.
async function openSession(id, { quiet = false } = {}) {
  if (state.es) { state.es.close(); state.es = null; }
  state.current = id;
  state.seen.clear();
  state.cards.clear();
  state.stream = null;
  state.reasoning = null;
  state.approvals = [];
  if ($('approval').open) $('approval').close();
  messages().textContent = '';
  state.turnNow = null;
  $('rp-bar').hidden = true;
  if (!quiet) panelsSetSession(id);
  if (id) location.hash = `#${id}`;
  else if (!location.hash.startsWith('#/')) location.hash = '';
  $('fork').hidden = !id;
  if (!id) {
    $('engine-bar').hidden = true;
    messages().append(el('div', 'empty', t('empty')));
    $('chat-title').textContent = '';
    setRunning(false);
    renderSessions();
    return;
  }
  const [data] = await Promise.all([api.session(id), loadSpeakers(id)]);
  if (state.current !== id) return;
  $('chat-title').replaceChildren(sessionTitle(data.session), el('span', 'sid', ` · ${id}`));
  const runs = new Map();
  for (const ev of data.events) {
    const p = Object.assign({ seq: ev.seq, turn: ev.turn }, ev.payload || {});
    if (ev.type === 'command/run') { runs.set(p.commandId, p); state.seen.add(ev.seq); continue; }
    if (ev.type === 'command/done') { addCommand(runs.get(p.commandId) || { name: '?' }, p); state.seen.add(ev.seq); continue; }
    render(ev.type, p, false);
  }
  if (!data.events.length) messages().append(el('div', 'empty', t('emptySession')));
  drawSwipe();
  $('rp-bar').hidden = !state.binding;
  performance.mark('cdsh:transcript'); // the transcript is drawn (bench/web_story_bench.js)
  setRunning(!!data.session.running);
  // Events published after the snapshot follow; stored ones are skipped by seq.
  const es = new EventSource(`/api/sessions/${id}/events?after=${data.hubId}`);
  const types = ['turn/start', 'user/message', 'step/start', 'reasoning/delta', 'text/delta',
    'assistant/message', 'tool/call', 'tool/result', 'notice', 'turn/end', 'turn/error',
    'command/done', 'plugin/state', 'sessions/change', 'reset', 'tool/update',
    'approval/request', 'approval/resolved', 'session/opening'];
  for (const type of types) {
    es.addEventListener(type, (m) => {
      const p = JSON.parse(m.data);
      if (type === 'plugin/state') return panelsDeliver(type, p);
      if (type === 'sessions/change') return refreshSessions();
      if (type === 'reset') return openSession(id);
      render(type, p, true);
    });
  }
  state.es = es;
  renderSessions();
  scrollDown();
  await renderEngine();
  try {
    for (const a of (await api.approvals(id)).approvals) showApproval(a);
  } catch { /* no pending requests */ }
}

// A tavern call's value, or null (plugin off, unbound, any failure).
async function tavern(method, payload) {
  try {
    const r = await api.rpc('tavern', method, payload || {});
    return r.ok ? r.value : null;
  } catch { return null; }
}

// The character and persona of a role-play session (null for any other).
async function loadSpeakers(id) {
  state.speakers = null;
  state.binding = null;
  state.swipe = null;
  const b = await tavern('getSessionBinding', { sessionId: id });
  if (!b || !b.binding) return;
  state.binding = b.binding;
  const sib = await tavern('getFloorSiblings', { sessionId: id });
  state.swipe = (sib && sib.swipe) || null;
  const [cards, personas] = await Promise.all([tavern('listCharacters'), tavern('listPersonas')]);
  const card = (cards || []).find((c) => c.cardId === b.binding.cardId);
  const persona = (personas || []).find((x) => x.id === b.binding.personaId);
  let avatar = state.avatars.get(b.binding.cardId);
  if (avatar === undefined && card && card.hasAvatar) {
    const x = await tavern('exportCharacter', { cardId: card.cardId });
    avatar = x && x.pngBase64 ? `data:image/png;base64,${x.pngBase64}` : null;
    state.avatars.set(b.binding.cardId, avatar);
  }
  state.speakers = {
    assistant: { name: card ? card.name : null, avatar: avatar || null },
    user: { name: persona ? persona.name : null, avatar: (persona && persona.avatar) || null },
  };
}

// Forks the current session (its engine binding goes along) and switches to
// the copy; the participants' notes are shown there.
async function forkCurrent() {
  const parent = state.current;
  if (!parent || state.running) return;
  let res;
  try {
    res = await api.forkSession(parent);
  } catch (e) {
    addNotice({ level: 'error', text: e.code === 'SESSION_BUSY' ? t('busy') : e.message, code: e.code });
    return;
  }
  await refreshSessions();
  await openSession(res.session.id);
  if (state.current !== res.session.id) return;
  addNotice({ text: `${t('forked')} ${parent}` });
  for (const note of res.notes || []) addNotice({ text: note });
  scrollDown();
}

// ---- engine picker -----------------------------------------------------------------

function engineName(e) {
  const l = e.label || {};
  return l[getLang()] || l.en || e.id;
}

function engineLabel(e) {
  let text = engineName(e);
  if (!e.enabled) text += ` (${t('engineDisabled')})`;
  else if (!e.resolved || !e.resolved.found) text += ` (${t('engineMissing')})`;
  return text;
}

// A select for one config option or for the modes, with the agent's own names.
function configSelect(name, current, choices, onPick) {
  const wrap = el('label', null, `${name} `);
  const sel = el('select');
  sel.dataset.testid = 'engine-option';
  for (const c of choices) {
    const o = el('option', null, c.name || c.value);
    o.value = c.value;
    if (c.description) o.title = c.description;
    if (c.value === current) o.selected = true;
    sel.append(o);
  }
  sel.onchange = () => onPick(sel.value);
  wrap.append(sel);
  return wrap;
}

function renderConfig(id, config) {
  const box = $('engine-config');
  box.textContent = '';
  if (!config) return;
  const pick = (configId) => async (value) => {
    try { await api.setEngineConfig(id, configId, value); } catch (e) { addNotice({ level: 'error', text: e.message }); }
    renderEngine();
  };
  const opts = config.configOptions || [];
  for (const o of opts) {
    if (o.type !== 'select') continue;
    const choices = [];
    for (const c of o.options || []) {
      if (c.options) for (const g of c.options) choices.push(g); // grouped options
      else choices.push(c);
    }
    const w = configSelect(o.name || o.id, o.currentValue, choices, pick(o.id));
    if (o.description) w.title = o.description;
    box.append(w);
  }
  if (!opts.length && config.modes) {
    const m = config.modes;
    box.append(configSelect('mode', m.currentModeId,
      (m.availableModes || []).map((x) => ({ value: x.id, name: x.name, description: x.description })),
      pick('mode')));
  }
}

async function renderEngine() {
  const id = state.current;
  const bar = $('engine-bar');
  const unbound = () => { bar.hidden = true; state.bound = null; renderStatus(); };
  if (!id || !state.engines.length) return unbound();
  let info;
  try { info = await api.engine(id); } catch { return unbound(); }
  if (id !== state.current) return;
  bar.hidden = false;
  state.bound = info.binding || null;
  renderStatus();
  const sel = $('engine-select');
  sel.textContent = '';
  const model = el('option', null, t('engineModel'));
  model.value = '';
  sel.append(model);
  for (const e of state.engines) {
    const o = el('option', null, engineLabel(e));
    o.value = e.id;
    o.disabled = !e.enabled || !e.resolved || !e.resolved.found;
    sel.append(o);
  }
  const bound = info.binding ? info.binding.engineId : '';
  sel.value = bound;
  sel.disabled = info.locked || state.running;
  const lock = $('engine-lock');
  lock.hidden = !info.locked;
  lock.textContent = info.locked ? t('engineLocked') : '';
  renderConfig(id, info.config);
  sel.onchange = async () => {
    try {
      if (sel.value) {
        await api.bindEngine(id, sel.value);
        await api.openEngine(id).catch((e) => addNotice({ level: 'error', text: e.message }));
      } else {
        await api.unbindEngine(id);
      }
    } catch (e) {
      addNotice({ level: 'error', text: e.message, code: e.code });
    }
    renderEngine();
  };
}

// ---- approval dialog ------------------------------------------------------------------

function showApproval(req) {
  if (req.sessionId !== state.current || state.approvals.some((a) => a.id === req.id)) return;
  state.approvals.push(req);
  if (state.approvals.length === 1) presentApproval();
}

function dropApproval(id) {
  const first = state.approvals[0];
  state.approvals = state.approvals.filter((a) => a.id !== id);
  if (first && first.id === id) presentApproval();
}

// Shows the oldest pending request. An agent's option labels are shown as
// the agent sent them; only cdsh's own two tool options are translated.
function presentApproval() {
  const dlg = $('approval');
  const req = state.approvals[0];
  if (!req) { if (dlg.open) dlg.close(); return; }
  $('approval-head').textContent = `${t('approvalHead')} — ${req.source === 'acp' ? t('approvalAgent') : t('approvalTool')}`;
  $('approval-title').textContent = req.title;
  $('approval-desc').textContent = req.description || '';
  const box = $('approval-options');
  box.textContent = '';
  for (const o of req.options) {
    let label = o.name;
    if (req.source === 'tool' && o.optionId === 'allow_once') label = t('approvalAllowOnce');
    if (req.source === 'tool' && o.optionId === 'reject_once') label = t('approvalReject');
    const b = el('button', (o.kind || '').startsWith('allow') ? 'primary' : 'ghost', label);
    b.type = 'button';
    b.dataset.testid = 'approval-option';
    b.dataset.optionId = o.optionId;
    b.onclick = () => answerApproval(req, o.optionId);
    box.append(b);
  }
  $('approval-cancel').onclick = () => answerApproval(req, null);
  if (!dlg.open) dlg.showModal();
}

async function answerApproval(req, optionId) {
  try {
    if (optionId) await api.answerApproval(req.sessionId, req.id, optionId);
    else await api.cancelApproval(req.sessionId, req.id);
  } catch (e) {
    if (e.code !== 'NO_APPROVAL') addNotice({ level: 'error', text: e.message });
  }
  dropApproval(req.id);
}

async function newSession() {
  const s = (await api.createSession()).session;
  await refreshSessions();
  await openSession(s.id);
  return s.id;
}

// ---- composer ---------------------------------------------------------------------

async function send(text) {
  text = (text || '').trim();
  if (!text) return;
  if (!state.current) await newSession();
  if (text.startsWith('/')) return command(text);
  try {
    const ended = state.turnsEnded;
    await api.send(state.current, text);
    // a fast turn may have ended before the POST returned: do not revive Stop
    if (state.turnsEnded === ended) setRunning(true);
  } catch (e) {
    addNotice({ level: 'error', text: e.code === 'SESSION_BUSY' ? t('busy') : e.message });
  }
}

async function command(line) {
  if (!state.current) await newSession();
  try {
    await api.command(state.current, line);
  } catch (e) {
    addNotice({ level: 'error', text: e.message });
  }
}

function setupComposer() {
  const input = $('input');
  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const text = input.value;
    input.value = '';
    send(text);
  });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('stop').onclick = () => state.current && api.cancel(state.current);
  $('new-session').onclick = () => newSession();
  $('fork').onclick = () => forkCurrent();
  $('fork').title = t('forkTitle');
  $('lang').onclick = () => setLang(getLang() === 'zh' ? 'en' : 'zh');
  for (const b of document.querySelectorAll('.narrow-tabs button')) b.onclick = () => showView(b.dataset.view);
  // role-play: continue the last reply, or let the model write the person's line
  $('rp-continue').onclick = async () => {
    if (state.running || !state.current) return;
    const r = await tavern('continueFloor', { sessionId: state.current });
    if (r && r.resend) send(r.resend.text);
  };
  $('rp-impersonate').onclick = async () => {
    if (state.running || !state.current) return;
    $('rp-impersonate').disabled = true;
    const r = await api.rpc('tavern', 'impersonate', { sessionId: state.current }).catch((e) => ({ ok: false, error: e }));
    $('rp-impersonate').disabled = false;
    if (!r.ok) { addNotice({ level: 'error', text: r.error.message, code: r.error.code }); return; }
    input.value = r.value.text || '';
    input.focus();
  };
  // ← / → walk a turn's variants (not while typing)
  document.addEventListener('keydown', (e) => {
    const tag = (document.activeElement && document.activeElement.tagName) || '';
    if (['INPUT', 'TEXTAREA', 'SELECT'].includes(tag) || e.altKey || e.ctrlKey || e.metaKey) return;
    if (document.querySelector('dialog[open]')) return;
    if (e.key === 'ArrowLeft' && state.swipe) { e.preventDefault(); swipeTo(-1); }
    if (e.key === 'ArrowRight' && state.swipe) { e.preventDefault(); swipeTo(1); }
  });
}

// Narrow windows show one column at a time (sessions, the story, the panels).
function showView(view) {
  $('layout').dataset.view = view;
  for (const b of document.querySelectorAll('.narrow-tabs button')) b.classList.toggle('active', b.dataset.view === view);
}

// ---- status -----------------------------------------------------------------------

function renderStatus() {
  const s = state.status;
  if (!s) return;
  const box = $('model-status');
  box.textContent = '';
  const dot = el('span', `dot ${s.model.configured ? '' : 'off'}`);
  box.append(dot, document.createTextNode(s.model.configured
    ? `${t('modelOn')}: ${s.model.model} · ${s.model.baseUrl}` : t('modelOff')));
  const banner = $('banner');
  banner.textContent = '';
  banner.classList.toggle('engine', !!state.bound);
  if (state.bound) {
    // A session bound to an ACP engine needs no model: say who answers instead.
    const e = state.engines.find((x) => x.id === state.bound.engineId);
    banner.hidden = false;
    banner.append(el('strong', null, `${t('engineBanner')}: ${e ? engineName(e) : state.bound.engineId}`),
      document.createTextNode(` — ${t('engineNoModel')}` +
        (state.bound.cwd ? ` (${t('engineCwd')} ${state.bound.cwd})` : '')));
    return;
  }
  banner.hidden = s.model.configured;
  if (!s.model.configured) {
    banner.append(el('strong', null, t('noModel')), document.createTextNode(' ' + t('noModelHint')));
    banner.title = s.model.hint || '';
  }
}

async function main() {
  // The page's response set the token cookie: drop the token from the address bar
  // first, before anything is shown.
  if (location.search.includes('token=')) history.replaceState(null, '', `/${location.hash}`);
  applyStatic();
  onLang(() => {
    renderStatus(); renderSessions(); renderEngine(); presentApproval();
    // the transcript's own words (names, chips, tool states) in the new language
    if (state.current && !state.running) openSession(state.current, { quiet: true });
    else if (!state.current) for (const e of messages().querySelectorAll('.empty')) e.textContent = t('empty');
    $('fork').title = t('forkTitle');
  });
  $('approval').addEventListener('cancel', (e) => e.preventDefault()); // Esc: answer explicitly
  setupComposer();
  try { state.status = await api.status(); } catch (e) { state.status = null; }
  renderStatus();
  try { state.engines = (await api.engines()).engines; } catch { state.engines = []; }
  await refreshSessions();
  // Panels may switch the page to a session they created (a tavern branch).
  const openFromPanel = async (id) => { await refreshSessions(); await openSession(id); };
  // a panel changed what the transcript shows (a card bound, a greeting swapped)
  const reload = async () => { if (state.current) await openSession(state.current, { quiet: true }); };
  await mountPanels($('panels'), { send, command, openSession: openFromPanel, reload });
  mountJobs(document.querySelector('.sidebar')); // background jobs (jobs.js)
  // Routes: #/characters (the gallery), #/characters/<cardId> (a card's
  // page), #<sessionId> or #/ (the chat).
  const characters = createCharacters($('rp-view'), {
    openStory: async (sid) => { await refreshSessions(); showView('chat'); await openSession(sid); },
  });
  const route = async () => {
    const h = location.hash;
    const rp = /^#\/characters(?:\/(.*))?$/.exec(h);
    $('layout').hidden = !!rp;
    $('narrow-tabs').hidden = !!rp;
    $('rp-view').hidden = !rp;
    $('route-chat').classList.toggle('active', !rp);
    $('route-characters').classList.toggle('active', !!rp);
    if (rp) return characters.show(rp[1] ? [rp[1]] : []);
    const sid = h.startsWith('#/') ? '' : h.slice(1);
    if (sid && sid !== state.current && state.sessions.some((s) => s.id === sid)) await openSession(sid);
  };
  window.addEventListener('hashchange', () => { route().catch((e) => console.warn(e)); });
  onLang(() => { if (!$('rp-view').hidden) route(); });
  await route();
  // Global events: plugin state without a session, session list changes.
  const g = new EventSource('/api/events');
  g.addEventListener('plugin/state', (m) => {
    if (!state.es) panelsDeliver('plugin/state', JSON.parse(m.data));
  });
  g.addEventListener('sessions/change', () => refreshSessions());
}

main();
