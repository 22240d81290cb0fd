// characters.js — the role-play view of the page (route #/characters): a
// gallery of the imported characters (avatars, search over name, tags,
// creator and description, tag filters, import with the embedded-book
// question), a card's page (#/characters/<cardId>: description, personality,
// scenario, greetings, the embedded book, creator notes) and "start a story"
// with a greeting choice (the first message or an alternate greeting) and a
// persona. Every call goes to the tavern's /rpc channel; the story opens in
// the chat (app.js's openSession).
import { api } from './api.js';
import { t } from './i18n.js';
import { renderStory } from './story.js';

const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
};
const fill = (s, vars) => s.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));

// A tavern call's value; an error carries the tavern's code and message.
async function rpc(method, payload) {
  const r = await api.rpc('tavern', method, payload || {});
  if (r.ok) return r.value;
  const e = new Error((r.error && r.error.message) || method);
  e.code = r.error && r.error.code;
  throw e;
}

const avatars = new Map(); // cardId -> Promise<data: URL | null>
function avatarUrl(card) {
  if (!card.hasAvatar) return Promise.resolve(null);
  if (!avatars.has(card.cardId)) {
    avatars.set(card.cardId, rpc('exportCharacter', { cardId: card.cardId })
      .then((x) => (x.pngBase64 ? `data:image/png;base64,${x.pngBase64}` : null), () => null));
  }
  return avatars.get(card.cardId);
}

// The card's picture, or its initial on a tinted square while none exists.
function avatarBox(card, cls) {
  const box = el('div', `rp-avatar ${cls || ''}`);
  box.setAttribute('aria-hidden', 'true');
  box.textContent = [...(card.name || '?')][0] || '?';
  avatarUrl(card).then((url) => {
    if (!url) return;
    const img = el('img');
    img.alt = '';
    img.decoding = 'async';
    img.src = url;
    box.replaceChildren(img);
  });
  return box;
}

// The {{char}} / {{user}} of a greeting, as the story will show them.
const personalise = (text, card, user) => String(text || '')
  .replace(/\{\{char\}\}|<BOT>/gi, card.name || '')
  .replace(/\{\{user\}\}|<USER>/gi, user || t('you'));

function fileToBase64(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result).replace(/^data:[^,]*,/, ''));
    r.onerror = () => reject(r.error);
    r.readAsDataURL(file);
  });
}

// A small question in a <dialog>: resolves to the chosen button's value.
function ask(title, body, buttons) {
  return new Promise((resolve) => {
    const dlg = el('dialog', 'rp-dialog');
    dlg.dataset.testid = 'rp-dialog';
    const row = el('div', 'row');
    for (const b of buttons) {
      const x = el('button', b.primary ? 'primary' : 'ghost', b.label);
      x.type = 'button';
      x.onclick = () => { dlg.close(); dlg.remove(); resolve(b.value); };
      row.append(x);
    }
    dlg.append(el('h4', null, title), el('p', null, body), row);
    dlg.addEventListener('cancel', () => { dlg.remove(); resolve(null); });
    document.body.append(dlg);
    dlg.showModal();
  });
}

