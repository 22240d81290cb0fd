// frame.js — interactive card HTML (seed boundary 8): only inside an iframe
// with sandbox="allow-scripts" (never the same-origin flag), loaded from cdsh
// web's GET /frame/tavern/frameGreeting, which serves the card document with
// its own CSP (sandbox allow-scripts; connect-src 'none'; ... — see
// CDSH_WEB_FRAME_CSP in src/server/rpc_gateway.h), so the page's strict CSP
// stays as it is. The only bridge is swipeGreeting, accepted only from this
// frame's window.
export function cardFrameUrl(sessionId) {
  return `/frame/tavern/frameGreeting?sessionId=${encodeURIComponent(sessionId)}`;
}

export function mountCardFrame(container, src, onSwipeGreeting) {
  const frame = document.createElement('iframe');
  frame.setAttribute('sandbox', 'allow-scripts');
  frame.setAttribute('referrerpolicy', 'no-referrer');
  frame.className = 'tavern-card-frame';
  frame.dataset.testid = 'card-frame';
  frame.src = src;
  const listener = (ev) => {
    if (ev.source !== frame.contentWindow) return; // only our frame
    if (ev.origin !== 'null') return; // the sandboxed document has an opaque origin
    const d = ev.data;
    if (!d || d.type !== 'tavern:swipeGreeting' || !Number.isInteger(d.index)) return;
    onSwipeGreeting(d.index);
  };
  window.addEventListener('message', listener);
  container.append(frame);
  return () => { window.removeEventListener('message', listener); frame.remove(); };
}
