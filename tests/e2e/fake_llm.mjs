// fake_llm.mjs — one scripted model endpoint on 127.0.0.1 for the real ACP
// agents of the e2e suite, speaking the four wire protocols they need:
// OpenAI chat completions (OpenCode, DSH), OpenAI Responses (Codex ACP),
// Anthropic Messages (Claude Code ACP) and Gemini generateContent /
// streamGenerateContent (Gemini CLI), streamed as each protocol streams.
//
// The script is in the user's prompt, so one server serves every scenario:
//   @say TEXT          the reply TEXT, streamed word by word
//   @read PATH         call the agent's file-read tool on PATH
//   @write PATH TEXT   call its file-write tool: PATH gets TEXT
//   @shell CMD         call its shell tool with the command line CMD
//   @slow              stream "tick" for a minute (a turn to cancel)
//   anything else      "PONG"
// When a prompt holds several script lines (cdsh replays an earlier
// transcript ahead of the new message), the last one is obeyed.
// The tool is picked from the tools the request offers (an agent's delegated
// "mcp__acp__" tools first), its argument names from the tool's schema. Once
// the conversation holds the tool's result the reply is "DONE <result>", so
// a test sees what the tool gave back. Requests offering no tool (titles,
// routers, checks) get a short plain answer. Claude Code's safety classifier
// (its auto permission mode asks a model whether a tool call should be
// blocked, and stops at "</block>" or "</severity>") gets the verdict "do not
// block". mode "auth" answers every
// request 401 as the protocol's provider does for a missing/invalid key.
// Every request is recorded ({method, path, body, plan}: plan is what it was
// answered with, "text" | "tool" | "slow") for the tests' assertions.
import http from "node:http";

const CANDIDATES = {
  read: ["read", "read_file", "read_text_file", "view", "readfile"],
  write: ["write", "write_file", "create_file", "write_text_file", "writefile"],
  shell: ["bash", "shell", "run_shell_command", "exec_command", "shell_command", "terminal", "run_command"],
};

// A line of the script (see the header).
const SCRIPT = /@(say|read|write|shell|slow)\b/;

function text(v) {
  if (v == null) return "";
  if (typeof v === "string") return v;
  if (Array.isArray(v)) return v.map(text).join("\n");
  if (typeof v === "object") {
    if (typeof v.text === "string") return v.text;
    if (v.content !== undefined) return text(v.content);
    if (v.output !== undefined) return text(v.output);
    if (v.response !== undefined) return text(v.response);
    return JSON.stringify(v);
  }
  return String(v);
}

