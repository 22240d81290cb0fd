// story.js — how the chat shows a message as a story (SillyTavern's look):
// Markdown with `*actions*` in italics, "speech" / “speech” / 「speech」
// highlighted, **bold**, `code`, fenced code, headings, lists, links and
// images. Safe: the text is HTML-escaped before any markup is added, so the
// model can never inject HTML; images load only from data: URLs or this
// origin (the page's CSP allows nothing else), links only to http(s).
// Also: which transcript messages are the tavern's own notices (shown as
// small localised chips, never as the person's bubbles).

function escapeHtml(s) {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

// A URL that may be an image source here (already HTML-escaped text).
function safeImage(url) {
  return /^data:image\/(png|jpe?g|gif|webp);base64,[A-Za-z0-9+/=]+$/.test(url) || /^\/(?!\/)[^\s]*$/.test(url);
}

// Inline markup of one escaped line. Code spans, images and links are set
// aside as placeholders first, so no later rule rewrites inside a tag.
function inline(s) {
  const kept = [];
  const keep = (html) => { kept.push(html); return `\u0000${kept.length - 1}\u0000`; };
  s = s.replace(/\u0000/g, '');
  s = s.replace(/`([^`]+)`/g, (_, c) => keep(`<code>${c}</code>`));
  s = s.replace(/!\[([^\]]*)\]\(([^)\s]+)\)/g, (_, alt, url) =>
    (safeImage(url) ? keep(`<img class="story-img" alt="${alt}" src="${url}">`) : alt));
  s = s.replace(/\[([^\]]+)\]\((https?:\/\/[^)\s]+)\)/g,
    (_, t, url) => keep(`<a href="${url}" target="_blank" rel="noopener noreferrer">`) + t + keep('</a>'));
  s = s.replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>');
  s = s.replace(/\*([^*\n]+)\*/g, '<em class="action">$1</em>');
  s = s.replace(/(^|[\s(])_([^_\n]+)_(?=$|[\s.,!?;:)])/g, '$1<em>$2</em>');
  s = s.replace(/&quot;([^\n]+?)&quot;/g, '<q class="speech">&quot;$1&quot;</q>');
  s = s.replace(/“([^”\n]+)”/g, '<q class="speech">“$1”</q>');
  s = s.replace(/「([^」\n]+)」/g, '<q class="speech">「$1」</q>');
  return s.replace(/\u0000(\d+)\u0000/g, (_, i) => kept[Number(i)]);
}

// One block of lines without fences: headings, lists, paragraphs.
function blocks(text) {
  const out = [];
  for (const para of text.split(/\n{2,}/)) {
    if (!para.trim()) continue;
    const lines = para.split('\n');
    if (lines.every((l) => /^\s*[-*+]\s+/.test(l))) {
      out.push(`<ul>${lines.map((l) => `<li>${inline(l.replace(/^\s*[-*+]\s+/, ''))}</li>`).join('')}</ul>`);
      continue;
    }
    if (lines.every((l) => /^\s*\d+[.)]\s+/.test(l))) {
      out.push(`<ol>${lines.map((l) => `<li>${inline(l.replace(/^\s*\d+[.)]\s+/, ''))}</li>`).join('')}</ol>`);
      continue;
    }
    const h = /^(#{1,4})\s+(.*)$/.exec(lines[0]);
    if (h && lines.length === 1) {
      out.push(`<h${h[1].length + 2}>${inline(h[2])}</h${h[1].length + 2}>`);
      continue;
    }
    if (lines.every((l) => /^&gt;\s?/.test(l))) {
      out.push(`<blockquote>${lines.map((l) => inline(l.replace(/^&gt;\s?/, ''))).join('<br>')}</blockquote>`);
      continue;
    }
    out.push(`<p>${lines.map(inline).join('<br>')}</p>`);
  }
  return out.join('');
}

// The HTML of a message (a string; every character of `text` is escaped).
export function renderStory(text) {
  const parts = escapeHtml(String(text || '')).split(/```/);
  return parts.map((b, i) => (i % 2 === 1
    ? `<pre><code>${b.replace(/^[\w+-]*\n/, '')}</code></pre>`
    : blocks(b))).join('');
}

// The tavern's notices in the transcript: {kind, detail} or null.
//   tool-context user messages "【Tavern 同轮写入】A memory was saved. …"
//   the "continue" request "【Tavern 续写】Continue your last reply …"
const WRITE_WHAT = {
  'A memory was saved.': 'noteMemorySaved',
  'A memory was updated.': 'noteMemoryUpdated',
  'The world state was updated.': 'noteWorldUpdated',
};
export function tavernNotice(p) {
  const text = String((p && p.text) || '');
  const m = /^【Tavern ([^】]+)】\s*(.*)$/s.exec(text);
  if (!m) return null;
  if (m[1] === '续写') return { kind: 'continue', key: 'noteContinue' };
  if (m[1] === '同轮写入') {
    const what = Object.keys(WRITE_WHAT).find((w) => m[2].startsWith(w));
    return { kind: 'write', key: what ? WRITE_WHAT[what] : 'noteWritten', raw: m[2] };
  }
  return { kind: 'other', key: 'noteTavern', raw: m[2] };
}

// Search hits with raw scores (tavern_memory_search's {results:[{score,
// body, ...}]}): [{body, tags, pct, raw}] where pct is the score relative to
// the best hit (100), rounded, and raw the score in plain short form for a
// tooltip; null when the text is no such result. Full-text scores are tiny
// and unitless (1.57e-6): only their order and ratios mean anything.
export function scoredHits(text) {
  let v;
  try { v = JSON.parse(text); } catch { return null; }
  const list = v && Array.isArray(v.results) ? v.results : null;
  if (!list || !list.length || !list.every((h) => h && typeof h.score === 'number')) return null;
  const best = Math.max(...list.map((h) => h.score));
  return list.map((h) => ({
    body: String(h.body || ''), tags: Array.isArray(h.tags) ? h.tags : [],
    pct: best > 0 ? Math.max(0, Math.round((h.score / best) * 100)) : 0,
    raw: h.score === 0 ? '0' : Number(h.score.toPrecision(3)).toString(),
  }));
}
