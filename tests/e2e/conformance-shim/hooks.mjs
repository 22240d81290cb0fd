// hooks.mjs — maps 'fs' / 'node:fs' to fs-shim.mjs (except inside the shim).
export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && !context.parentURL?.endsWith('/fs-shim.mjs'))
    return { url: new URL('./fs-shim.mjs', import.meta.url).href, shortCircuit: true };
  return next(specifier, context);
}
