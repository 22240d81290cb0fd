// acp_real_agents.test.mjs — end-to-end: real ACP agents from the npm
// registry (tests/package.json optionalDependencies, installed by
// scripts/bootstrap.sh) driven by `cdsh acp prompt`, offline, with their
// model traffic sent to fake endpoints on 127.0.0.1 as acp-peers.md
// describes: OpenCode → tests/peers/fake_model (OpenAI chat completions),
// Codex ACP → a Responses-API stub in this file. OpenCode also lists its
// sessions (session/list) and forks a bound cdsh session (session/fork),
// its context carried over. Each test is skipped when
// its agent's native binary is not installed for this platform. Budgets
// (the agents' initialize budget, each cdsh run, the fake model's start)
// follow CDSH_TEST_TIMEOUT_SCALE (tests/support/timing.cjs).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import http from "node:http";
import { existsSync, mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { SCALE, scaled, within, budgetMessage } from "../support/timing.cjs";

const here = dirname(fileURLToPath(import.meta.url));
const CDSH = process.env.CDSH_BIN ?? join(here, "..", "..", "build", "cdsh");
const PEERS = process.env.CDSH_TEST_PEER_DIR ?? join(here, "..", "..", "build", "tests", "peers");
const NM = join(here, "..", "node_modules");
const OPENCODE = join(NM, "opencode-linux-x64", "bin", "opencode");
const CODEX = join(NM, "@zed-industries", "codex-acp-linux-x64", "bin", "codex-acp");

// Runs cmd to its end (stdin: `input`, or none); {code, out, err}. Past its
// budget (scaled) it is killed and err ends with which step, how long it
// waited and cmd's stderr tail.
function run(cmd, args, env, { timeoutMs = 180000, input } = {}) {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { env, stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    let out = "", err = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (err += d));
    const budget = scaled(timeoutMs);
    let expired = false;
    const t = setTimeout(() => { expired = true; p.kill("SIGTERM"); }, budget);
    p.on("close", (code) => {
      clearTimeout(t);
      if (expired) err += `\n${budgetMessage(`${cmd} ${args.join(" ")}`, budget, err)}`;
      resolve({ code, out, err });
    });
    if (input !== undefined) p.stdin.end(input);
  });
}

// The agents' initialize budget in their engine rows: a cold start (first
// run, offline network retries) takes OpenCode 13-15 s on an idle machine.
const initBudget = { steadySecs: Math.ceil(60 * SCALE), coldSecs: Math.ceil(300 * SCALE) };

function sandbox(engine) {
  const dir = mkdtempSync(join(tmpdir(), "cdsh-acp-real-"));
  for (const d of ["cdsh/multi-acp", "home/.config", "proj", "codex"]) mkdirSync(join(dir, d), { recursive: true });
  writeFileSync(join(dir, "cdsh/multi-acp/engines.json"), JSON.stringify({ version: 1, engines: [engine(dir)] }));
  return dir;
}

const xdg = (dir) => ({
  HOME: join(dir, "home"), XDG_CONFIG_HOME: join(dir, "home/.config"), XDG_DATA_HOME: join(dir, "home/.local/share"),
  XDG_CACHE_HOME: join(dir, "home/.cache"), XDG_STATE_HOME: join(dir, "home/.local/state"),
});

// The fake model (recording its requests when `record` is given) and a
// sandbox whose "opencode" engine row sends OpenCode's traffic to it.
async function openCodeSandbox(script, record) {
  writeFileSync(script, JSON.stringify([{ text: "PONG", finish_reason: "stop", repeat: true }]));
  const model = spawn(join(PEERS, "fake_model"), ["--script", script, ...(record ? ["--record", record] : [])], { stdio: ["pipe", "pipe", "pipe"] });
  let modelErr = "";
  model.stderr.on("data", (d) => { process.stderr.write(d); modelErr += d; });
  const port = await within("starting the fake model (its port line)", 30000,
    new Promise((resolve) => model.stdout.once("data", (d) => resolve(JSON.parse(String(d)).port))), () => modelErr);
  const dir = sandbox((d) => ({
    id: "opencode", command: OPENCODE, args: ["acp"], initBudget,
    env: { ...xdg(d), OPENCODE_DISABLE_MODELS_FETCH: "1", OPENCODE_DISABLE_AUTOUPDATE: "1", OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
      OPENCODE_CONFIG_CONTENT: JSON.stringify({
        provider: { local: { npm: "@ai-sdk/openai-compatible", options: { baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "dummy" }, models: { "fake-model": {} } } },
        model: "local/fake-model" }) },
  }));
  return { model, dir };
}

