// library.js — the library editors of the role-play panel: lorebooks (library
// books and a character's embedded book, through lore-editor.js), presets,
// personas (with avatar upload) and the global regex rules. ctx is the panel's
// {rpc, t, el, dialog, view, status, redraw, fileToBase64, sid, state}; the
// open book / preset / persona survive a redraw in ctx.state.picks. Every call
// goes through ctx.rpc to the /tavern channel (a test enumerates the calls).
import { mountLoreEditor } from './lore-editor.js';

const confirmDelete = (ctx, name) => ctx.dialog({ title: ctx.t('confirmDeleteTitle'),
  body: ctx.t('confirmDeleteItem', { name }),
  buttons: [{ label: ctx.t('delete'), value: true }, { label: ctx.t('cancel'), value: false }] });

const picks = (ctx) => (ctx.state.picks ||= {});

const picker = (ctx, items, label, value) => {
  const s = ctx.el('select', { 'aria-label': label });
  s.append(ctx.el('option', { value: '', text: ctx.t('none') }));
  for (const it of items) s.append(ctx.el('option', { value: it.id, text: it.name || it.id }));
  s.value = value || '';
  return s;
};

// ---- lorebooks ------------------------------------------------------------------
export async function viewBooks(ctx) {
  const { rpc, t, el, view, status } = ctx;
  const [books, cards] = await Promise.all([rpc('listLorebooks'), rpc('listCharacters')]);
  const choice = el('select', { 'aria-label': t('lorebook') });
  choice.append(el('option', { value: '', text: t('none') }));
  const lib = el('optgroup', { label: t('libraryBooks') });
  for (const b of books) lib.append(el('option', { value: 'lib:' + b.id, text: `${b.name || b.id} (${b.entries})` }));
  const emb = el('optgroup', { label: t('embeddedBooks') });
  for (const c of cards) emb.append(el('option', { value: 'card:' + c.cardId, text: c.name }));
  choice.append(lib, emb);
  const box = el('div', { class: 'tavern-book' });
  // Opens overlap (a redraw reopening the last book while the person picks
  // another): only the newest may fill the box, once its data has arrived.
  let generation = 0;
  const open = async (value) => {
    const mine = ++generation;
    box.replaceChildren();
    picks(ctx).book = value;
    if (!value) return;
    const reload = () => open(value);
    if (value.startsWith('card:')) {
      const cardId = value.slice(5);
      const cur = await rpc('getCharacterLorebook', { cardId });
      if (mine !== generation) return;
      const book = cur.book || { name: cur.name, entries: {} };
      if (!cur.book) box.append(el('p', { text: t('noEmbeddedBook') }));
      mountLoreEditor(box, ctx, { book, revision: cur.revision, reload,
        save: async (b, revision) => {
          const r = await rpc('saveCharacterLorebook', { cardId, book: b, expectedRevision: revision });
          status.textContent = t('saved');
          return r.revision;
        },
        onDelete: cur.book ? async () => {
          const keep = await ctx.dialog({ title: t('deleteEmbeddedTitle'), body: t('deleteEmbeddedBody'),
            buttons: [{ label: t('salvageToLibrary'), value: 'salvage' }, { label: t('delete'), value: 'drop' },
              { label: t('cancel'), value: null }] });
          if (!keep) return;
          await rpc('deleteEmbeddedLorebook', { cardId, expectedRevision: cur.revision, salvage: keep === 'salvage' });
          ctx.redraw();
        } : null });
      return;
    }
    const id = value.slice(4);
    const [book, meta] = [await rpc('getLorebook', { id }), (await rpc('listLorebooks')).find((b) => b.id === id)];
    if (mine !== generation) return;
    mountLoreEditor(box, ctx, { book, revision: meta && meta.tag, reload,
      save: async (b, revision) => {
        const r = await rpc('saveLorebook', { id, book: b, expectedRevision: revision });
        status.textContent = t('saved');
        return r.revision;
      },
      onDelete: async () => {
        if (!(await confirmDelete(ctx, book.name || id))) return;
        await rpc('deleteLorebook', { id });
        ctx.redraw();
      } });
  };
  choice.addEventListener('change', () => open(choice.value).catch(() => {}));
  view.append(el('label', { class: 'row', text: t('lorebook') }, choice),
    el('button', { text: t('newBook'), onclick: async () => {
      const name = await ctx.dialog({ title: t('newBook'), input: '', buttons: [{ label: t('ok'), value: true }, { label: t('cancel'), value: null }] });
      if (!name) return;
      const r = await rpc('saveLorebook', { book: { name, entries: {} } });
      picks(ctx).book = 'lib:' + r.id;
      await ctx.redraw();
      status.textContent = t('created', { id: r.id });
    } }), box);
  // the book open before a redraw (or just created) opens again
  const last = picks(ctx).book;
  if (last && [...choice.options].some((o) => o.value === last)) {
    choice.value = last;
    await open(last);
  }
}

