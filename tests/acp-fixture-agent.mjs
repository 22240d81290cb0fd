#!/usr/bin/env node
// acp-fixture-agent.mjs — a scripted ACP agent built on the official
// @agentclientprotocol/sdk, for cdsh's end-to-end tests. It never calls a
// model. Flags: --config options|modes|both|none, --no-load. Each prompt's
// first text block is a command: hello, all-updates, permission, read PATH,
// write PATH TEXT, stall, funds, auth, ratelimit, caps (the client
// capabilities received), terminal JSON (see runTerminal).
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const argv = process.argv.slice(2);
const configStyle = argv.includes("--config") ? argv[argv.indexOf("--config") + 1] : "both";
const noLoad = argv.includes("--no-load"); // --tag X is ignored: tests find processes by it
let counter = 0;
let mode = "default";
let model = "fake/one";
const stalls = new Map(); // sessionId -> resolve
let clientCapabilities = null;

const configOptions = () => [
  { id: "mode", name: "Session Mode", description: "Controls how much the agent may do on its own",
    category: "mode", type: "select", currentValue: mode,
    options: [{ value: "default", name: "Default", description: "Asks before edits" },
              { value: "plan", name: "Plan", description: "Research and plan only — no edits or commands" }] },
  { id: "model", name: "Model", category: "model", type: "select", currentValue: model,
    options: [{ value: "fake/one", name: "Fake One" }, { value: "fake/two", name: "Fake Two" }] },
];
const modes = () => ({ currentModeId: mode, availableModes: [
  { id: "default", name: "Default", description: "Asks before edits" },
  { id: "plan", name: "Plan", description: "Research and plan only — no edits or commands" }] });
const withConfig = (res) => {
  if (configStyle === "options" || configStyle === "both") res.configOptions = configOptions();
  if (configStyle === "modes" || configStyle === "both") res.modes = modes();
  return res;
};

const app = acp.agent({ name: "sdk-fixture" });
const upd = (client, sessionId, update) => client.notify(acp.methods.client.session.update, { sessionId, update });
const say = (client, sessionId, text) => upd(client, sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text } });

app.onRequest(acp.methods.agent.initialize, (ctx) => (clientCapabilities = ctx.params.clientCapabilities ?? null, {
  protocolVersion: acp.PROTOCOL_VERSION,
  agentCapabilities: { loadSession: !noLoad, promptCapabilities: { embeddedContext: true },
                       mcpCapabilities: { http: true, sse: false },
                       sessionCapabilities: { list: {}, close: {}, resume: {} } },
  agentInfo: { name: "sdk-fixture-agent", title: "SDK Fixture", version: "1.0.0" },
  authMethods: [{ id: "fixture-login", name: "Fixture login" }],
}));
app.onRequest(acp.methods.agent.authenticate, () => ({}));
app.onRequest(acp.methods.agent.session.new, async (ctx) => {
  const sessionId = `sdk-${process.pid}-${++counter}`;
  return withConfig({ sessionId });
});
app.onRequest(acp.methods.agent.session.load, async (ctx) => {
  await say(ctx.client, ctx.params.sessionId, `restored ${ctx.params.sessionId}`);
  return withConfig({});
});
app.onRequest(acp.methods.agent.session.resume, () => withConfig({}));
app.onRequest(acp.methods.agent.session.list, () => ({ sessions: [] }));
app.onRequest(acp.methods.agent.session.close, () => ({}));
app.onRequest(acp.methods.agent.session.setConfigOption, (ctx) => {
  if (configStyle !== "options" && configStyle !== "both")
    throw new acp.RequestError(-32601, "Method not found", { method: "session/set_config_option" });
  if (ctx.params.configId === "mode") mode = String(ctx.params.value);
  else if (ctx.params.configId === "model") model = String(ctx.params.value);
  else throw new acp.RequestError(-32602, "Invalid params: unknown config option");
  return { configOptions: configOptions() };
});
app.onRequest(acp.methods.agent.session.setMode, (ctx) => {
  if (configStyle !== "modes" && configStyle !== "both")
    throw new acp.RequestError(-32601, "Method not found", { method: "session/set_mode" });
  mode = ctx.params.modeId;
  return {};
});
app.onNotification(acp.methods.agent.session.cancel, (ctx) => {
  const r = stalls.get(ctx.params.sessionId);
  if (r) { stalls.delete(ctx.params.sessionId); r(); }
});
// terminal {command, args?, env?, cwd?, outputByteLimit?, steps?}: creates a
// terminal and runs steps in order — wait, output, kill, release, waitbg
// (wait_for_exit without awaiting it), join (await it), sleep:MS; a step
// "name@ID" uses terminal ID instead of the created one. Without steps:
// wait, output, release. Each step adds a line "step: <result JSON>" or
// "step: error <code> <message>"; the reply is the lines joined by "\n".
async function runTerminal(c, sessionId, spec) {
  const lines = [];
  let id;
  try {
    const r = await c.request(acp.methods.client.terminal.create, {
      sessionId, command: spec.command, args: spec.args ?? [], env: spec.env ?? [],
      cwd: spec.cwd ?? null, outputByteLimit: spec.outputByteLimit ?? null });
    id = r.terminalId;
    lines.push(`created: ${id}`);
  } catch (e) {
    lines.push(`create: error ${e.code} ${e.message}`);
    return lines.join("\n");
  }
  const methods = { wait: acp.methods.client.terminal.waitForExit, output: acp.methods.client.terminal.output,
                    kill: acp.methods.client.terminal.kill, release: acp.methods.client.terminal.release };
  let bg = null;
  for (const step of spec.steps ?? ["wait", "output", "release"]) {
    if (step.startsWith("sleep:")) { await new Promise((r) => setTimeout(r, Number(step.slice(6)))); continue; }
    const [name, other] = step.split("@");
    try {
      if (name === "waitbg") { bg = c.request(methods.wait, { sessionId, terminalId: id }); continue; }
      if (name === "waitcancel") {
        // $/cancel_request for a pending wait; the client still answers it (-32800).
        const ac = new AbortController();
        const p = c.request(methods.wait, { sessionId, terminalId: id }, { cancellationSignal: ac.signal });
        setTimeout(() => ac.abort(), 200);
        lines.push(`${name}: ${JSON.stringify(await p)}`);
        continue;
      }
      const res = name === "join" ? await bg : await c.request(methods[name], { sessionId, terminalId: other ?? id });
      lines.push(`${name}: ${JSON.stringify(res)}`);
    } catch (e) { lines.push(`${name}: error ${e.code} ${e.message}`); }
  }
  return lines.join("\n");
}

