// fs-shim.mjs — node:fs plus a small globSync (only '*' and '**' patterns).
import fs from 'node:fs';
import path from 'node:path';
export * from 'node:fs';
export default fs;
export function globSync(pattern, opts = {}) {
  const cwd = opts.cwd || process.cwd();
  const re = new RegExp('^' + pattern.split('**').map((p) => p.split('*').map((s) =>
    s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('[^/]*')).join('.*') + '$');
  const out = [];
  const walk = (dir) => {
    let entries = [];
    try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
    for (const e of entries) {
      const full = path.join(dir, e.name);
      const rel = path.relative(cwd, full);
      if (re.test(rel)) out.push(rel);
      if (e.isDirectory() && e.name !== 'node_modules') walk(full);
    }
  };
  walk(cwd);
  return out;
}
