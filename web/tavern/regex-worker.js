// regex-worker.js — runs display-only regex rules off the page's thread;
// render.js terminates it after a timeout (catastrophic patterns).
self.onmessage = (ev) => {
  const { text, rules } = ev.data;
  let out = text;
  for (const r of rules) {
    const m = /^\/(.*)\/([a-z]*)$/s.exec(r.find || '');
    let re;
    try {
      re = m ? new RegExp(m[1], m[2]) : new RegExp((r.find || '').replace(/[.*+?^$()|[\]{}\\]/g, '\\$&'), 'g');
    } catch {
      continue;
    }
    out = out.replace(re, r.replace ?? '');
  }
  self.postMessage(out);
};
