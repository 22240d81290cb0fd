// acp_fake_llm.test.mjs — the scripted fake model of the ACP matrix
// (fake_llm.mjs) on its own, no agent: a replayed transcript ahead of the
// new message (DSH's resume through `cdsh chat --session`) obeys the last
// script line; Claude Code's safety classifier (auto mode) gets the verdict
// "do not block" in the format it asks for; the request that streams the
// slow reply is marked, and a side request quoting "@slow" (OpenCode's
// title) is not.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readRequest, decide, startFakeLlm } from "./fake_llm.mjs";

const bash = { type: "function", function: { name: "bash", parameters: { type: "object", properties: { command: { type: "string" } } } } };

test("a replayed transcript ahead of the new message: the last script line wins", () => {
  const replay = "Earlier conversation:\nuser: @say first chat turn\nassistant: first chat turn";
  for (const messages of [
    [{ role: "user", content: `${replay}\n@say resumed in chat` }],
    [{ role: "user", content: [{ type: "text", text: replay }, { type: "text", text: "@say resumed in chat" }] }],
  ]) {
    const plan = decide(readRequest("chat", { tools: [bash], messages }));
    assert.deepEqual(plan, { kind: "text", chunks: ["resumed ", "in ", "chat"] });
  }
  // a write after a replayed @say is a write
  const w = decide(readRequest("chat", { tools: [{ type: "function", function: { name: "write", parameters: { properties: { filePath: {}, content: {} } } } }],
    messages: [{ role: "user", content: "user: @say old\n@write /tmp/x NEW TEXT" }] }));
  assert.deepEqual(w, { kind: "tool", name: "write", args: { filePath: "/tmp/x", content: "NEW TEXT" } });
});

test("Claude Code's safety classifier gets a verdict, other tool-less requests do not", () => {
  const msgs = [{ role: "user", content: "<transcript>@shell echo hi</transcript>" }];
  assert.deepEqual(decide(readRequest("anthropic", { stop_sequences: ["</block>"], messages: msgs })), { kind: "text", chunks: ["<block>no"] });
  assert.deepEqual(decide(readRequest("anthropic", { stop_sequences: ["</severity>"], messages: msgs })), { kind: "text", chunks: ["<severity>0"] });
  assert.deepEqual(decide(readRequest("anthropic", { system: [{ type: "text", text: "Answer <block>yes</block> or <block>no</block>." }], messages: msgs })),
    { kind: "text", chunks: ["<block>no"] });
  // a title request (no tools, no classifier format) is not a classifier
  assert.deepEqual(decide(readRequest("anthropic", { system: "Write a title", messages: msgs })), { kind: "text", chunks: ["Fake title"] });
  // the other protocols never take a request for the classifier
  assert.equal(readRequest("chat", { stop: ["</block>"], messages: msgs }).classifier, null);
});

test("the request that streams the slow reply is marked; a title request quoting @slow is not", async () => {
  const llm = await startFakeLlm();
  try {
    const post = async (body) => {
      const r = await fetch(`${llm.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      return r.text();
    };
    await post({ model: "m", messages: [{ role: "system", content: "Generate a title" }, { role: "user", content: "@slow" }] });
    assert.equal(llm.requests.at(-1).plan, "text");
    const ac = new AbortController();
    const slow = fetch(`${llm.url}/v1/chat/completions`, { method: "POST", signal: ac.signal, headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", stream: true, tools: [bash], messages: [{ role: "user", content: "@slow" }] }) });
    const res = await slow;
    const reader = res.body.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    assert.match(first, /data: /);
    assert.equal(llm.requests.at(-1).plan, "slow");
    ac.abort();
    await reader.cancel().catch(() => {});
  } finally {
    await llm.close();
  }
});