test("OpenCode: initialize → session/new → prompt → end_turn through cdsh", { skip: !existsSync(OPENCODE) && "opencode-ai is not installed" }, async () => {
  const script = join(tmpdir(), `cdsh-oc-script-${process.pid}.json`);
  const { model, dir } = await openCodeSandbox(script);
  try {
    const r = await run(CDSH, ["acp", "prompt", "opencode", "Reply with exactly: PONG", "--session", "oc", "--cwd", join(dir, "proj")],
                        { ...process.env, CDSH_HOME: join(dir, "cdsh") });
    assert.equal(r.code, 0, r.err);
    assert.ok(r.out.includes("PONG"), r.out);
    assert.ok(r.err.includes("[end_turn] session oc (engine opencode)"), r.err);
    const map = JSON.parse(readFileSync(join(dir, "cdsh/multi-acp/sessions.json"), "utf8"));
    assert.equal(map.sessions.oc.engineId, "opencode");
    assert.ok(map.sessions.oc.acpSessionId);
  } finally {
    model.stdin.end();
    model.kill();
    rmSync(dir, { recursive: true, force: true });
    rmSync(script, { force: true });
  }
});

test("OpenCode: session/list and session/fork of a bound cdsh session carry the context", { skip: !existsSync(OPENCODE) && "opencode-ai is not installed" }, async () => {
  const script = join(tmpdir(), `cdsh-oc-fork-script-${process.pid}.json`);
  const record = join(tmpdir(), `cdsh-oc-fork-record-${process.pid}.jsonl`);
  const { model, dir } = await openCodeSandbox(script, record);
  const proj = join(dir, "proj");
  const env = { ...process.env, CDSH_HOME: join(dir, "cdsh") };
  const chat = (args, input) => run(CDSH, ["chat", ...args, "--approve", "reject"], env, { input });
  try {
    let r = await chat(["--engine", "opencode", "--cwd", proj], "Remember the word PAPAYA and reply PONG\n");
    assert.equal(r.code, 0, r.err);
    assert.ok(r.out.includes("PONG"), r.out);
    r = await run(CDSH, ["sessions", "list", "--json"], env);
    const parent = JSON.parse(r.out).sessions[0].id;
    const before = JSON.parse(readFileSync(join(dir, "cdsh/multi-acp/sessions.json"), "utf8")).sessions[parent];
    assert.equal(before.engineId, "opencode");

    // session/list: the agent's own sessions, the bound one named.
    r = await run(CDSH, ["acp", "sessions", "--remote", "opencode", "--cwd", proj, "--json"], env);
    assert.equal(r.code, 0, r.err);
    const listed = JSON.parse(r.out);
    const mine = listed.sessions.find((s) => s.sessionId === before.acpSessionId);
    assert.ok(mine, r.out);
    assert.equal(mine.cdshSessionId, parent);
    assert.equal(mine.cwd, proj);

    // session/fork through `cdsh sessions fork` (OpenCode advertises fork: {}).
    r = await run(CDSH, ["sessions", "fork", parent, "--json"], env);
    assert.equal(r.code, 0, r.err);
    const forked = JSON.parse(r.out);
    assert.ok(forked.notes.some((n) => n.startsWith("bound to engine opencode, ACP session forked as ")), r.out);
    const map = JSON.parse(readFileSync(join(dir, "cdsh/multi-acp/sessions.json"), "utf8")).sessions;
    const child = map[forked.id];
    assert.equal(child.engineId, "opencode");
    assert.equal(child.lockedEngineId, "opencode");
    assert.equal(child.forkedFrom, parent);
    assert.notEqual(child.acpSessionId, before.acpSessionId);
    assert.deepEqual(map[parent], before, "the parent's binding is untouched");

    // The fork's first turn reaches the model with the parent's conversation.
    r = await chat(["--session", forked.id], "What was the word?\n");
    assert.equal(r.code, 0, r.err);
    assert.ok(r.out.includes("PONG"), r.out);
    assert.ok(!r.out.includes("not carried over") && !r.err.includes("not carried over"), r.out + r.err);
    const bodies = readFileSync(record, "utf8").trim().split("\n").map((l) => JSON.stringify(JSON.parse(l).body));
    const asked = bodies.filter((b) => b.includes("What was the word?"));
    assert.ok(asked.length > 0, "the fork's prompt reached the model");
    assert.ok(asked.every((b) => b.includes("PAPAYA")), "the fork's request carries the parent's message");
  } finally {
    model.stdin.end();
    model.kill();
    rmSync(dir, { recursive: true, force: true });
    rmSync(script, { force: true });
    rmSync(record, { force: true });
  }
});