app.onRequest(acp.methods.agent.session.prompt, async (ctx) => {
  const { sessionId, prompt } = ctx.params;
  const c = ctx.client;
  const text = prompt.find((b) => b.type === "text")?.text ?? "";
  if (text === "all-updates") {
    await upd(c, sessionId, { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "thinking about it" } });
    await upd(c, sessionId, { sessionUpdate: "plan", entries: [{ content: "look", priority: "high", status: "completed" }] });
    await upd(c, sessionId, { sessionUpdate: "tool_call", toolCallId: "call-1", title: "ls", kind: "execute", status: "pending", rawInput: { command: "ls" } });
    await upd(c, sessionId, { sessionUpdate: "tool_call_update", toolCallId: "call-1", status: "completed",
                              content: [{ type: "content", content: { type: "text", text: "a.txt" } }] });
    await upd(c, sessionId, { sessionUpdate: "available_commands_update", availableCommands: [{ name: "init", description: "create AGENTS.md" }] });
    await upd(c, sessionId, { sessionUpdate: "current_mode_update", currentModeId: "plan" });
    await upd(c, sessionId, { sessionUpdate: "usage_update", used: 10, size: 1000 });
    await say(c, sessionId, "all done");
  } else if (text === "permission") {
    const res = await c.request(acp.methods.client.session.requestPermission, {
      sessionId, toolCall: { toolCallId: "call-p", title: "rm -rf build" },
      options: [{ optionId: "once", name: "Allow once", kind: "allow_once" },
                { optionId: "reject", name: "Reject", kind: "reject_once" }] });
    await say(c, sessionId, `permission: ${res.outcome.outcome}/${res.outcome.optionId ?? "-"}`);
  } else if (text.startsWith("read ")) {
    try {
      const r = await c.request(acp.methods.client.fs.readTextFile, { sessionId, path: text.slice(5) });
      await say(c, sessionId, `read: ${r.content}`);
    } catch (e) { await say(c, sessionId, `read-error: ${e.code} ${e.message}`); }
  } else if (text.startsWith("write ")) {
    const [path, ...rest] = text.slice(6).split(" ");
    try {
      await c.request(acp.methods.client.fs.writeTextFile, { sessionId, path, content: rest.join(" ") });
      await say(c, sessionId, "write: ok");
    } catch (e) { await say(c, sessionId, `write-error: ${e.code} ${e.message}`); }
  } else if (text === "caps") {
    await say(c, sessionId, JSON.stringify(clientCapabilities));
  } else if (text.startsWith("terminal ")) {
    await say(c, sessionId, await runTerminal(c, sessionId, JSON.parse(text.slice(9))));
  } else if (text === "stall") {
    await say(c, sessionId, "thinking...");
    await new Promise((resolve) => stalls.set(sessionId, resolve));
    return { stopReason: "cancelled" };
  } else if (text === "funds") {
    throw new acp.RequestError(-32603, "Internal error", { details: "Upstream request failed: Insufficient account funds" });
  } else if (text === "auth") {
    throw new acp.RequestError(-32000, "Authentication required");
  } else if (text === "ratelimit") {
    throw new acp.RequestError(-32603, "Rate limit exceeded (429)");
  } else {
    await say(c, sessionId, "PONG");
  }
  return { stopReason: "end_turn" };
});

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const conn = app.connect(stream);
await conn.closed;