export function createCharacters(root, ctx) {
  const view = { query: '', tags: new Set(), cards: [] };
  const status = el('div', 'rp-status');
  status.dataset.testid = 'rp-status';
  status.setAttribute('role', 'status');
  const report = (e) => { status.textContent = e.code ? `${e.message} (${e.code})` : e.message; };

  async function importCard(file) {
    const fileBase64 = await fileToBase64(file);
    const info = await rpc('inspectCharacter', { fileBase64 });
    let book = 'discard';
    if (info.hasCharacterBook) {
      book = await ask(t('rp.bookTitle'), fill(t('rp.bookBody'), { n: info.entryCount }), [
        { label: t('rp.bookImport'), value: 'import', primary: true },
        { label: t('rp.bookDiscard'), value: 'discard' }, { label: t('cancel'), value: null }]);
      if (!book) return;
    }
    const r = await rpc('importCharacter', { fileBase64, book });
    status.textContent = fill(t('rp.imported'), { name: r.name || '' });
    await gallery();
  }

  function matches(c) {
    for (const tag of view.tags) if (!(c.tags || []).includes(tag)) return false;
    const q = view.query.trim().toLowerCase();
    if (!q) return true;
    return [c.name, c.creator, c.summary, ...(c.tags || [])].some((s) => String(s || '').toLowerCase().includes(q));
  }

  function drawGrid(grid, count) {
    grid.textContent = '';
    const shown = view.cards.filter(matches);
    count.textContent = fill(t('rp.count'), { n: shown.length, total: view.cards.length });
    if (!view.cards.length) { grid.append(el('p', 'rp-empty', t('rp.none'))); return; }
    if (!shown.length) { grid.append(el('p', 'rp-empty', t('rp.noMatch'))); return; }
    for (const c of shown) {
      const a = el('a', 'rp-card');
      a.href = `#/characters/${encodeURIComponent(c.cardId)}`;
      a.dataset.testid = 'rp-card';
      a.dataset.cardId = c.cardId;
      const body = el('div', 'rp-card-body');
      const name = el('div', 'rp-name', c.name);
      name.dataset.testid = 'rp-card-name';
      body.append(name);
      if (c.creator) body.append(el('div', 'rp-by', fill(t('rp.by'), { name: c.creator })));
      body.append(el('p', 'rp-summary', personalise(c.summary, c, null).replace(/\s+/g, ' ')));
      const meta = el('div', 'rp-meta');
      meta.append(el('span', null, fill(t('rp.greetingsN'), { n: c.greetings || 1 })));
      if (c.bookEntries) meta.append(el('span', null, fill(t('rp.bookN'), { n: c.bookEntries })));
      body.append(meta);
      if ((c.tags || []).length) {
        const tags = el('div', 'rp-tags');
        for (const tag of c.tags.slice(0, 6)) tags.append(el('span', 'rp-tag', tag));
        body.append(tags);
      }
      a.append(avatarBox(c, 'big'), body);
      grid.append(a);
    }
  }

  async function gallery() {
    const head = el('header', 'rp-head');
    const title = el('h2', null, t('rp.gallery'));
    const search = el('input', 'rp-search');
    search.type = 'search';
    search.placeholder = t('rp.search');
    search.setAttribute('aria-label', t('rp.search'));
    search.dataset.testid = 'rp-search';
    search.value = view.query;
    const file = el('input');
    file.type = 'file';
    file.accept = '.png,.json,.charx';
    file.hidden = true;
    file.dataset.testid = 'rp-import-file';
    file.onchange = () => { const f = file.files[0]; file.value = ''; if (f) importCard(f).catch(report); };
    const imp = el('button', 'primary', t('rp.import'));
    imp.type = 'button';
    imp.dataset.testid = 'rp-import';
    imp.onclick = () => file.click();
    head.append(title, search, imp, file);
    const tagsBar = el('div', 'rp-tagbar');
    tagsBar.dataset.testid = 'rp-tagbar';
    const count = el('div', 'rp-count');
    const grid = el('div', 'rp-grid');
    grid.dataset.testid = 'rp-grid';
    root.replaceChildren(head, status, tagsBar, count, grid);
    try {
      view.cards = await rpc('listCharacters');
    } catch (e) { report(e); view.cards = []; }
    const all = new Map();
    for (const c of view.cards) for (const tag of c.tags || []) all.set(tag, (all.get(tag) || 0) + 1);
    for (const tag of [...view.tags]) if (!all.has(tag)) view.tags.delete(tag);
    const tagButtons = [...all.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 24);
    for (const [tag, n] of tagButtons) {
      const b = el('button', `rp-tag${view.tags.has(tag) ? ' on' : ''}`, `${tag} ${n}`);
      b.type = 'button';
      b.dataset.tag = tag;
      b.setAttribute('aria-pressed', String(view.tags.has(tag)));
      b.onclick = () => {
        if (view.tags.has(tag)) view.tags.delete(tag); else view.tags.add(tag);
        b.classList.toggle('on', view.tags.has(tag));
        b.setAttribute('aria-pressed', String(view.tags.has(tag)));
        drawGrid(grid, count);
      };
      tagsBar.append(b);
    }
    search.oninput = () => { view.query = search.value; drawGrid(grid, count); };
    drawGrid(grid, count);
  }

  function section(title, node, testid) {
    const s = el('section', 'rp-section');
    if (testid) s.dataset.testid = testid;
    s.append(el('h3', null, title), node);
    return s;
  }
  const prose = (text, card) => {
    const d = el('div', 'rp-prose');
    d.innerHTML = renderStory(personalise(text, card, null)); // escaped by renderStory
    return d;
  };

  // The embedded book: one folded row per entry (its keys, then its text).
  function bookList(book) {
    const entries = Array.isArray(book && book.entries) ? book.entries : Object.values((book && book.entries) || {});
    const list = el('div', 'rp-book');
    for (const e of entries) {
      const d = el('details', 'rp-entry');
      const keys = (e.keys || e.key || []).join(', ');
      const sum = el('summary');
      sum.append(el('span', 'rp-keys', keys || t('rp.noKeys')));
      if (e.comment || e.name) sum.append(el('span', 'rp-comment', e.comment || e.name));
      if (e.constant) sum.append(el('span', 'rp-tag', t('rp.constant')));
      if (e.enabled === false) sum.append(el('span', 'rp-tag', t('rp.disabled')));
      d.append(sum, el('pre', null, e.content || ''));
      list.append(d);
    }
    return { list, n: entries.length };
  }

  async function detail(cardId) {
    const back = el('a', 'rp-back', `‹ ${t('rp.back')}`);
    back.href = '#/characters';
    back.dataset.testid = 'rp-back';
    root.replaceChildren(back, status);
    let d;
    let personas = [];
    try {
      [d, personas] = await Promise.all([rpc('getCharacterDetail', { cardId }), rpc('listPersonas').catch(() => [])]);
    } catch (e) { report(e); return; }
    const rec = d.record || {};
    const data = rec.data || {};
    const card = { cardId, name: rec.name || data.name || cardId, hasAvatar: true };
    const lite = (await rpc('listCharacters').catch(() => [])).find((c) => c.cardId === cardId);
    if (lite) card.hasAvatar = lite.hasAvatar;

    const head = el('header', 'rp-hero');
    const who = el('div', 'rp-hero-text');
    const name = el('h2', null, card.name);
    name.dataset.testid = 'rp-detail-name';
    who.append(name);
    if (data.creator) who.append(el('div', 'rp-by', fill(t('rp.by'), { name: data.creator })));
    if (data.character_version) who.append(el('div', 'rp-by', fill(t('rp.version'), { v: data.character_version })));
    if ((data.tags || []).length) {
      const tags = el('div', 'rp-tags');
      for (const tag of data.tags) tags.append(el('span', 'rp-tag', tag));
      who.append(tags);
    }
    head.append(avatarBox(card, 'hero'), who);

    // ---- start a story: a greeting, a persona --------------------------------------
    const start = el('section', 'rp-start');
    start.dataset.testid = 'rp-start';
    start.append(el('h3', null, t('rp.start')));
    const greets = d.greetings && d.greetings.length ? d.greetings : [''];
    const personaSel = el('select');
    personaSel.dataset.testid = 'rp-persona';
    personaSel.setAttribute('aria-label', t('rp.persona'));
    personaSel.append(new Option(t('rp.noPersona'), ''));
    for (const p of personas) personaSel.append(new Option(p.name || p.id, p.id));
    const last = localStorage.getItem('cdsh.rp.persona');
    if (last && personas.some((p) => p.id === last)) personaSel.value = last;
    const userName = () => (personas.find((p) => p.id === personaSel.value) || {}).name || null;
    const choices = el('div', 'rp-greetings');
    choices.setAttribute('role', 'radiogroup');
    choices.setAttribute('aria-label', t('rp.greetings'));
    let pick = 0;
    const drawGreetings = () => {
      choices.textContent = '';
      greets.forEach((g, i) => {
        const lab = el('label', `rp-greeting${i === pick ? ' on' : ''}`);
        lab.dataset.testid = 'rp-greeting';
        const r = el('input');
        r.type = 'radio';
        r.name = 'rp-greeting';
        r.value = String(i);
        r.checked = i === pick;
        r.onchange = () => { pick = i; drawGreetings(); };
        const title = el('div', 'rp-greeting-title', i === 0 ? t('rp.firstMessage') : fill(t('rp.alternate'), { n: i }));
        const text = el('div', 'rp-prose');
        text.innerHTML = renderStory(personalise(g, card, userName()) || t('rp.noGreeting'));
        lab.append(r, title, text);
        choices.append(lab);
      });
    };
    personaSel.onchange = () => { localStorage.setItem('cdsh.rp.persona', personaSel.value); drawGreetings(); };
    drawGreetings();
    const go = el('button', 'primary', t('rp.begin'));
    go.type = 'button';
    go.dataset.testid = 'rp-begin';
    go.onclick = async () => {
      go.disabled = true;
      try {
        const s = (await api.createSession(card.name)).session;
        const bind = { sessionId: s.id, cardId };
        if (personaSel.value) bind.personaId = personaSel.value;
        await rpc('setSessionBinding', bind);
        if (pick > 0) await rpc('swipeGreeting', { sessionId: s.id, index: pick });
        await ctx.openStory(s.id);
      } catch (e) { report(e); } finally { go.disabled = false; }
    };
    const row = el('div', 'rp-start-row');
    const pl = el('label', null, `${t('rp.persona')} `);
    pl.append(personaSel);
    row.append(pl, go);
    start.append(choices, row);

    const parts = [head, start];
    const field = (key, text, testid) => { if (String(text || '').trim()) parts.push(section(t(key), prose(text, card), testid)); };
    field('rp.description', data.description, 'rp-description');
    field('rp.personality', data.personality);
    field('rp.scenario', data.scenario);
    const { list, n } = bookList(data.character_book);
    if (n) parts.push(section(fill(t('rp.book'), { name: (data.character_book && data.character_book.name) || card.name, n }), list, 'rp-book'));
    field('rp.creatorNotes', data.creator_notes, 'rp-notes');
    field('rp.examples', data.mes_example);
    root.replaceChildren(back, status, ...parts);
  }

  return {
    // route: [] (the gallery) or [cardId]
    async show(route) {
      status.textContent = '';
      root.scrollTop = 0;
      if (route.length && route[0]) await detail(decodeURIComponent(route[0]));
      else await gallery();
      root.dataset.ready = route.length ? 'detail' : 'gallery';
    },
  };
}
