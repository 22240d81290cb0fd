// tavern_card_utils.js — every V2 card cdsh exports (JSON export and the
// `chara` chunk of every PNG export, V3 cards included) must pass the V2
// validator of the npm package character-card-utils.
// Usage: node tavern_card_utils.js <cdsh binary> <samples dir>
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { v2 } = require('character-card-utils');

const [cdsh, samples] = process.argv.slice(2);
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'cdsh-e2e-tavern-'));
const env = { ...process.env, CDSH_HOME: path.join(home, 'home') };
let failures = 0;

function run(...args) {
  return execFileSync(cdsh, ['tavern', ...args], { env, encoding: 'utf8' });
}

function charaChunk(png) {
  for (let pos = 8; pos + 12 <= png.length;) {
    const len = png.readUInt32BE(pos);
    const type = png.toString('latin1', pos + 4, pos + 8);
    if (type === 'tEXt') {
      const body = png.subarray(pos + 8, pos + 8 + len);
      const nul = body.indexOf(0);
      if (body.toString('latin1', 0, nul) === 'chara')
        return JSON.parse(Buffer.from(body.toString('latin1', nul + 1), 'base64').toString('utf8'));
    }
    pos += 12 + len;
  }
  throw new Error('no chara chunk');
}

function check(label, card) {
  const r = v2.safeParse(card);
  if (r.success) {
    console.log(`ok   ${label}`);
  } else {
    failures++;
    console.log(`FAIL ${label}: ${JSON.stringify(r.error.issues.slice(0, 5))}`);
  }
}

const inputs = {
  'seraphina.json': fs.readFileSync(path.join(samples, 'st-card-v2-seraphina.json'), 'utf8'),
  'v1.json': JSON.stringify({ name: 'Plain', description: 'd', personality: 'p', scenario: 's',
                              first_mes: 'hello', mes_example: '<START>', talkativeness: '0.5' }),
  'v3.json': JSON.stringify({ spec: 'chara_card_v3', spec_version: '3.0', data: {
    name: 'Three', nickname: 'Trey', group_only_greetings: ['hi all'], first_mes: 'yo',
    creator_notes_multilingual: { zh: '你好' }, source: ['https://example.org'],
    creation_date: 1700000000,
    character_book: { name: 'TB', entries: [{ keys: ['k'], content: 'c', enabled: true,
      insertion_order: 1, extensions: {}, use_regex: true, id: 'x1', case_sensitive: null }] },
    extensions: { depth_prompt: { prompt: 'p', depth: 2, role: 'user' } } } }),
  'v2-odd.json': JSON.stringify({ spec: 'chara_card_v2', data: { name: 'Odd', mystery: 1,
    lorebook: { entries: { 5: { uid: 5, key: ['w'], content: 'world', disable: true } } } } }),
};

try {
  for (const [file, text] of Object.entries(inputs)) {
    const p = path.join(home, file);
    fs.writeFileSync(p, text);
    const res = JSON.parse(run('import', p, '--with-book', '--json'));
    const id = res.cardId;
    const js = path.join(home, `${id}.json`);
    const png = path.join(home, `${id}.png`);
    run('export', id, '--json', '-o', js);
    run('export', id, '--png', '-o', png);
    const exported = JSON.parse(fs.readFileSync(js, 'utf8'));
    if (exported.spec === 'chara_card_v2') check(`${file} JSON export`, exported);
    check(`${file} PNG chara chunk`, charaChunk(fs.readFileSync(png)));
    // and the PNG export imports back as a card
    run('import', png, '--with-book', '--json');
  }
} finally {
  fs.rmSync(home, { recursive: true, force: true });
}
if (failures) {
  console.log(`${failures} exported card(s) rejected by character-card-utils`);
  process.exit(1);
}
