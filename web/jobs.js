// jobs.js — the background jobs panel (host-contracts §16): every job the
// host runs with its progress and status, a Stop button for running ones,
// and the starters plugins offer (e.g. "Probe every engine"). It reads the
// `/jobs` RPC channel: quickly while a job runs, slowly otherwise, and not
// while the page is hidden.
import { api } from './api.js';
import { t, onLang } from './i18n.js';

const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

export function mountJobs(parent) {
  const box = el('section', 'jobs');
  box.dataset.testid = 'jobs';
  const head = el('h4', null, t('jobs.title'));
  const starters = el('div', 'job-starters');
  const list = el('ul', 'job-list');
  list.dataset.testid = 'job-list';
  box.append(head, starters, list);
  parent.append(box);
  let jobs = [];
  let timer = null;

  function draw() {
    head.textContent = t('jobs.title');
    list.replaceChildren();
    if (!jobs.length) list.append(el('li', 'none', t('jobs.none')));
    for (const j of jobs.slice().reverse()) {
      const li = el('li', `job ${j.status}`);
      li.dataset.testid = 'job';
      li.dataset.id = j.id;
      li.dataset.status = j.status;
      const top = el('div', 'job-top');
      top.append(el('span', 'job-id', j.id), el('span', 'job-status', t(`jobs.${j.status}`)));
      const bar = el('progress', 'job-progress');
      bar.dataset.testid = 'job-progress';
      if (j.total > 0) { bar.max = j.total; bar.value = Math.min(j.done, j.total); }
      li.append(top, el('div', 'job-label', j.label), bar);
      if (j.message) li.append(el('div', 'job-msg', j.message));
      if (j.detail) li.append(el('div', 'job-detail', j.detail));
      if (j.status === 'running') {
        const stop = el('button', 'ghost job-kill', t('jobs.kill'));
        stop.dataset.testid = 'job-kill';
        stop.onclick = async () => { await api.rpc('jobs', 'kill', { id: j.id, reason: 'stopped from the page' }); refresh(); };
        li.append(stop);
      }
      list.append(li);
    }
  }

  async function refresh() {
    clearTimeout(timer);
    let running = false;
    try {
      const r = await api.rpc('jobs', 'list', {});
      if (!r.ok) { box.hidden = true; return; } // the jobs plugin is off
      box.hidden = false;
      jobs = r.value.jobs;
      running = jobs.some((j) => j.status === 'running' || j.status === 'stopping');
      draw();
    } catch { /* the server is restarting: try again later */ }
    timer = setTimeout(() => { if (!document.hidden) refresh(); else timer = null; }, running ? 500 : 4000);
  }

  async function loadStarters() {
    try {
      const r = await api.rpc('jobs', 'starters', {});
      if (!r.ok) return;
      starters.replaceChildren();
      for (const s of r.value.starters) {
        const b = el('button', 'ghost job-start', t(`jobs.start.${s.kind}`) === `jobs.start.${s.kind}` ? s.label : t(`jobs.start.${s.kind}`));
        b.dataset.testid = 'job-start';
        b.dataset.kind = s.kind;
        b.onclick = async () => {
          const res = await api.rpc('jobs', 'start', { kind: s.kind, args: {} });
          if (!res.ok) b.title = res.error.message;
          refresh();
        };
        starters.append(b);
      }
    } catch { /* no starters */ }
  }

  document.addEventListener('visibilitychange', () => { if (!document.hidden && !timer) refresh(); });
  onLang(() => { draw(); loadStarters(); });
  loadStarters();
  refresh();
  return { refresh };
}
