// build.mjs — faker ships only as ES modules, and the template engine
// (JavaScriptCore's C API) evaluates classic scripts: this bundles the
// installed @faker-js/faker with the en and zh_CN locales into one script,
// dist/faker.js, that defines `__fakerModule` = {faker, fakerEN, fakerZH_CN}.
// Run by scripts/bootstrap.sh after `npm ci`; the output is not committed.
import { build } from 'esbuild';

await build({
  stdin: {
    contents: [
      "import { Faker, base, en, zh_CN } from '@faker-js/faker';",
      'export const fakerEN = new Faker({ locale: [en, base] });',
      'export const fakerZH_CN = new Faker({ locale: [zh_CN, en, base] });',
      'export const faker = fakerEN;',
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