// {tools:[{name, schema}], prompt, toolResult|null} of one request.
export function readRequest(proto, body) {
  const tools = [];
  let prompt = "", toolResult = null;
  if (proto === "chat") {
    for (const t of body.tools ?? []) if (t.function) tools.push({ name: t.function.name, schema: t.function.parameters });
    const msgs = body.messages ?? [];
    // The user's prompt: the last user message holding a script command
    // (DSH sends a "runtime context" user message after it), else the last.
    let last = -1, scripted = -1;
    msgs.forEach((m, i) => {
      if (m.role !== "user") return;
      last = i;
      if (SCRIPT.test(text(m.content))) scripted = i;
    });
    if (scripted >= 0) last = scripted;
    if (last >= 0) prompt = text(msgs[last].content);
    const after = msgs.slice(last + 1).filter((m) => m.role === "tool");
    if (after.length) toolResult = text(after[after.length - 1].content);
  } else if (proto === "responses") {
    for (const t of body.tools ?? []) {
      if (t.type === "function") tools.push({ name: t.name, schema: t.parameters });
      else if (t.type === "custom") tools.push({ name: t.name, custom: true });
    }
    const items = typeof body.input === "string" ? [{ type: "message", role: "user", content: body.input }] : body.input ?? [];
    let last = -1;
    items.forEach((m, i) => { if ((m.type === "message" || m.type === undefined) && m.role === "user") last = i; });
    if (last >= 0) prompt = text(items[last].content);
    const after = items.slice(last + 1).filter((m) => /_call_output$/.test(m.type ?? ""));
    if (after.length) toolResult = text(after[after.length - 1].output);
  } else if (proto === "anthropic") {
    for (const t of body.tools ?? []) if (t.name) tools.push({ name: t.name, schema: t.input_schema });
    const msgs = body.messages ?? [];
    const lastMsg = msgs[msgs.length - 1];
    const blocks = (m) => (typeof m?.content === "string" ? [{ type: "text", text: m.content }] : m?.content ?? []);
    const results = blocks(lastMsg).filter((b) => b.type === "tool_result");
    if (lastMsg?.role === "user" && results.length) toolResult = text(results[results.length - 1].content);
    for (let i = msgs.length - 1; i >= 0; i--) {
      const b = blocks(msgs[i]);
      if (msgs[i].role === "user" && !b.some((x) => x.type === "tool_result")) {
        prompt = b.filter((x) => x.type === "text").map((x) => x.text).join("\n");
        break;
      }
    }
  } else if (proto === "gemini") {
    for (const t of body.tools ?? [])
      for (const f of t.functionDeclarations ?? []) tools.push({ name: f.name, schema: f.parametersJsonSchema ?? f.parameters });
    const contents = body.contents ?? [];
    const lastC = contents[contents.length - 1];
    const fr = (lastC?.parts ?? []).filter((p) => p.functionResponse);
    if (fr.length) toolResult = text(fr[fr.length - 1].functionResponse.response);
    for (let i = contents.length - 1; i >= 0; i--) {
      const parts = contents[i].parts ?? [];
      if (contents[i].role === "user" && !parts.some((p) => p.functionResponse)) {
        prompt = parts.filter((p) => typeof p.text === "string").map((p) => p.text).join("\n");
        break;
      }
    }
  }
  // Only the last script line counts: a replayed transcript comes first.
  const lines = prompt.split("\n");
  for (let i = lines.length - 1; i >= 0; i--) {
    const at = lines[i].search(SCRIPT);
    if (at >= 0) { prompt = lines[i].slice(at); break; }
  }
  const classifier = classifierKind(proto, body);
  return { tools, prompt, toolResult, classifier };
}

// "block" | "severity" | null: whether the request is Claude Code's safety
// classifier, and which verdict format it wants. Its request stops at
// "</block>" (or "</severity>"); its fast stage sets no stop sequence but
// its instructions ask for the <block> tag.
function classifierKind(proto, body) {
  if (proto !== "anthropic") return null;
  const stops = body.stop_sequences ?? [];
  if (stops.includes("</severity>")) return "severity";
  if (stops.includes("</block>")) return "block";
  if (!(body.tools ?? []).length && /<block>/.test(text(body.system))) return "block";
  return null;
}

function pickTool(tools, kind) {
  const names = CANDIDATES[kind];
  const bare = (n) => n.replace(/^mcp__acp__/i, "").toLowerCase();
  for (const delegated of [true, false])
    for (const want of names) {
      const t = tools.find((x) => bare(x.name) === want && /^mcp__acp__/i.test(x.name) === delegated);
      if (t) return t;
    }
  return null;
}

function argsFor(tool, kind, { path, content, command }) {
  const props = tool.schema?.properties ?? {};
  const has = (k) => Object.prototype.hasOwnProperty.call(props, k);
  const args = {};
  const first = (list) => list.find(has);
  if (kind === "read" || kind === "write") args[first(["file_path", "filePath", "absolute_path", "path", "file"]) ?? "file_path"] = path;
  if (kind === "write") args[first(["content", "text", "file_text", "contents"]) ?? "content"] = content;
  if (kind === "shell") {
    const key = first(["command", "cmd"]) ?? "command";
    args[key] = props[key]?.type === "array" ? ["bash", "-lc", command] : command;
  }
  for (const req of tool.schema?.required ?? []) {
    if (args[req] !== undefined) continue;
    const type = props[req]?.type;
    if (type === "string") args[req] = req === "description" ? "e2e step" : "";
    else if (type === "number" || type === "integer") args[req] = /timeout/i.test(req) ? 120000 : 1;
    else if (type === "boolean") args[req] = false;
  }
  return args;
}