// ---- presets, personas, regex ------------------------------------------------------
async function presetEditor(ctx, section) {
  const { rpc, t, el, status } = ctx;
  const presets = await rpc('listPresets');
  const sel = picker(ctx, presets, t('preset'), picks(ctx).preset);
  const area = el('textarea', { rows: '10', class: 'tavern-json', spellcheck: 'false', 'aria-label': t('presetJson') });
  let current = null;
  // A late answer for an earlier pick is dropped (the picker moved on).
  const fill = async () => {
    const want = sel.value;
    current = presets.find((p) => p.id === want) || null;
    picks(ctx).preset = current ? current.id : null;
    const text = current ? JSON.stringify(await rpc('getPreset', { id: current.id }), null, 2) : '';
    if (sel.value === want) area.value = text;
  };
  sel.addEventListener('change', () => fill().catch(() => {}));
  if (sel.value) await fill();
  const parsed = () => {
    try { return JSON.parse(area.value); } catch (e) { status.textContent = t('badJson', { msg: e.message }); return null; }
  };
  section.append(el('h4', { text: t('presets') }), el('label', { class: 'row', text: t('preset') }, sel), area,
    el('button', { text: t('save'), onclick: async () => {
      const preset = parsed();
      if (!preset) return;
      const r = await rpc('savePreset', current ? { id: current.id, preset, expectedRevision: current.tag } : { preset });
      if (current) current.tag = r.revision;
      status.textContent = t('saved');
      if (!current) { picks(ctx).preset = r.id; await ctx.redraw(); status.textContent = t('saved'); }
    } }),
    el('button', { text: t('newPreset'), onclick: () => { sel.value = ''; current = null; area.value = JSON.stringify({ name: '', temperature: 1, prompts: [] }, null, 2); } }),
    el('button', { text: t('delete'), onclick: async () => {
      if (!current || !(await confirmDelete(ctx, current.name || current.id))) return;
      await rpc('deletePreset', { id: current.id });
      picks(ctx).preset = null;
      ctx.redraw();
    } }));
}

async function personaEditor(ctx, section) {
  const { rpc, t, el, status } = ctx;
  const [personas, books] = await Promise.all([rpc('listPersonas'), rpc('listLorebooks')]);
  const sel = picker(ctx, personas, t('persona'), picks(ctx).persona);
  const name = el('input', { 'aria-label': t('name') });
  const desc = el('textarea', { rows: '4', 'aria-label': t('description') });
  const bookSel = picker(ctx, books, t('lorebook'));
  const img = el('img', { alt: '', class: 'avatar', width: '64', height: '64' });
  const file = el('input', { type: 'file', accept: 'image/png,image/jpeg,image/gif,image/webp', hidden: '' });
  let avatar = null;
  let current = null;
  // A late answer for an earlier pick is dropped (the picker moved on).
  const fill = async () => {
    const want = sel.value;
    current = personas.find((p) => p.id === want) || null;
    picks(ctx).persona = current ? current.id : null;
    const p = current ? await rpc('getPersona', { id: current.id }) : { name: '', description: '', avatar: null, lorebook: null };
    if (sel.value !== want) return;
    name.value = p.name || '';
    desc.value = p.description || '';
    bookSel.value = p.lorebook || '';
    avatar = p.avatar || null;
    if (avatar) img.src = avatar; else img.removeAttribute('src');
  };
  sel.addEventListener('change', () => fill().catch(() => {}));
  if (sel.value) await fill();
  file.addEventListener('change', async () => {
    const f = file.files[0];
    if (!f) return;
    avatar = `data:${f.type};base64,` + await ctx.fileToBase64(f);
    img.src = avatar;
  });
  section.append(el('h4', { text: t('personas') }), el('label', { class: 'row', text: t('persona') }, sel),
    el('label', { class: 'row', text: t('name') }, name), el('label', { class: 'row', text: t('description') }, desc),
    el('label', { class: 'row', text: t('lorebook') }, bookSel), img, file,
    el('button', { text: t('uploadAvatar'), onclick: () => file.click() }),
    el('button', { text: t('removeAvatar'), onclick: () => { avatar = null; img.removeAttribute('src'); } }),
    el('button', { text: t('save'), onclick: async () => {
      const r = await rpc('savePersona', { id: current ? current.id : null, name: name.value, description: desc.value,
        avatar, lorebookId: bookSel.value || null, expectedRevision: current ? current.tag : undefined });
      if (current) current.tag = r.revision;
      status.textContent = t('saved');
      if (!current) { picks(ctx).persona = r.id; await ctx.redraw(); status.textContent = t('saved'); }
    } }),
    el('button', { text: t('newPersona'), onclick: () => { sel.value = ''; return fill(); } }),
    el('button', { text: t('delete'), onclick: async () => {
      if (!current || !(await confirmDelete(ctx, current.name || current.id))) return;
      await rpc('deletePersona', { id: current.id });
      picks(ctx).persona = null;
      ctx.redraw();
    } }));
}

