// mcp_server_sdk.mjs — cdsh's MCP server (`cdsh mcp --fixture`) driven by the
// official TypeScript SDK client over stdio and Streamable HTTP, and by the
// official inspector CLI; and a xiangqi game played through `cdsh mcp`.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { assert, bin, cdsh, here, scaled, startProcess, stop, runTests, tempHome } from './mcp_lib.mjs';

const FIXTURE = ['echo', 'add', 'fail', 'sleep'];
const XIANGQI = ['xiangqi_new', 'xiangqi_board', 'xiangqi_move', 'xiangqi_undo', 'xiangqi_hint',
  'xiangqi_review'];

// A fresh CDSH_HOME whose default profile enables the (opt-in) xiangqi plugin.
function xiangqiHome() {
  const home = tempHome('cdsh-e2e-xq-');
  mkdirSync(join(home, 'profiles'));
  writeFileSync(join(home, 'profiles', 'default.yaml'), 'plugins:\n  xiangqi:\n    enabled: true\n');
  return home;
}

async function exercise(client) {
  const { tools } = await client.listTools();
  // The profile's plugins (e.g. the host's skill tool) come first, the fixture after.
  assert.deepEqual(tools.map((t) => t.name).filter((n) => FIXTURE.includes(n)), FIXTURE);
  const add = tools.find((t) => t.name === 'add');
  assert.equal(add.inputSchema.type, 'object');
  assert.equal(add.outputSchema.properties.sum.type, 'number');
  const echo = await client.callTool({ name: 'echo', arguments: { text: 'hello sdk' } });
  assert.deepEqual(echo.content, [{ type: 'text', text: 'hello sdk' }]);
  const sum = await client.callTool({ name: 'add', arguments: { a: 2, b: 40 } });
  assert.equal(sum.structuredContent.sum, 42);
  const bad = await client.callTool({ name: 'fail', arguments: {} });
  assert.equal(bad.isError, true);
  assert.equal(bad.content[0].text, 'Error: this tool always fails (fixture)');
  const invalid = await client.callTool({ name: 'add', arguments: { a: 'x' } });
  assert.equal(invalid.isError, true);
  await assert.rejects(client.callTool({ name: 'nope', arguments: {} }), /Unknown tool: nope/);
  // Progress while a long tool runs (heartbeats every second: a 4 s run
  // leaves 2 s of slack for the second one on a loaded machine).
  const seen = [];
  const slept = await client.callTool({ name: 'sleep', arguments: { ms: 4000 } }, undefined,
    { onprogress: (p) => seen.push(p.progress), timeout: scaled(60000) });
  assert.equal(slept.structuredContent.slept, 4000);
  assert.ok(seen.length >= 2, `progress: ${JSON.stringify(seen)}`);
  // Cancellation: abort a 60 s sleep; the SDK sends notifications/cancelled.
  const ac = new AbortController();
  const t0 = Date.now();
  setTimeout(() => ac.abort('user stop'), 300);
  await assert.rejects(client.callTool({ name: 'sleep', arguments: { ms: 60000 } }, undefined,
    { signal: ac.signal }));
  assert.ok(Date.now() - t0 < 30000); // the sleep alone would take 60 s
  // The server is still fine afterwards.
  const again = await client.callTool({ name: 'echo', arguments: { text: 'still here' } });
  assert.equal(again.content[0].text, 'still here');
}

