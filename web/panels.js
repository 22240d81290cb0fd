// panels.js — the panel area: plugins ship web/panels/<plugin>.js, an ES
// module exporting mount(element, host) (optionally returning an unmount
// function). The page mounts the panels of active plugins; `host` is the
// panel API documented in docs/web.md.
import { api } from './api.js';
import { t, getLang, onLang } from './i18n.js';

const stateListeners = new Set();   // fn(event) for plugin/state events
const sessionListeners = new Set(); // fn(sessionId)
let current = { sessionId: null, send: null };

export function panelsSetSession(id) {
  current.sessionId = id;
  for (const fn of sessionListeners) fn(id);
}

export function panelsDeliver(type, data) {
  if (type !== 'plugin/state') return;
  for (const fn of stateListeners) { try { fn(data); } catch (e) { console.error(e); } }
}

export async function mountPanels(root, app) {
  current.send = app.send;
  current.command = app.command;
  current.openSession = app.openSession;
  current.reload = app.reload;
  let list = [];
  try { list = (await api.panels()).panels.filter((p) => p.active); } catch { list = []; }
  root.hidden = list.length === 0;
  for (const p of list) {
    const box = document.createElement('div');
    box.className = 'panel';
    box.dataset.plugin = p.plugin;
    const h = document.createElement('h3');
    // the plugin's name in the page's language until the panel sets a title
    const named = () => { const k = `panel.${p.plugin}`; return t(k) === k ? p.plugin : t(k); };
    h.textContent = named();
    onLang(() => { if (!h.dataset.custom) h.textContent = named(); }); // lives as long as the page
    const body = document.createElement('div');
    body.className = 'body';
    box.append(h, body);
    root.append(box);
    const host = makeHost(p.plugin, h);
    try {
      const mod = await import(p.module);
      await mod.mount(body, host);
    } catch (e) {
      body.textContent = `panel failed to load: ${e.message}`;
    }
  }
}

function makeHost(plugin, titleEl) {
  return {
    plugin,
    rpc: (channel, endpoint, payload) => api.rpc(channel, endpoint, payload),
    onState(fn, filter = {}) {
      const wrapped = (ev) => {
        if ((filter.plugin ?? plugin) && ev.plugin !== (filter.plugin ?? plugin)) return;
        fn(ev);
      };
      stateListeners.add(wrapped);
      return () => stateListeners.delete(wrapped);
    },
    sessionId: () => current.sessionId,
    onSession(fn) { sessionListeners.add(fn); return () => sessionListeners.delete(fn); },
    send: (text) => current.send(text),
    // switches the whole page (transcript, session list, panels) to a session
    openSession: (id) => current.openSession(id),
    command: (line) => current.command(line),
    // shows the current session's transcript again (after a change it does not stream)
    reload: () => (current.reload ? current.reload() : Promise.resolve()),
    lang: getLang,
    onLang,
    t,
    setTitle: (text) => { titleEl.dataset.custom = '1'; titleEl.textContent = text; },
  };
}