// A Codex-style patch adding one file.
const addFilePatch = (path, content) => `*** Begin Patch\n*** Add File: ${path}\n+${content}\n*** End Patch\n`;
const shq = (s) => `'${String(s).replace(/'/g, "'\\''")}'`;

// An agent without a read or write tool (Codex: a shell and apply_patch)
// gets the nearest equivalent: cat for a read; apply_patch, else a shell
// redirection, for a write.
function fallback(tools, kind, spec) {
  if (kind === "write") {
    const patch = tools.find((t) => t.name === "apply_patch");
    if (patch) return { kind: "tool", name: patch.name, custom: !!patch.custom,
      args: patch.custom ? addFilePatch(spec.path, spec.content) : { input: addFilePatch(spec.path, spec.content) } };
  }
  const sh = pickTool(tools, "shell");
  if (!sh) return null;
  const command = kind === "read" ? `cat ${shq(spec.path)}` : `printf '%s\\n' ${shq(spec.content)} > ${shq(spec.path)}`;
  return { kind: "tool", name: sh.name, args: argsFor(sh, "shell", { command }) };
}

// What to answer: {kind:"text", chunks} | {kind:"tool", name, args, custom?} | {kind:"slow"}.
export function decide({ tools, prompt, toolResult, classifier = null }) {
  if (classifier === "severity") return { kind: "text", chunks: ["<severity>0"] };
  if (classifier === "block") return { kind: "text", chunks: ["<block>no"] };
  if (toolResult !== null) return { kind: "text", chunks: ["DONE ", toolResult.replace(/\s+/g, " ").trim().slice(0, 400)] };
  const line = (re) => { const m = prompt.match(re); return m ? m : null; };
  let m;
  if (!tools.length) return { kind: "text", chunks: [/\bjson\b/i.test(prompt) ? '{"next_speaker":"user","reasoning":"done"}' : "Fake title"] };
  if ((m = line(/@say ([^\n]+)/))) return { kind: "text", chunks: m[1].trim().split(/(?<= )/) };
  if (line(/@slow\b/)) return { kind: "slow" };
  for (const [kind, re] of [["read", /@read (\S+)/], ["write", /@write (\S+) ([^\n]+)/], ["shell", /@shell ([^\n]+)/]]) {
    if (!(m = line(re))) continue;
    const tool = pickTool(tools, kind);
    const spec = kind === "shell" ? { command: m[1].trim() } : { path: m[1], content: (m[2] ?? "").trim() };
    if (!tool) return fallback(tools, kind, spec) ?? { kind: "text", chunks: [`NO-TOOL for ${kind} among ${tools.map((t) => t.name).join(",")}`] };
    return { kind: "tool", name: tool.name, args: argsFor(tool, kind, spec) };
  }
  return { kind: "text", chunks: ["PONG"] };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Streams the answer in `proto`'s SSE framing (or one JSON body when the
// request did not ask for a stream).
async function answer(proto, res, body, plan, model, closed) {
  let n = 0;
  const id = () => `${Date.now().toString(36)}${(n++).toString(36)}`;
  const stream = proto === "gemini" ? body.__stream : proto === "responses" ? true : body.stream === true;
  const chunks = async function* () {
    if (plan.kind === "slow") {
      for (let i = 0; i < 240 && !closed(); i++) { yield `tick${i} `; await sleep(250); }
    } else if (plan.kind === "text") {
      for (const c of plan.chunks) { yield c; await sleep(5); }
    }
  };
  const sse = (obj, event) => res.write(`${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(obj)}\n\n`);
  const callId = `call_${id()}`;

  if (proto === "chat") {
    const base = { id: `chatcmpl-${id()}`, object: "chat.completion.chunk", created: Math.floor(Date.now() / 1000), model };
    if (!stream) {
      let t = ""; for await (const c of chunks()) t += c;
      const message = plan.kind === "tool"
        ? { role: "assistant", content: null, tool_calls: [{ id: callId, type: "function", function: { name: plan.name, arguments: JSON.stringify(plan.args) } }] }
        : { role: "assistant", content: t };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ ...base, object: "chat.completion", choices: [{ index: 0, message, finish_reason: plan.kind === "tool" ? "tool_calls" : "stop" }], usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 } }));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    sse({ ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] });
    if (plan.kind === "tool") {
      sse({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: callId, type: "function", function: { name: plan.name, arguments: JSON.stringify(plan.args) } }] }, finish_reason: null }] });
    } else for await (const c of chunks()) sse({ ...base, choices: [{ index: 0, delta: { content: c }, finish_reason: null }] });
    sse({ ...base, choices: [{ index: 0, delta: {}, finish_reason: plan.kind === "tool" ? "tool_calls" : "stop" }], usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 } });
    res.end("data: [DONE]\n\n");
  } else if (proto === "responses") {
    const rid = `resp_${id()}`;
    res.writeHead(200, { "content-type": "text/event-stream" });
    const ev = (type, data) => sse({ type, ...data }, type);
    ev("response.created", { response: { id: rid, status: "in_progress", output: [] } });
    if (plan.kind === "tool" && plan.custom) {
      const item = { type: "custom_tool_call", id: `ctc_${id()}`, call_id: callId, name: plan.name, input: plan.args, status: "completed" };
      ev("response.output_item.added", { output_index: 0, item: { ...item, input: "" } });
      ev("response.custom_tool_call_input.delta", { output_index: 0, item_id: item.id, delta: item.input });
      ev("response.output_item.done", { output_index: 0, item });
    } else if (plan.kind === "tool") {
      const item = { type: "function_call", id: `fc_${id()}`, call_id: callId, name: plan.name, arguments: JSON.stringify(plan.args), status: "completed" };
      ev("response.output_item.added", { output_index: 0, item: { ...item, arguments: "" } });
      ev("response.function_call_arguments.delta", { output_index: 0, item_id: item.id, delta: item.arguments });
      ev("response.output_item.done", { output_index: 0, item });
    } else {
      const mid = `msg_${id()}`;
      let t = "";
      ev("response.output_item.added", { output_index: 0, item: { type: "message", role: "assistant", id: mid, status: "in_progress", content: [] } });
      for await (const c of chunks()) { t += c; ev("response.output_text.delta", { output_index: 0, content_index: 0, item_id: mid, delta: c }); }
      ev("response.output_item.done", { output_index: 0, item: { type: "message", role: "assistant", id: mid, status: "completed", content: [{ type: "output_text", text: t, annotations: [] }] } });
    }
    ev("response.completed", { response: { id: rid, status: "completed", usage: { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 2, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 12 } } });
    res.end();
  } else if (proto === "anthropic") {
    const msg = { id: `msg_${id()}`, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } };
    const stop = plan.kind === "tool" ? "tool_use" : "end_turn";
    if (!stream) {
      let t = ""; for await (const c of chunks()) t += c;
      const content = plan.kind === "tool" ? [{ type: "tool_use", id: `toolu_${id()}`, name: plan.name, input: plan.args }] : [{ type: "text", text: t }];
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ ...msg, content, stop_reason: stop, usage: { input_tokens: 10, output_tokens: 2 } }));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    sse({ type: "message_start", message: msg }, "message_start");
    if (plan.kind === "tool") {
      sse({ type: "content_block_start", index: 0, content_block: { type: "tool_use", id: `toolu_${id()}`, name: plan.name, input: {} } }, "content_block_start");
      sse({ type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: JSON.stringify(plan.args) } }, "content_block_delta");
    } else {
      sse({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, "content_block_start");
      for await (const c of chunks()) sse({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: c } }, "content_block_delta");
    }
    sse({ type: "content_block_stop", index: 0 }, "content_block_stop");
    sse({ type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 2 } }, "message_delta");
    sse({ type: "message_stop" }, "message_stop");
    res.end();
  } else if (proto === "gemini") {
    const usageMetadata = { promptTokenCount: 10, candidatesTokenCount: 2, totalTokenCount: 12 };
    const cand = (parts, finishReason) => ({ candidates: [{ content: { role: "model", parts }, index: 0, ...(finishReason ? { finishReason } : {}) }], usageMetadata, modelVersion: model });
    if (!stream) {
      let t = ""; for await (const c of chunks()) t += c;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(cand(plan.kind === "tool" ? [{ functionCall: { name: plan.name, args: plan.args } }] : [{ text: t }], "STOP")));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    if (plan.kind === "tool") sse(cand([{ functionCall: { name: plan.name, args: plan.args } }], "STOP"));
    else {
      // each chunk as it comes; the last one carries finishReason
      let held = null;
      for await (const c of chunks()) { if (held !== null) sse(cand([{ text: held }])); held = c; }
      sse(cand([{ text: held ?? "" }], "STOP"));
    }
    res.end();
  }
}

