// import_e2e.mjs — `cdsh import` end to end: a fixture .mcp.json that starts
// @modelcontextprotocol/server-everything is discovered, preflighted ok,
// enabled, and its tools are called through cdsh (`cdsh mcp` serving the
// profile's tools to the SDK client); a server whose command is missing is
// blocked with the reason; a secret from the environment reaches the child
// but appears in no report, log or file under CDSH_HOME; a project skill and
// a sub-agent are offered as skills, and an enabled one is what `cdsh skills
// show` returns.
import { mkdtempSync, mkdirSync, writeFileSync, readdirSync, readFileSync, statSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { assert, bin, cdsh, runCdsh, runTests } from './mcp_lib.mjs';

const root = mkdtempSync(join(tmpdir(), 'cdsh-import-e2e-'));
const home = join(root, 'home'), proj = join(root, 'proj'), state = join(root, 'cdsh');
for (const d of [home, proj, state, join(root, 'claude'), join(root, 'codex')]) mkdirSync(d, { recursive: true });
const SECRET = 'planted-' + randomBytes(12).toString('hex');
const env = {
  ...process.env, HOME: home, CDSH_HOME: state, CLAUDE_CONFIG_DIR: join(root, 'claude'),
  CODEX_HOME: join(root, 'codex'), IMPORT_E2E_SECRET: SECRET, CDSH_LOG: 'debug',
};
writeFileSync(join(proj, '.mcp.json'), JSON.stringify({
  mcpServers: {
    everything: { command: bin('mcp-server-everything'), args: [], env: { IMPORT_PLANTED: '${IMPORT_E2E_SECRET}' } },
    ghost: { command: 'cdsh-import-e2e-no-such-command' },
  },
}, null, 2));

// The user approved the project's servers, as Claude Code asks before starting a
// server of a project's .mcp.json (unapproved ones are a warning: tests/mcpimport).
mkdirSync(join(proj, '.claude'), { recursive: true });
writeFileSync(join(proj, '.claude/settings.local.json'),
  JSON.stringify({ enabledMcpjsonServers: ['everything', 'ghost'] }, null, 2));

mkdirSync(join(proj, '.claude/skills/release'), { recursive: true });
writeFileSync(join(proj, '.claude/skills/release/SKILL.md'),
  '---\nname: release\ndescription: Cut a release\n---\nTag, then read ${CLAUDE_SKILL_DIR}/checklist.md.\n');
writeFileSync(join(proj, '.claude/skills/release/checklist.md'), '- changelog\n');
mkdirSync(join(proj, '.claude/agents'), { recursive: true });
writeFileSync(join(proj, '.claude/agents/silent.md'), '---\nname: silent\n---\nYou say little.\n');

const outputs = []; // every byte cdsh printed, checked for the secret at the end
function run(args, status = 0) {
  const r = runCdsh(args, { env });
  outputs.push(r.stdout, r.stderr);
  assert.equal(r.status, status, `cdsh ${args.join(' ')}: ${r.stderr}`);
  return r;
}

function files(dir) {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

await runTests({
  scan_judges_the_fixture_servers() {
    const report = JSON.parse(run(['import', 'scan', '--root', proj, '--json']).stdout);
    const claude = report.sources.find((s) => s.source === 'claude');
    const ev = claude.servers.find((s) => s.name === 'everything');
    assert.equal(ev.verdict, 'ok', JSON.stringify(ev.reasons));
    assert.equal(ev.transport, 'stdio');
    assert.deepEqual(ev.unresolved.map((u) => [u.envVar, u.resolvedFrom]), [['IMPORT_E2E_SECRET', 'env']]);
    assert.equal(ev.provenance.scope, 'project');
    const ghost = claude.servers.find((s) => s.name === 'ghost');
    assert.equal(ghost.verdict, 'blocked');
    assert.deepEqual(ghost.reasons, [{ level: 'blocked', code: 'COMMAND_NOT_FOUND',
      message: 'command "cdsh-import-e2e-no-such-command" is not on PATH' },
    { level: 'info', code: 'APPROVED',
      message: `approved for this project (enabledMcpjsonServers in ${join(proj, '.claude/settings.local.json')})` }]);
    assert.equal(report.registered, false);
    const text = run(['import', 'scan', '--root', proj]).stdout;
    assert.match(text, /ok {7}everything/);
    assert.match(text, /blocked {2}ghost/);
    // A scan registers nothing.
    assert.ok(!run(['tools', 'list']).stdout.includes('mcp__everything__'));
  },
  blocked_server_cannot_be_enabled() {
    const r = run(['import', 'enable', '--root', proj, 'ghost'], 1);
    assert.match(r.stderr, /server "ghost" is blocked:\n {2}- COMMAND_NOT_FOUND: command "cdsh-import-e2e-no-such-command" is not on PATH/);
    assert.ok(!run(['import', 'list']).stdout.includes('ghost'));
  },
  enabled_server_tools_appear_and_are_called_through_cdsh: async () => {
    assert.match(run(['import', 'enable', '--root', proj, 'everything']).stdout, /^enabled server everything$/m);
    const list = JSON.parse(run(['tools', 'list', '--json']).stdout);
    const names = list.tools.map((t) => t.name);
    for (const n of ['mcp__everything__echo', 'mcp__everything__get-sum', 'mcp__everything__get-env'])
      assert.ok(names.includes(n), names.join(','));
    const transport = new StdioClientTransport({ command: cdsh, args: ['mcp'], env, stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (d) => { stderr += d; });
    const client = new Client({ name: 'import-e2e', version: '1.0.0' });
    await client.connect(transport);
    try {
      const echo = await client.callTool({ name: 'mcp__everything__echo', arguments: { message: 'via import' } });
      assert.equal(echo.content[0].text, 'Echo: via import');
      const sum = await client.callTool({ name: 'mcp__everything__get-sum', arguments: { a: 40, b: 2 } });
      assert.match(sum.content[0].text, /42/);
      // The secret reached the child (this tool result is the only place it may appear).
      const shown = await client.callTool({ name: 'mcp__everything__get-env', arguments: {} });
      const childEnv = JSON.parse(shown.content[0].text);
      assert.equal(childEnv.IMPORT_PLANTED, SECRET);
      assert.equal(childEnv.IMPORT_E2E_SECRET, undefined); // the scrubbed env drops *SECRET*
    } finally {
      await client.close();
    }
    outputs.push(stderr);
  },
  secret_appears_in_no_report_log_or_file() {
    for (const o of outputs) assert.ok(!o.includes(SECRET), `secret printed: ${o.slice(0, 200)}`);
    for (const f of files(state)) assert.ok(!readFileSync(f, 'utf8').includes(SECRET), `secret in ${f}`);
  },
  skills_and_sub_agents_are_offered_as_skills() {
    const report = JSON.parse(run(['import', 'scan', '--root', proj, '--json']).stdout);
    const claude = report.sources.find((s) => s.source === 'claude');
    const release = claude.skills.find((s) => s.name === 'release');
    assert.equal(release.verdict, 'ok', JSON.stringify(release.reasons));
    assert.deepEqual(release.files, ['checklist.md']);
    const silent = claude.agents.find((s) => s.name === 'silent');
    assert.equal(silent.verdict, 'blocked');
    assert.equal(silent.reasons[0].code, 'MISSING_DESCRIPTION');
    assert.match(run(['import', 'enable', '--root', proj, 'skill:silent'], 1).stderr,
      /skill "silent" is blocked:\n {2}- MISSING_DESCRIPTION: the sub-agent has no description/);
    assert.match(run(['import', 'enable', '--root', proj, 'skill:release']).stdout, /^enabled skill release$/m);
    const shown = run(['skills', 'show', 'release']).stdout;
    const dir = join(proj, '.claude/skills/release');
    assert.equal(shown, `<skill_content name="release">\n<skill_resources>\n` +
      `Base directory for this skill: ${dir}\n` +
      'Resolve relative paths mentioned by this skill against the base directory before using them. ' +
      'Load referenced resources only as needed.\n' +
      'Files (read one with the `skill` tool: {"name", "resource": "<relative path>"}):\n- checklist.md\n' +
      `</skill_resources>\n\n<skill_instructions>\nTag, then read ${dir}/checklist.md.\n\n` +
      `Supporting files (read them when the instructions refer to them):\n- ${dir}/checklist.md\n\n` +
      '</skill_instructions>\n</skill_content>\n');
    const json = JSON.parse(run(['skills', 'show', 'release', '--json']).stdout);
    assert.deepEqual(json.resourceBase, { kind: 'directory', path: dir });
    assert.equal(json.path, join(dir, 'SKILL.md'));
  },
  disable_leaves_nothing_behind() {
    run(['import', 'disable', '--all']);
    const list = JSON.parse(run(['tools', 'list', '--json']).stdout);
    assert.ok(!list.tools.some((t) => t.name.startsWith('mcp__everything__')));
    assert.match(run(['import', 'list']).stdout, /nothing imported is enabled/);
    assert.ok(!JSON.parse(run(['skills', 'list', '--json']).stdout).some((s) => s.name === 'release'));
  },
});
rmSync(root, { recursive: true, force: true });