async function regexEditor(ctx, section) {
  const { rpc, t, el, status } = ctx;
  const cur = await rpc('listRegexRules', { withRevision: true });
  const state = { rules: cur.rules, revision: cur.revision };
  const list = el('div', { class: 'tavern-regex' });
  const multi = (label, values, rule, key) => el('span', { class: 'check', text: label }, ...values.map((v) => {
    const c = el('input', { type: 'checkbox', 'aria-label': `${label} ${v}` });
    c.checked = (rule[key] || []).includes(v);
    c.addEventListener('change', () => {
      rule[key] = values.filter((x) => x === v ? c.checked : (rule[key] || []).includes(x));
    });
    return el('label', { text: v }, c);
  }));
  const depth = (label, rule, key) => {
    const n = el('input', { type: 'number', min: '0', step: '1', value: rule[key] ?? '', 'aria-label': label });
    n.addEventListener('input', () => { rule[key] = n.value === '' ? null : Math.trunc(Number(n.value)); });
    return el('label', { class: 'row', text: label }, n);
  };
  const text = (label, rule, key) => {
    const i = el('input', { value: rule[key] || '', 'aria-label': label });
    i.addEventListener('input', () => { rule[key] = i.value; });
    return el('label', { class: 'row', text: label }, i);
  };
  const draw = () => list.replaceChildren(...state.rules.map((r, i) => {
    const on = el('input', { type: 'checkbox', 'aria-label': t('enabled') });
    on.checked = r.enabled !== false;
    on.addEventListener('change', () => { r.enabled = on.checked; });
    return el('fieldset', { class: 'tavern-rule' }, el('legend', { text: r.name || r.id || `#${i + 1}` }),
      text(t('name'), r, 'name'), text(t('find'), r, 'find'), text(t('replace'), r, 'replace'),
      multi(t('scopes'), ['input', 'output', 'prompt'], r, 'scopes'),
      multi(t('timing'), ['assemble', 'send', 'render'], r, 'timing'),
      depth(t('minDepth'), r, 'minDepth'), depth(t('maxDepth'), r, 'maxDepth'),
      el('label', { class: 'check', text: t('enabled') }, on),
      el('button', { text: t('removeRule'), onclick: () => { state.rules.splice(i, 1); draw(); } }));
  }));
  draw();
  section.append(el('h4', { text: t('regexRules') }), list,
    el('button', { text: t('addRule'), onclick: () => {
      state.rules.push({ name: '', find: '', replace: '', enabled: true, scopes: ['output'], timing: ['render'], minDepth: null, maxDepth: null });
      draw();
    } }),
    el('button', { text: t('save'), onclick: async () => {
      const r = await rpc('saveRegexRules', { rules: state.rules, expectedRevision: state.revision });
      state.rules = r.rules;
      state.revision = r.revision;
      status.textContent = t('saved');
      draw();
    } }));
}

export async function viewAssets(ctx) {
  const sections = [presetEditor, personaEditor, regexEditor].map(() => ctx.el('section', { class: 'tavern-assets' }));
  ctx.view.append(...sections);
  await presetEditor(ctx, sections[0]);
  await personaEditor(ctx, sections[1]);
  await regexEditor(ctx, sections[2]);
}