function authError(proto, res) {
  const bodies = {
    chat: { error: { message: "Incorrect API key provided: dummy.", type: "invalid_request_error", code: "invalid_api_key" } },
    responses: { error: { message: "Incorrect API key provided: dummy.", type: "invalid_request_error", code: "invalid_api_key" } },
    anthropic: { type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } },
    gemini: { error: { code: 401, message: "API key not valid. Please pass a valid API key.", status: "UNAUTHENTICATED" } },
  };
  res.writeHead(401, { "content-type": "application/json" });
  res.end(JSON.stringify(bodies[proto] ?? bodies.chat));
}

// Starts the endpoint; {port, url, requests, toolCalls (the tool calls it
// scripted: {proto, name, args}), mode, close()}. mode may be
// changed at any time ("ok" | "auth").
export async function startFakeLlm({ mode = "ok" } = {}) {
  const state = { mode, requests: [], toolCalls: [] };
  const srv = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (d) => (raw += d));
    req.on("end", async () => {
      const url = new URL(req.url, "http://x");
      const path = url.pathname;
      let body = {};
      try { body = raw ? JSON.parse(raw) : {}; } catch { body = { raw }; }
      state.requests.push({ method: req.method, path, body });
      let closed = false;
      res.on("close", () => (closed = true));
      const model = body.model ?? (path.match(/models\/([^:/]+)/) ?? [])[1] ?? "fake-model";
      try {
        if (req.method === "GET" && /\/models\/?$/.test(path)) {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({ object: "list", data: [{ id: "fake-model", object: "model", type: "model", display_name: "fake" }], models: [] }));
          return;
        }
        if (/count_?tokens|:countTokens$/i.test(path)) {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({ input_tokens: 10, totalTokens: 10 }));
          return;
        }
        let proto = null;
        if (/\/chat\/completions$/.test(path)) proto = "chat";
        else if (/\/responses$/.test(path)) proto = "responses";
        else if (/\/messages$/.test(path)) proto = "anthropic";
        else if (/:(stream)?[gG]enerateContent$/.test(path)) { proto = "gemini"; body.__stream = /:streamGenerateContent$/.test(path); }
        if (!proto) { res.writeHead(404, { "content-type": "application/json" }); res.end('{"error":{"message":"not found"}}'); return; }
        if (state.mode === "auth") { authError(proto, res); return; }
        const plan = decide(readRequest(proto, body));
        state.requests.at(-1).plan = plan.kind; // "slow": this request streams the reply to cancel
        if (plan.kind === "tool") state.toolCalls.push({ proto, name: plan.name, args: plan.args });
        await answer(proto, res, body, plan, model, () => closed);
      } catch (e) {
        if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: String(e?.stack ?? e) } }));
      }
    });
  });
  await new Promise((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const port = srv.address().port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    requests: state.requests,
    toolCalls: state.toolCalls,
    get mode() { return state.mode; },
    set mode(m) { state.mode = m; },
    close: () => new Promise((resolve) => { srv.closeAllConnections?.(); srv.close(() => resolve()); }),
  };
}
