// lore-editor.js — the world-info entry editor shared by the library books and
// a character's embedded book: keys, secondary keys, logic, content, position,
// depth, order, probability, constant / selective / enabled; add, remove, save
// with the revision read (a conflict offers a reload). No RPC of its own: the
// caller passes save(book, revision) → new revision.
const LOGIC = ['logicAndAny', 'logicNotAll', 'logicNotAny', 'logicAndAll'];
const POSITIONS = ['posBeforeChar', 'posAfterChar', 'posAnTop', 'posAnBottom', 'posAtDepth',
  'posBeforeEm', 'posAfterEm', 'posOutlet'];

const splitKeys = (s) => s.split(',').map((k) => k.trim()).filter(Boolean);

export function newEntry(entries) {
  const uids = Object.values(entries).map((e) => Number(e.uid)).filter(Number.isFinite);
  const uid = uids.length ? Math.max(...uids) + 1 : 0;
  return { uid, key: [], keysecondary: [], comment: '', content: '', selectiveLogic: 0,
    position: 0, depth: 4, order: 100, probability: 100, constant: false, selective: true, disable: false };
}

// Mounts the editor into `box`. ctx: {t, el, dialog}; book: world-info book
// ({name, entries:{uid: entry}}), revision: the tag it was read with.
export function mountLoreEditor(box, ctx, { book, revision, save, reload, onDelete }) {
  const { t, el, dialog } = ctx;
  const state = { book: structuredClone(book), revision };
  if (!state.book.entries || Array.isArray(state.book.entries)) {
    const list = Array.isArray(state.book.entries) ? state.book.entries : [];
    state.book.entries = Object.fromEntries(list.map((e, i) => [String(e.uid ?? i), e]));
  }
  const num = (label, value, min, max, set) => {
    const n = el('input', { type: 'number', min: String(min), max: String(max), step: '1',
      value: String(value ?? ''), 'aria-label': label });
    n.addEventListener('input', () => set(Math.trunc(Number(n.value))));
    return el('label', { class: 'row', text: label }, n);
  };
  const check = (label, value, set) => {
    const c = el('input', { type: 'checkbox', 'aria-label': label });
    c.checked = !!value;
    c.addEventListener('change', () => set(c.checked));
    return el('label', { class: 'check', text: label }, c);
  };
  const select = (label, keys, value, set) => {
    const s = el('select', { 'aria-label': label }, ...keys.map((k, i) => el('option', { value: String(i), text: t(k) })));
    s.value = String(value ?? 0);
    s.addEventListener('change', () => set(Number(s.value)));
    return el('label', { class: 'row', text: label }, s);
  };
  const rows = el('div', { class: 'tavern-lore' });
  const name = el('input', { value: state.book.name || '', 'aria-label': t('bookName') });
  name.addEventListener('input', () => { state.book.name = name.value; });

  function entryView(uid, e) {
    const text = (label, value, set) => {
      const i = el('input', { value: value || '', 'aria-label': label });
      i.addEventListener('input', () => set(i.value));
      return el('label', { class: 'row', text: label }, i);
    };
    const content = el('textarea', { rows: '4', 'aria-label': t('content') });
    content.value = e.content || '';
    content.addEventListener('input', () => { e.content = content.value; });
    return el('fieldset', { class: 'tavern-entry' }, el('legend', { text: `#${uid}` }),
      text(t('comment'), e.comment, (v) => { e.comment = v; }),
      text(t('keys'), (e.key || []).join(', '), (v) => { e.key = splitKeys(v); }),
      text(t('secondaryKeys'), (e.keysecondary || []).join(', '), (v) => { e.keysecondary = splitKeys(v); }),
      select(t('logic'), LOGIC, e.selectiveLogic, (v) => { e.selectiveLogic = v; }),
      el('label', { class: 'row', text: t('content') }, content),
      select(t('position'), POSITIONS, e.position, (v) => { e.position = v; }),
      num(t('depth'), e.depth, 0, 10000, (v) => { e.depth = v; }),
      num(t('order'), e.order, -100000, 100000, (v) => { e.order = v; }),
      num(t('probability'), e.probability, 0, 100, (v) => { e.probability = v; }),
      check(t('constant'), e.constant, (v) => { e.constant = v; }),
      check(t('selective'), e.selective, (v) => { e.selective = v; }),
      check(t('enabled'), !e.disable, (v) => { e.disable = !v; }),
      el('button', { text: t('removeEntry'), onclick: () => { delete state.book.entries[uid]; draw(); } }));
  }
  function draw() {
    rows.replaceChildren(...Object.entries(state.book.entries).map(([uid, e]) => entryView(uid, e)));
  }
  draw();
  box.append(el('label', { class: 'row', text: t('bookName') }, name), rows,
    el('button', { text: t('addEntry'), onclick: () => {
      const e = newEntry(state.book.entries);
      state.book.entries[String(e.uid)] = e;
      draw();
    } }),
    el('button', { text: t('save'), onclick: async () => {
      try {
        state.revision = await save(state.book, state.revision);
      } catch (err) {
        if (err.code !== 'revision-conflict') return;
        const again = await dialog({ title: t('conflictTitle'), body: t('revisionConflict'),
          buttons: [{ label: t('reload'), value: true }, { label: t('cancel'), value: false }] });
        if (again) reload();
      }
    } }),
    // DOM append() would print a null as the text "null"
    ...(onDelete ? [el('button', { text: t('delete'), onclick: onDelete })] : []));
}
