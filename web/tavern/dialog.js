// dialog.js — modal dialogs (never the browser's built-in blocking boxes): resolves to the
// chosen button's value, or for prompt dialogs the edited text (null = cancel).
export function dialog({ title, body, buttons, input }) {
  return new Promise((resolve) => {
    const d = document.createElement('dialog');
    d.className = 'tavern-dialog';
    const h = document.createElement('h4');
    h.textContent = title;
    d.append(h);
    if (body) { const p = document.createElement('p'); p.textContent = body; d.append(p); }
    let area = null;
    if (input !== undefined) {
      area = document.createElement('textarea');
      area.value = input;
      area.rows = 8;
      d.append(area);
    }
    const row = document.createElement('div');
    row.className = 'row';
    for (const b of buttons) {
      const btn = document.createElement('button');
      btn.textContent = b.label;
      btn.addEventListener('click', () => {
        d.close();
        d.remove();
        resolve(area && b.value === true ? area.value : b.value);
      });
      row.append(btn);
    }
    d.append(row);
    d.addEventListener('cancel', () => { d.remove(); resolve(null); });
    document.body.append(d);
    d.showModal();
  });
}
