// tavern.js — the role-play panel (ES module): mount(element, host) with the
// web front end's panel API (host.rpc, host.sessionId, host.onSession,
// host.send, host.lang, host.onLang; host.openSession and host.onState when
// present), or a standalone host built on the /rpc/tavern HTTP gateway. Every call goes
// through the rpc() wrapper below to the /tavern channel; the service
// implements each of them (a test enumerates the calls in this file and in the
// editor modules library.js / lore-editor.js, which get the panel's ctx).
import { translate } from './i18n.js';
import { applyDisplayRegex, renderMarkdown, isCardHtml } from './render.js';
import { mountCardFrame, cardFrameUrl } from './frame.js';
import { dialog } from './dialog.js';
import { viewBooks, viewAssets } from './library.js';
import { lazyRemote } from '../remote.js';

const TABS = ['Library', 'Chat', 'Lore', 'Books', 'Assets', 'Memory', 'World', 'Journal', 'Settings', 'Prompt'];
const TAB_KEYS = { Library: 'tabLibrary', Chat: 'tabChat', Lore: 'tabLore', Books: 'tabBooks', Assets: 'tabAssets',
  Memory: 'tabMemory', World: 'tabWorld', Journal: 'tabJournal', Settings: 'tabSettings', Prompt: 'tabPrompt' };

function standaloneHost() {
  let sid = new URLSearchParams(location.search).get('session');
  const listeners = new Set();
  return {
    async rpc(channel, endpoint, payload) {
      const rpcId = String(Math.random()).slice(2);
      const res = await fetch(`/rpc/${channel.replace(/^\//, '')}/${endpoint}`, {
        method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ type: 'client-request', rpcId, method: endpoint, payload: payload ?? null }),
      });
      return (await res.json()).result;
    },
    sessionId: () => sid,
    onSession: (fn) => { listeners.add(fn); return () => listeners.delete(fn); },
    // the session's event stream, reopened when the session changes
    onState(fn) {
      let es = null;
      const follow = () => {
        if (es) es.close();
        es = sid ? new EventSource(`/api/sessions/${encodeURIComponent(sid)}/events`) : null;
        if (es) es.addEventListener('plugin/state', (m) => { const ev = JSON.parse(m.data); if (ev.plugin === 'tavern') fn(ev); });
      };
      follow();
      listeners.add(follow);
      return () => { listeners.delete(follow); if (es) es.close(); };
    },
    send: async () => {},
    lang: () => (navigator.language || 'en').startsWith('zh') ? 'zh' : 'en',
    onLang: () => () => {},
    // a branch's child session becomes the page's session (and its address)
    openSession: async (id) => {
      sid = id;
      history.replaceState(null, '', `?session=${encodeURIComponent(id)}`);
      for (const fn of listeners) fn(id);
    },
  };
}