// A minimal OpenAI Responses API stream: one assistant message "PONG".
function responsesStub() {
  const srv = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (!req.url.endsWith("/responses")) { res.writeHead(404); res.end("{}"); return; }
      res.writeHead(200, { "content-type": "text/event-stream" });
      const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      const item = { type: "message", role: "assistant", id: "msg_1", content: [{ type: "output_text", text: "PONG", annotations: [] }] };
      ev("response.created", { response: { id: "resp_1" } });
      ev("response.output_item.added", { output_index: 0, item: { ...item, content: [] } });
      ev("response.output_text.delta", { output_index: 0, content_index: 0, item_id: "msg_1", delta: "PONG" });
      ev("response.output_item.done", { output_index: 0, item });
      ev("response.completed", { response: { id: "resp_1", usage: { input_tokens: 5, input_tokens_details: { cached_tokens: 0 }, output_tokens: 1, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 6 } } });
      res.end();
    });
  });
  return new Promise((resolve) => srv.listen(0, "127.0.0.1", () => resolve(srv)));
}

test("Codex ACP: prompt → end_turn through cdsh, then resume after restart", { skip: !existsSync(CODEX) && "@zed-industries/codex-acp is not installed" }, async () => {
  const srv = await responsesStub();
  const port = srv.address().port;
  const dir = sandbox((d) => ({
    id: "codex-acp", command: CODEX, initBudget,
    args: ["-c", 'model_provider="local"', "-c", 'model="fake-model"', "-c", 'model_providers.local.name="local"',
           "-c", `model_providers.local.base_url="http://127.0.0.1:${port}/v1"`, "-c", 'model_providers.local.env_key="LOCAL_KEY"',
           "-c", 'model_providers.local.wire_api="responses"'],
    env: { ...xdg(d), CODEX_HOME: join(d, "codex"), LOCAL_KEY: "dummy" },
  }));
  try {
    const env = { ...process.env, CDSH_HOME: join(dir, "cdsh") };
    let r = await run(CDSH, ["acp", "prompt", "codex-acp", "Reply with exactly: PONG", "--session", "cx", "--cwd", join(dir, "proj")], env);
    assert.equal(r.code, 0, r.err);
    assert.ok(r.out.includes("PONG"), r.out);
    assert.ok(r.err.includes("[end_turn] session cx (engine codex-acp)"), r.err);
    r = await run(CDSH, ["acp", "prompt", "codex-acp", "again", "--session", "cx", "--cwd", join(dir, "proj")], env);
    assert.equal(r.code, 0, r.err);
    assert.ok(!r.err.includes("engine context not restored"), r.err);
    r = await run(CDSH, ["acp", "probe", "codex-acp", "--json", "--cwd", join(dir, "proj")], env);
    const rec = JSON.parse(r.out);
    assert.equal(rec.initialize.agentInfo.name, "codex-acp");
    assert.equal(rec.methods["session/new"], "ok");
    assert.deepEqual(rec.dialectRejects, []);
  } finally {
    srv.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