await runTests({
  async sdk_client_over_stdio() {
    const transport = new StdioClientTransport({ command: cdsh, args: ['mcp', '--fixture'] });
    const client = new Client({ name: 'e2e', version: '1.0.0' });
    await client.connect(transport);
    assert.equal(client.getServerVersion().name, 'cdsh');
    await exercise(client);
    await client.close();
  },
  async sdk_client_over_streamable_http() {
    const srv = await startProcess(cdsh, ['mcp', '--fixture', '--http', '0', '--json', '--token', 'e2e-token'], {
      ready: (o) => o.includes('"url"') });
    try {
      const { url } = JSON.parse(srv.output().trim().split('\n')[0]);
      const transport = new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: 'Bearer e2e-token' } } });
      const client = new Client({ name: 'e2e', version: '1.0.0' });
      await client.connect(transport);
      assert.ok(transport.sessionId, 'no Mcp-Session-Id');
      await exercise(client);
      await transport.terminateSession();
      await client.close();
      // Without the token the connection is refused.
      const anon = new Client({ name: 'anon', version: '1' });
      await assert.rejects(anon.connect(new StreamableHTTPClientTransport(new URL(url))));
    } finally { await stop(srv); }
  },
  async sdk_client_plays_xiangqi_as_the_opponent() {
    // The SDK's stdio transport passes only a few variables on unless told.
    const transport = new StdioClientTransport({ command: cdsh, args: ['mcp'],
      env: { ...process.env, CDSH_HOME: xiangqiHome() } });
    const client = new Client({ name: 'e2e-xiangqi', version: '1.0.0' });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name).filter((n) => n.startsWith('xiangqi_')), XIANGQI);
      for (const name of XIANGQI) {
        const t = tools.find((x) => x.name === name);
        assert.equal(t.inputSchema.type, 'object', name);
        // A projection or a refusal (seed §2.1/§2.2), both objects.
        assert.equal(t.outputSchema.type, 'object', name);
        assert.equal(t.outputSchema.oneOf.length, 2, name);
      }
      const move = tools.find((t) => t.name === 'xiangqi_move');
      assert.deepEqual(move.inputSchema.required, ['move']);
      assert.ok(move.outputSchema.oneOf[0].required.includes('played'));
      assert.ok(move.outputSchema.oneOf[1].required.includes('legalMoves'));
      // Tools act for the opponent: the person takes Black, so the MCP client
      // is Red and moves first. A model opponent is the caller itself here.
      const fresh = await client.callTool({ name: 'xiangqi_new',
        arguments: { side: 'b', opponent: 'model' } });
      assert.notEqual(fresh.isError, true);
      const g0 = fresh.structuredContent;
      assert.equal(g0.ok, true);
      assert.equal(g0.hero, 'b');
      assert.equal(g0.turn, 'r');
      assert.equal(g0.phase, 'playing');
      assert.equal(g0.pending, null);
      assert.equal(g0.opponent.kind, 'model');
      assert.equal(g0.lastMove, null);
      assert.deepEqual(g0.history, []);
      assert.equal(g0.board.length, 90);
      assert.equal(g0.board[70], 'C'); // h2: Red's right cannon
      // h2's cannon: h3..h6 and the capture h9 over h7's screen, c2..g2, i2, h1.
      assert.deepEqual(g0.legalTargets['70'].slice().sort((a, b) => a - b),
        [7, 34, 43, 52, 61, 65, 66, 67, 68, 69, 71, 79]);
      const board = await client.callTool({ name: 'xiangqi_board', arguments: {} });
      assert.equal(board.structuredContent.revision, g0.revision); // reading changes nothing
      assert.equal(board.structuredContent.legalMoves.length, 44);
      assert.ok(board.structuredContent.legalMoves.some((m) => m.iccs === 'h2e2' && m.zh === '炮二平五'));
      assert.equal(typeof board.structuredContent.ascii, 'string');
      assert.equal(board.content.length, 1);
      // The opening move, central cannon.
      const played = await client.callTool({ name: 'xiangqi_move',
        arguments: { move: 'h2e2', reason: 'central cannon' } });
      const g1 = played.structuredContent;
      assert.equal(g1.ok, true);
      assert.ok(g1.revision > g0.revision, `revision ${g0.revision} -> ${g1.revision}`);
      assert.equal(g1.played, '炮二平五');
      assert.equal(g1.captured, '');
      assert.deepEqual(g1.lastMove, { from: 70, to: 67, iccs: 'h2e2', zh: '炮二平五' });
      assert.deepEqual(g1.history, [{ zh: '炮二平五', iccs: 'h2e2', captured: '' }]);
      assert.equal(g1.turn, 'b');
      assert.equal(g1.board[70], '');
      assert.equal(g1.board[67], 'C');
      assert.equal(g1.fen, 'rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR b - - 1 1');
      // Now it is the person's (Black's) move: the opponent may not play it.
      const refused = await client.callTool({ name: 'xiangqi_move', arguments: { move: 'h7e7' } });
      const r = refused.structuredContent;
      assert.equal(r.ok, false);
      assert.equal(r.error, 'NOT_YOUR_TURN');
      assert.equal(r.errorZh, '现在不是对手的回合，不得替人类方走子');
      assert.equal(typeof r.message, 'string');
      assert.equal(r.revision, g1.revision);
      assert.ok(r.legalMoves.length > 0);
      assert.ok(r.legalMoves.some((m) => m.iccs === 'h7e7' && m.zh === '炮８平５'), JSON.stringify(r.legalMoves));
      assert.ok(r.legalMoves.every((m) => typeof m.iccs === 'string' && typeof m.zh === 'string'));
      assert.match(refused.content[0].text, /NOT_YOUR_TURN/);
      // The refusal changed nothing.
      const after = await client.callTool({ name: 'xiangqi_board', arguments: { includeMoves: false } });
      assert.equal(after.structuredContent.revision, g1.revision);
      assert.equal(after.structuredContent.history.length, 1);
    } finally { await client.close(); }
  },
  inspector_cli_lists_and_calls() {
    const cli = join(here, '..', 'node_modules', '@modelcontextprotocol', 'inspector-cli', 'build', 'index.js');
    const base = [cli, cdsh, 'mcp', '--fixture'];
    // The inspector resolves its package.json relative to the working directory's parent.
    const list = spawnSync('node', [...base, '--method', 'tools/list'], { cwd: here, encoding: 'utf8', timeout: scaled(60000) });
    assert.equal(list.status, 0, list.stderr + list.stdout);
    assert.deepEqual(JSON.parse(list.stdout).tools.map((t) => t.name).filter((n) => FIXTURE.includes(n)), FIXTURE);
    const call = spawnSync('node', [...base, '--method', 'tools/call', '--tool-name', 'add',
      '--tool-arg', 'a=20', 'b=22'], { cwd: here, encoding: 'utf8', timeout: scaled(60000) });
    assert.equal(call.status, 0, call.stderr + call.stdout);
    assert.equal(JSON.parse(call.stdout).structuredContent.sum, 42);
  },
});
