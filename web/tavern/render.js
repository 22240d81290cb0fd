// render.js — display of model output: display-only regex rules (scope
// output, timing render) run in a Web Worker that is terminated after a
// timeout (third-party patterns never run on the page's thread), then a
// small Markdown renderer that escapes HTML first. Interactive card HTML is
// frame.js's, never inserted into the page.
export function displayRules(rules) {
  return (rules || []).filter((r) => r.enabled !== false &&
    (r.scopes || []).includes('output') && (r.timing || []).includes('render'));
}

export function applyDisplayRegex(text, rules, timeoutMs = 500) {
  const active = displayRules(rules);
  if (!active.length) return Promise.resolve(text);
  return new Promise((resolve) => {
    let w;
    try {
      // a same-origin script file: the page's CSP allows it, blob: workers it would not
      w = new Worker(new URL('./regex-worker.js', import.meta.url));
    } catch {
      resolve(text);
      return;
    }
    const timer = setTimeout(() => { w.terminate(); resolve(text); }, timeoutMs);
    w.onmessage = (ev) => { clearTimeout(timer); w.terminate(); resolve(String(ev.data)); };
    w.onerror = () => { clearTimeout(timer); w.terminate(); resolve(text); };
    w.postMessage({ text, rules: active });
  });
}

function escapeHtml(s) {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

// Markdown subset: code spans/blocks, bold, italics, line breaks, paragraphs.
export function renderMarkdown(text) {
  const blocks = escapeHtml(text).split(/```/);
  return blocks.map((b, i) => {
    if (i % 2 === 1) return `<pre><code>${b.replace(/^\w*\n/, '')}</code></pre>`;
    return b.split(/\n{2,}/).filter((p) => p.trim()).map((p) => '<p>' + p
      .replace(/`([^`]+)`/g, '<code>$1</code>')
      .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
      .replace(/\*([^*]+)\*/g, '<em>$1</em>')
      .replace(/\n/g, '<br>') + '</p>').join('');
  }).join('');
}

// True when the text is an interactive card document (full HTML).
export function isCardHtml(text) {
  return /^\s*(<!doctype html|<html[\s>])/i.test(text) || /```html\s*\n\s*<(!doctype|html)/i.test(text);
}