export async function mount(root, host = standaloneHost()) {
  const state = { tab: 'Library', disposers: [], frames: [] };
  const t = (k, v) => translate(host.lang(), k, v);
  // A failing handler (an rpc() error, already in the status line) never
  // escapes as an unhandled rejection.
  const report = (e) => { if (!e.code) status.textContent = t('error', { msg: e.message }); };
  const el = (tag, attrs = {}, ...kids) => {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (k.startsWith('on')) {
        n.addEventListener(k.slice(2), (ev) => {
          try { Promise.resolve(v(ev)).catch(report); } catch (e) { report(e); }
        });
      }
      else if (k === 'text') n.textContent = v;
      else n.setAttribute(k, v);
    }
    for (const c of kids) if (c) n.append(c);
    return n;
  };
  const status = el('div', { class: 'tavern-status', role: 'status' });
  const tabs = el('nav', { class: 'tavern-tabs' });
  const view = el('div', { class: 'tavern-view' });
  root.append(tabs, status, view);

  // The method names are the tavern's own: the remote is built from its $ops.
  const remote = lazyRemote(host, '/tavern');
  async function rpc(method, payload) {
    const r = await remote(method, payload || {});
    if (!r.ok) {
      const msg = r.error.code === 'revision-conflict' ? t('revisionConflict') : r.error.message;
      status.textContent = t('error', { msg });
      throw Object.assign(new Error(msg), { code: r.error.code || 'error' });
    }
    status.textContent = '';
    return r.value;
  }
  const sid = () => host.sessionId();
  // the page's transcript shows the greeting and the speakers: redraw it
  const reloadChat = () => (host.reload ? host.reload() : null);
  const needBound = async () => {
    if (!sid()) { view.append(el('p', { text: t('noSession') })); return null; }
    const b = await rpc('getSessionBinding', { sessionId: sid() });
    if (!b.binding) { view.append(el('p', { text: t('notBound') })); return null; }
    return b;
  };
  const fileToBase64 = (file) => new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result).replace(/^data:[^,]*,/, ''));
    r.onerror = reject;
    r.readAsDataURL(file);
  });

  function drawTabs() {
    tabs.replaceChildren(...TABS.map((name) => el('button', {
      class: name === state.tab ? 'active' : '', text: t(TAB_KEYS[name]),
      onclick: () => { state.tab = name; redraw(); },
    })));
  }

  async function drawOnce() {
    for (const d of state.frames.splice(0)) d();
    drawTabs();
    view.replaceChildren();
    try { await VIEWS[state.tab](); } catch (e) { status.textContent = t('error', { msg: e.message }); }
  }
  // One draw at a time: a session switch, a language change and a button can
  // all ask at once; requests during a draw fold into one more draw after it.
  let drawing = null;
  let again = false;
  function redraw() {
    if (drawing) { again = true; return drawing; }
    drawing = (async () => {
      do { again = false; await drawOnce(); } while (again);
      drawing = null;
    })();
    return drawing;
  }

  // ---- character library ----------------------------------------------------
  async function viewLibrary() {
    const input = el('input', { type: 'file', accept: '.png,.json,.charx', hidden: '' });
    input.addEventListener('change', async () => {
      const file = input.files[0];
      if (!file) return;
      const fileBase64 = await fileToBase64(file);
      const info = await rpc('inspectCharacter', { fileBase64 });
      let book = 'discard';
      if (info.hasCharacterBook) {
        book = await dialog({
          title: t('embeddedBookTitle'), body: t('embeddedBookBody', { n: info.entryCount }),
          buttons: [{ label: t('importWithBook'), value: 'import' },
            { label: t('importWithoutBook'), value: 'discard' }, { label: t('cancel'), value: null }],
        });
        if (!book) return;
      }
      await rpc('importCharacter', { fileBase64, book });
      redraw();
    });
    view.append(el('button', { text: t('importCard'), onclick: () => input.click() }), input);
    const [cards, archivedCards, presets, personas, books] = await Promise.all([
      rpc('listCharacters'), rpc('listArchivedCharacters'), rpc('listPresets'), rpc('listPersonas'),
      rpc('listLorebooks')]);
    const binding = sid() ? (await rpc('getSessionBinding', { sessionId: sid() })).binding : null;
    const picker = (items, label) => {
      const s = el('select', { 'aria-label': label });
      s.append(el('option', { value: '', text: t('none') }));
      for (const it of items) s.append(el('option', { value: it.id, text: it.name || it.id }));
      return s;
    };
    const presetSel = picker(presets, t('preset'));
    const personaSel = picker(personas, t('persona'));
    if (binding) { presetSel.value = binding.presetId || ''; personaSel.value = binding.personaId || ''; }
    // Library lorebooks for this session (the binding's lorebookIds).
    const bookChecks = books.map((bk) => {
      const c = el('input', { type: 'checkbox', value: bk.id, 'data-testid': 'bind-book' });
      c.checked = !!binding && (binding.lorebookIds || []).includes(bk.id);
      return c;
    });
    const choice = () => ({ presetId: presetSel.value || null, personaId: personaSel.value || null,
      lorebookIds: bookChecks.filter((c) => c.checked).map((c) => c.value) });
    // Bound already: a changed pick applies at once (same card, same story).
    const rebind = async () => {
      if (!binding) return;
      await rpc('setSessionBinding', { sessionId: sid(), cardId: binding.cardId, ...choice() });
      status.textContent = t('saved');
      await reloadChat();
    };
    for (const c of [presetSel, personaSel, ...bookChecks]) c.addEventListener('change', () => rebind().catch(report));
    view.append(el('div', { class: 'tavern-pickers' },
      el('label', { class: 'row', text: t('preset') }, presetSel), el('label', { class: 'row', text: t('persona') }, personaSel),
      books.length ? el('fieldset', { class: 'tavern-bind-books' }, el('legend', { text: t('sessionBooks') }),
        ...books.map((bk, i) => el('label', { class: 'check', text: bk.name || bk.id }, bookChecks[i]))) : null));
    const list = el('ul', { class: 'tavern-cards' });
    for (const c of cards) {
      const avatar = el('img', { alt: '', class: 'avatar', width: '48', height: '48' });
      if (c.hasAvatar) rpc('exportCharacter', { cardId: c.cardId })
        .then((x) => { avatar.src = 'data:image/png;base64,' + x.pngBase64; }).catch(() => {});
      const playing = binding && binding.cardId === c.cardId;
      list.append(el('li', {}, avatar, el('span', { text: c.name }),
        el('button', { text: playing ? t('bound') : t('bind'), onclick: async () => {
          if (!sid()) { status.textContent = t('noSession'); return; }
          await rpc('setSessionBinding', { sessionId: sid(), cardId: c.cardId, ...choice() });
          await reloadChat();
          redraw();
        } }),
        el('button', { text: t('archive'), onclick: async () => {
          await rpc('archiveCharacter', { cardId: c.cardId }); redraw();
        } })));
    }
    view.append(list, el('h4', { text: t('archived') }));
    const box = el('ul', { class: 'tavern-cards archived' });
    for (const c of archivedCards) {
      box.append(el('li', {}, el('span', { text: c.name }),
        el('button', { text: t('restore'), onclick: async () => {
          await rpc('restoreCharacter', { cardId: c.cardId }); redraw();
        } }),
        el('button', { text: t('delete'), onclick: async () => {
          const yes = await dialog({ title: t('confirmDeleteTitle'), body: t('confirmDeleteBody', { name: c.name }),
            buttons: [{ label: t('delete'), value: true }, { label: t('cancel'), value: false }] });
          if (yes) { await rpc('deleteCharacter', { cardId: c.cardId }); redraw(); }
        } })));
    }
    view.append(box);
  }

  // ---- chat: floors, siblings, branch actions ----------------------------------
  // A branch is a child session: the whole page follows it (transcript,
  // session list, this panel), then the turn to replay is sent there.
  async function openSession(id) {
    if (host.openSession) await host.openSession(id);
    await redraw();
  }
  async function openChild(res) {
    await openSession(res.childSessionId);
    status.textContent = t('branchOpened', { id: res.childSessionId });
    if (res.resend && host.send) await host.send(res.resend.text);
  }

  // The greeting: card HTML runs in the sandboxed frame when interactive
  // cards are on, and is shown as inert text when they are off.
  async function renderGreeting(container, text, rules, interactive) {
    if (isCardHtml(text)) {
      if (!interactive) {
        container.append(el('pre', { class: 'tavern-inert', 'data-testid': 'card-inert', text }));
        return;
      }
      state.frames.push(mountCardFrame(container, cardFrameUrl(sid()), async (index) => {
        await rpc('swipeGreeting', { sessionId: sid(), index });
        await reloadChat();
        redraw();
      }));
      return;
    }
    await renderReply(container, text, rules);
  }

  async function renderReply(container, text, rules) {
    const shown = await applyDisplayRegex(text, rules);
    const div = el('div', { class: 'tavern-md' });
    div.innerHTML = renderMarkdown(shown); // escaped by renderMarkdown
    container.append(div);
  }

  async function viewChat() {
    const b = await needBound();
    if (!b) return;
    const [rules, settings] = await Promise.all([rpc('listRegexRules'), rpc('getSettings')]);
    if (b.canSwipeGreeting || !b.conversationStarted) {
      const g = await rpc('getGreetingSwipe', { sessionId: sid() });
      const box = el('div', { class: 'tavern-greeting', 'data-testid': 'greeting' }, el('h4', { text: t('greeting') }));
      const nav = el('div', { class: 'swipe' },
        el('button', { text: '‹', onclick: async () => {
          await rpc('swipeGreeting', { sessionId: sid(), index: (g.index + g.total - 1) % g.total });
          await reloadChat(); redraw();
        } }),
        el('span', { 'data-testid': 'greeting-index', text: `${g.index + 1}/${g.total}` }),
        el('button', { text: '›', onclick: async () => {
          await rpc('swipeGreeting', { sessionId: sid(), index: (g.index + 1) % g.total });
          await reloadChat(); redraw();
        } }));
      if (b.canSwipeGreeting) box.append(nav);
      await renderGreeting(box, g.text, rules, settings.interactiveCards !== false);
      view.append(box);
    }
    // Siblings: the parent first, then its branches at the same turn.
    const sib = (await rpc('getFloorSiblings', { sessionId: sid() })).swipe;
    if (sib) {
      const go = (i) => openSession(sib.siblings[i]);
      view.append(el('div', { class: 'swipe', title: t('siblings'), 'data-testid': 'siblings' },
        el('span', { text: t('siblingsAt', { n: sib.turn }) }),
        el('button', { text: '‹', 'aria-label': t('previousSibling'), onclick: () => go((sib.index - 2 + sib.total) % sib.total) }),
        el('span', { 'data-testid': 'sibling-index', text: `${sib.index}/${sib.total}` }),
        el('button', { text: '›', 'aria-label': t('nextSibling'), onclick: () => go(sib.index % sib.total) }),
        sib.index > 1 ? el('button', { 'data-testid': 'parent-session', text: t('backToParent'), onclick: () => go(0) }) : null));
    }
    // A child's story holds the floors it inherited from its lineage (each
    // ancestor up to its throughTurn) besides its own.
    const lineage = b.binding.walLineage || [];
    const live = (f) => !f.rolledBack && (f.session === sid() ||
      lineage.some((l) => l.sessionId === f.session && f.turn <= l.throughTurn));
    const floors = (await rpc('listFloors', { sessionId: sid() })).filter(live);
    const list = el('ol', { class: 'tavern-floors' });
    for (const f of floors) {
      const turn = f.turn;
      list.append(el('li', { 'data-testid': 'floor', 'data-turn': String(turn) }, el('span', { text: t('turn', { n: turn }) }),
        el('button', { text: t('regenerate'), onclick: async () => openChild(await rpc('regenerate', { sessionId: sid(), turn })) }),
        el('button', { text: t('rollback'), onclick: async () => openChild(await rpc('rollbackToFloor', { sessionId: sid(), turn })) }),
        // the edit opens on the original text (the turn's stored message)
        el('button', { text: t('editUser'), onclick: async () => {
          const orig = await rpc('getFloorUserMessage', { sessionId: sid(), turn });
          const text = await dialog({ title: t('editUserTitle', { n: turn }), input: orig.text,
            buttons: [{ label: t('ok'), value: true }, { label: t('cancel'), value: null }] });
          if (text && text !== orig.text) openChild(await rpc('editUserMessage', { sessionId: sid(), turn, text }));
        } }),
        el('button', { text: t('editAssistant'), onclick: async () => {
          const orig = await rpc('getFloorAssistantMessage', { sessionId: sid(), turn });
          const text = await dialog({ title: t('editReplyTitle', { n: turn }), input: orig.text,
            buttons: [{ label: t('ok'), value: true }, { label: t('cancel'), value: null }] });
          if (text && text !== orig.text) openChild(await rpc('editAssistantMessage', { sessionId: sid(), turn, text }));
        } })));
    }
    view.append(el('h4', { text: t('floors') }), list,
      el('button', { text: t('continueReply'), onclick: async () => {
        const r = await rpc('continueFloor', { sessionId: sid() });
        if (host.send) await host.send(r.resend.text);
      } }),
      el('button', { text: t('impersonate'), onclick: async () => {
        const r = await rpc('impersonate', { sessionId: sid() });
        const text = await dialog({ title: t('impersonate'), input: r.text,
          buttons: [{ label: t('sendLine'), value: true }, { label: t('cancel'), value: null }] });
        if (text && host.send) await host.send(text);
      } }));
  }

  // ---- lorebook (chat lorebook of the story) ------------------------------------
  async function viewLore() {
    if (!(await needBound())) return;
    const { value, revision } = await rpc('getChatLorebook', { sessionId: sid() });
    const book = value && value.entries ? value : { entries: {} };
    const rows = el('div', { class: 'tavern-lore' });
    const draw = () => {
      rows.replaceChildren();
      for (const [uid, e] of Object.entries(book.entries)) {
        const keys = el('input', { value: (e.key || []).join(', '), 'aria-label': t('keys') });
        const comment = el('input', { value: e.comment || '', 'aria-label': t('comment') });
        const content = el('textarea', { rows: '3', 'aria-label': t('content') });
        content.value = e.content || '';
        keys.addEventListener('change', () => { e.key = keys.value.split(',').map((s) => s.trim()).filter(Boolean); });
        comment.addEventListener('change', () => { e.comment = comment.value; });
        content.addEventListener('change', () => { e.content = content.value; });
        rows.append(el('fieldset', {}, el('legend', { text: uid }), comment, keys, content,
          el('button', { text: t('delete'), onclick: () => { delete book.entries[uid]; draw(); } })));
      }
    };
    draw();
    view.append(rows,
      el('button', { text: t('addEntry'), onclick: () => {
        const uid = String(Math.max(-1, ...Object.keys(book.entries).map(Number).filter(Number.isFinite)) + 1);
        book.entries[uid] = { uid: Number(uid), key: [], comment: '', content: '', order: 100 };
        draw();
      } }),
      el('button', { text: t('save'), onclick: async () => {
        await rpc('saveChatLorebook', { sessionId: sid(), book, expectedRevision: revision });
        status.textContent = t('saved'); redraw();
      } }));
  }

  // ---- memory ------------------------------------------------------------------
  async function viewMemory() {
    if (!(await needBound())) return;
    const m = await rpc('getMemories', { sessionId: sid() });
    const row = (e, archived) => el('li', {}, el('span', { class: 'story-text', text: e.body }),
      el('small', { text: ` [${(e.tags || []).join(', ')}]` }),
      archived ? null : el('button', { text: t('delete'), onclick: async () => {
        await rpc('deleteMemory', { sessionId: sid(), id: e.id }); redraw();
      } }),
      archived ? null : el('button', { text: t('save'), onclick: async () => {
        const body = await dialog({ title: t('body'), input: e.body, buttons: [{ label: t('ok'), value: true }, { label: t('cancel'), value: null }] });
        if (body) { await rpc('saveMemory', { sessionId: sid(), id: e.id, body, tags: e.tags, keys: e.keys }); redraw(); }
      } }));
    view.append(el('h4', { text: t('memories') }), el('ul', {}, ...m.active.map((e) => row(e, false))),
      el('button', { text: t('newMemory'), onclick: async () => {
        const body = await dialog({ title: t('newMemory'), input: '', buttons: [{ label: t('ok'), value: true }, { label: t('cancel'), value: null }] });
        if (body) { await rpc('saveMemory', { sessionId: sid(), body }); redraw(); }
      } }),
      el('button', { text: t('compress'), onclick: async () => { await rpc('compressMemories', { sessionId: sid() }); } }),
      el('h4', { text: t('archivedMemories') }), el('ul', {}, ...m.archived.map((e) => row(e, true))));
  }

  // ---- world state ----------------------------------------------------------------
  async function viewWorld() {
    if (!(await needBound())) return;
    const deltas = await rpc('getWorldDeltas', { sessionId: sid() });
    const type = el('select', { 'aria-label': t('type') }, ...['add', 'update', 'invalidate'].map((v) => el('option', { value: v, text: v })));
    const content = el('input', { 'aria-label': t('content') });
    const ref = el('input', { 'aria-label': t('ref') });
    const expires = el('input', { type: 'date', 'aria-label': t('expires') });
    view.append(el('h4', { text: t('deltas') }), el('ul', {}, ...deltas.map((d) => el('li', {},
      el('span', { text: `${d.type}: ${d.content}` }),
      el('button', { text: t('revoke'), onclick: async () => { await rpc('revokeWorldDelta', { sessionId: sid(), id: d.id }); redraw(); } })))),
    type, content, ref, expires,
    el('button', { text: t('addDelta'), onclick: async () => {
      await rpc('addWorldDelta', { sessionId: sid(), type: type.value, content: content.value,
        ref: ref.value || undefined, expiresAt: expires.value || undefined });
      redraw();
    } }));
  }

  async function viewJournal() {
    if (!(await needBound())) return;
    const j = await rpc('getJournal', { sessionId: sid() });
    const area = el('textarea', { rows: '12' });
    area.value = j.value || '';
    view.append(area, el('button', { text: t('save'), onclick: async () => {
      await rpc('saveJournal', { sessionId: sid(), text: area.value, expectedRevision: j.revision });
      status.textContent = t('saved');
    } }));
  }

  async function viewSettings() {
    const s = await rpc('getSettings');
    const num = (label, value) => el('input', { type: 'number', step: 'any', value: String(value), 'aria-label': label });
    const temp = num(t('temperature'), s.sampling.temperature);
    const maxTok = num(t('maxTokens'), s.sampling.maxTokens);
    const topK = num(t('retrievalTopK'), s.memory.retrievalTopK);
    const half = num(t('halfLifeDays'), s.memory.halfLifeDays);
    const dedup = num(t('dedupSimilarity'), s.memory.dedupSimilarity);
    const locale = el('select', { 'aria-label': t('locale') }, ...['auto', 'en', 'zh'].map((v) => el('option', { value: v, text: v })));
    locale.value = s.locale;
    const interactive = el('input', { type: 'checkbox', 'aria-label': t('interactiveCards'), 'data-testid': 'interactive-cards' });
    interactive.checked = s.interactiveCards !== false;
    const row = (label, input) => el('label', { class: 'row', text: label }, input);
    // The author's note (SillyTavern's fields and values: position 0 after the
    // main prompt, 1 in chat at depth, 2 before the main prompt; role 0-2).
    const an = s.authorNote || {};
    const anText = el('textarea', { rows: '3', 'aria-label': t('authorNote'), 'data-testid': 'author-note' });
    anText.value = an.text || '';
    const options = (label, pairs, value) => {
      const sel = el('select', { 'aria-label': label }, ...pairs.map(([v, k]) => el('option', { value: String(v), text: t(k) })));
      sel.value = String(value);
      return sel;
    };
    const anPos = options(t('anPosition'), [[1, 'anInChat'], [0, 'anAfterMain'], [2, 'anBeforeMain']], an.position ?? 1);
    const anDepth = el('input', { type: 'number', min: '0', step: '1', value: String(an.depth ?? 4), 'aria-label': t('depth') });
    const anInterval = el('input', { type: 'number', min: '0', step: '1', value: String(an.interval ?? 1), 'aria-label': t('anInterval') });
    const anRole = options(t('anRole'), [[0, 'roleSystem'], [1, 'roleUser'], [2, 'roleAssistant']], an.role ?? 0);
    const anScan = el('input', { type: 'checkbox', 'aria-label': t('anScan') });
    anScan.checked = !!an.allowWIScan;
    // World info: SillyTavern's settings by their cdsh keys (docs/tavern.md).
    const wi = s.worldInfo || {};
    const wiInputs = {};
    const wiBox = el('fieldset', { class: 'tavern-wi', 'data-testid': 'wi-settings' }, el('legend', { text: t('worldInfoSettings') }));
    for (const [k, v] of Object.entries(wi)) {
      // the person's words first, the setting's key (as in docs/tavern.md) as code
      const name = t(`wi.${k}`) === `wi.${k}` ? k : t(`wi.${k}`);
      const input = typeof v === 'boolean'
        ? el('input', { type: 'checkbox', 'aria-label': name })
        : el('input', { type: 'number', step: '1', min: '0', value: String(v), 'aria-label': name });
      if (typeof v === 'boolean') input.checked = v;
      wiInputs[k] = input;
      const label = el('label', { class: typeof v === 'boolean' ? 'check' : 'row' });
      const words = el('span', { text: name });
      words.append(' ', el('code', { class: 'key', text: k }));
      label.append(words, input);
      wiBox.append(label);
    }
    if (sid()) {
      const cur = await rpc('getWorldInfoSettings', { sessionId: sid() }).catch(() => null);
      if (cur) {
        const storyWi = el('textarea', { rows: '2', 'aria-label': t('storyWorldInfo'), 'data-testid': 'story-wi' });
        storyWi.value = JSON.stringify(cur.story);
        wiBox.append(el('label', { class: 'row', text: t('storyWorldInfo') }, storyWi),
          el('button', { text: t('saveStoryWorldInfo'), onclick: async () => {
            const now = await rpc('getWorldInfoSettings', { sessionId: sid() });
            await rpc('saveStoryWorldInfoSettings', { sessionId: sid(), settings: JSON.parse(storyWi.value || '{}'), expectedRevision: now.revision });
            status.textContent = t('saved');
          } }));
      }
    }
    view.append(row(t('locale'), locale), row(t('interactiveCards'), interactive),
      row(t('temperature'), temp), row(t('maxTokens'), maxTok),
      row(t('retrievalTopK'), topK), row(t('halfLifeDays'), half), row(t('dedupSimilarity'), dedup),
      el('fieldset', { class: 'tavern-an' }, el('legend', { text: t('authorNote') }), anText,
        row(t('anPosition'), anPos), row(t('depth'), anDepth), row(t('anInterval'), anInterval),
        row(t('anRole'), anRole),
        el('label', { class: 'check', text: t('anScan') }, anScan)),
      wiBox,
      el('button', { text: t('save'), onclick: async () => {
        await rpc('updateSettings', { patch: {
          locale: locale.value,
          interactiveCards: interactive.checked,
          sampling: { temperature: Number(temp.value), maxTokens: Math.trunc(Number(maxTok.value)) },
          memory: { retrievalTopK: Math.trunc(Number(topK.value)), halfLifeDays: Number(half.value), dedupSimilarity: Number(dedup.value) },
          authorNote: { text: anText.value, position: Number(anPos.value),
            depth: Math.max(0, Math.trunc(Number(anDepth.value))),
            interval: Math.max(0, Math.trunc(Number(anInterval.value))), role: Number(anRole.value), allowWIScan: anScan.checked },
          worldInfo: Object.fromEntries(Object.entries(wiInputs).map(([k, input]) =>
            [k, input.type === 'checkbox' ? input.checked : Math.trunc(Number(input.value))])),
        } });
        status.textContent = t('saved');
      } }));
  }

  async function viewPrompt() {
    if (!(await needBound())) return;
    const p = await rpc('previewPrompt', { sessionId: sid() });
    view.append(el('h4', { text: t('standing') }), el('pre', { text: p.standing ?? '—' }),
      // the runtime context tavern:turn is engineTurn (world info, memories,
      // world state) followed by turnContext
      el('h4', { text: t('turnContext') }),
      el('pre', { 'data-testid': 'turn-context', text: [p.engineTurn, p.turnContext].filter(Boolean).join('\n\n') || '—' }),
      el('h4', { text: t('sampling') }), el('pre', { text: JSON.stringify(p.sampling, null, 2) }),
      el('button', { text: t('refresh'), onclick: redraw }));
    // Why each entry did or did not fire, newest turn first (entries that
    // never matched are only counted by the service).
    const log = (await rpc('getTriggerLog', { sessionId: sid() })).slice().reverse();
    const lines = log.map((l) => {
      if (l.kind !== 'worldInfo') return `${l.ts} ${l.kind}${l.op ? ` ${l.op}` : ''}`;
      const head = t('triggerTurn', { turn: l.turn, fired: l.fired, considered: l.considered, routine: l.routine });
      const rows = (l.entries || []).map((e) =>
        `  ${e.fired ? '✓' : '✗'} ${e.book}#${e.uid}${e.comment ? ` ${e.comment}` : ''} — ${e.reason}`);
      return [head, ...rows].join('\n');
    });
    view.append(el('h4', { text: t('triggerLog') }),
      el('pre', { class: 'tavern-log', 'data-testid': 'trigger-log', text: lines.join('\n') || t('triggerNone') }));
  }

  const ctx = { rpc, t, el, dialog, view, status, redraw, fileToBase64, sid, state };
  const VIEWS = { Library: viewLibrary, Chat: viewChat, Lore: viewLore, Books: () => viewBooks(ctx),
    Assets: () => viewAssets(ctx), Memory: viewMemory, World: viewWorld, Journal: viewJournal,
    Settings: viewSettings, Prompt: viewPrompt };

  // A closed floor of this session (the plugin's "plugin/state" event after
  // the commit) redraws the views that show the story and hold no edits.
  const LIVE = new Set(['Chat', 'Memory', 'World', 'Prompt']);
  const onFloor = (ev) => {
    if (ev && ev.kind === 'floor' && ev.sessionId === sid() && LIVE.has(state.tab)) redraw();
  };
  state.disposers.push(host.onSession(() => redraw()), host.onLang(() => redraw()),
    host.onState ? host.onState(onFloor) : null);
  await redraw();
  return () => {
    for (const d of state.disposers) if (typeof d === 'function') d();
    for (const d of state.frames.splice(0)) d();
    root.replaceChildren();
  };
}
