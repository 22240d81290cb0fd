// build.mjs — faker ships only as ES modules, and the template engine
// (JavaScriptCore's C API) evaluates classic scripts: this bundles the
// installed @faker-js/faker with the en and zh_CN locales into one script,
// dist/faker.js, that defines `__fakerModule` = {Faker, base, en, zh_CN}.
// Run by scripts/bootstrap.sh after `npm ci`; the output is not committed.
import { build } from 'esbuild';

await build({
  stdin: {
    contents: [
      "export { Faker, base, en, zh_CN } from '@faker-js/faker';",
    ].join('\n'),
    resolveDir: import.meta.dirname,
    loader: 'js',
  },
  bundle: true,
  format: 'iife',
  globalName: '__fakerModule',
  minify: true,
  target: 'es2022',
  legalComments: 'eof',
  outfile: 'dist/faker.js',
  logLevel: 'warning',
});
