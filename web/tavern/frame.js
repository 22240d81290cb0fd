// frame.js — interactive card HTML (seed boundary 8): only inside an iframe
// with sandbox="allow-scripts" (never the same-origin flag) and a CSP that
// denies connections; images and fonts may come from http/https/data. The
// only bridge is swipeGreeting, accepted only from this frame's window.
export const CARD_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; " +
  "img-src http: https: data:; font-src http: https: data:; connect-src 'none'; " +
  "form-action 'none'; frame-src 'none'";

const STUB = `<script>window.SillyTavern={swipeGreeting:function(i){` +
  `parent.postMessage({type:'tavern:swipeGreeting',index:Number(i)},'*');}};<\/script>`;

export function mountCardFrame(container, html, onSwipeGreeting) {
  const frame = document.createElement('iframe');
  frame.setAttribute('sandbox', 'allow-scripts');
  frame.setAttribute('referrerpolicy', 'no-referrer');
  frame.className = 'tavern-card-frame';
  const meta = `<meta http-equiv="Content-Security-Policy" content="${CARD_CSP}">`;
  const body = html.replace(/^[\s\S]*?```html\s*\n/i, '').replace(/```\s*$/, '');
  frame.srcdoc = /<head[^>]*>/i.test(body)
    ? body.replace(/<head([^>]*)>/i, `<head$1>${meta}${STUB}`)
    : `<!doctype html><html><head>${meta}${STUB}</head><body>${body}</body></html>`;
  const listener = (ev) => {
    if (ev.source !== frame.contentWindow) return; // only our frame
    const d = ev.data;
    if (!d || d.type !== 'tavern:swipeGreeting' || !Number.isInteger(d.index)) return;
    onSwipeGreeting(d.index);
  };
  window.addEventListener('message', listener);
  container.append(frame);
  return () => { window.removeEventListener('message', listener); frame.remove(); };
}
