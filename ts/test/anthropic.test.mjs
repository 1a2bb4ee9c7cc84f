// The Anthropic provider of the TypeScript runtime: agents over real HTTP against the Python
// package's FakeAnthropicServer, and the vectors it shares with the Python adapter (request
// bodies, and the events of every recorded Anthropic response in tests/data/wire/real).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigError, buildMessagesBody, createAgent } from "../dist/index.js";
import { AnthropicProvider } from "../dist/providers/anthropic.js";
import { DEFAULT_LIMITS, DEFAULT_TIMEOUTS } from "../dist/providers/http.js";
import { messageFromJson } from "../dist/session.js";
import { PYTHON, compileIr, startFakes } from "./fakes.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const REAL = join(here, "..", "..", "tests", "data", "wire", "real", "anthropic");

const source = (options = "") => `
agent Main {
    default config {
        model: anthropic("claude-sonnet-4-5"${options})
        prompt: "You are a weather assistant."
    }
    tool get_weather(location: string): string @desc "Gets the weather"
}
`;
const IRS = new Map();
function ir(options = "") {
  if (!IRS.has(options)) IRS.set(options, compileIr(source(options)));
  return IRS.get(options);
}
const KEY = "sk-ant-test-key";
const HTTP = { retry: { attempts: 1, baseDelay: 0, maxDelay: 0 }, timeouts: DEFAULT_TIMEOUTS, limits: DEFAULT_LIMITS };
const CALL = ["tool__get_weather", { location: "Accra" }];
const BLOCK_TEXT = "[response_text]\nIt is sunny in Accra.\n[/response_text]";

function agentFor(urls, options = "", extra = {}) {
  const doc = ir(options);
  const meta = { irHash: doc.hash, compilerVersion: doc.compiler_version, irVersion: doc.ir_version };
  const called = [];
  const tools = { get_weather: ({ location }) => (called.push(location), `sunny in ${location}`) };
  const agent = createAgent(
    doc,
    { apiKeys: { anthropicApiKey: KEY }, baseUrls: { anthropic: urls.anthropic }, tools, retry: { attempts: 3, baseDelay: 0.01, maxDelay: 0.05 }, ...extra },
    meta,
  );
  const intents = [];
  agent.onIntent((name, value) => void intents.push([name, value]));
  return { agent, intents, called };
}

async function streamed(agent, text) {
  for await (const _ of agent.stream(text));
}

test("native tool loop: tool_use out, tool_result back, the API's headers", async () => {
  const fakes = await startFakes({ api_key: KEY, anthropic: [{ calls: [CALL] }, { text: "Sunny in Accra." }] });
  const { agent, intents } = agentFor(fakes.urls, "", { protocol: "native" });
  const session = await agent.run("Weather in Accra?");
  const seen = (await fakes.stop()).anthropic;
  assert.deepEqual(intents.at(-1), ["response_text", { text: "Sunny in Accra." }]);
  assert.equal(seen[0].path, "/v1/messages");
  assert.deepEqual(seen[0].headers, { "x-api-key": KEY, "anthropic-version": "2023-06-01" });
  assert.equal(seen[0].body.max_tokens, 4096);
  assert.deepEqual(seen[1].body.messages.slice(1), [
    { role: "assistant", content: [{ type: "tool_use", id: "toolu_fake1_0", name: "tool__get_weather", input: { location: "Accra" } }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_fake1_0", content: "sunny in Accra" }] },
  ]);
  assert.deepEqual(session.turns.at(-1).model_calls.map((c) => c.finish_reason), ["tool_calls", "stop"]);
});

test("block protocol over the Messages API", async () => {
  const fakes = await startFakes({ anthropic: [{ text: "[tool_call: get_weather]\nlocation: Accra\n[/tool_call]" }, { text: BLOCK_TEXT }] });
  const { agent, intents, called } = agentFor(fakes.urls);
  await agent.run("Weather?");
  const seen = (await fakes.stop()).anthropic;
  assert.deepEqual(called, ["Accra"]);
  assert.deepEqual(intents.map(([n]) => n), ["tool_call", "tool_result", "response_text"]);
  assert.ok(!("tools" in seen[0].body));
  assert.ok(seen[0].body.system.startsWith("You are a weather assistant."));
});

for (const stream of [false, true]) {
  test(`thinking goes back signed, first in the assistant turn, never as text (${stream ? "streamed" : "whole"})`, async () => {
    const options = ', { thinking: { type: "enabled", budget_tokens: 2048 } }';
    const fakes = await startFakes({
      anthropic: [
        { calls: [CALL], thinking: "Call the tool first.", chunk_size: 4 },
        { text: "Sunny in Accra.", thinking: "Now answer." },
      ],
    });
    const { agent, intents } = agentFor(fakes.urls, options, { protocol: "native" });
    let session = null;
    if (stream) await streamed(agent, "Weather?");
    else session = await agent.run("Weather?");
    const seen = (await fakes.stop()).anthropic;
    assert.equal(seen.length, 2, "the server accepted the signature it gave");
    assert.deepEqual(intents.at(-1), ["response_text", { text: "Sunny in Accra." }]);
    const assistant = seen[1].body.messages[1].content;
    assert.equal(assistant[0].type, "thinking");
    assert.equal(assistant[0].thinking, "Call the tool first.");
    assert.equal(assistant[1].type, "tool_use");
    if (session) assert.deepEqual(session.turns.at(-1).parts.map((p) => p.kind), ["thinking", "thinking"]);
  });
}

test("a session restored from JSON sends its thinking back", async () => {
  const options = ', { thinking: { type: "enabled", budget_tokens: 1024 } }';
  const fakes = await startFakes({ anthropic: [{ calls: [CALL], thinking: "Call first." }, { text: "Sunny.", thinking: "Answer." }, { text: "Still sunny." }] });
  const first = await agentFor(fakes.urls, options, { protocol: "native" }).agent.run("Weather?");
  const stored = JSON.parse(JSON.stringify(first));
  await agentFor(fakes.urls, options, { protocol: "native" }).agent.run("And now?", { session: stored });
  const seen = (await fakes.stop()).anthropic;
  assert.equal(seen.length, 3, "the server accepted every signature");
  const blocks = seen[2].body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []));
  assert.deepEqual(blocks.slice(0, 2).map((b) => b.type), ["thinking", "tool_use"]);
  assert.ok(blocks.some((b) => b.thinking === "Answer."));
});

test("prompt caching: breakpoints on the tools and the system prompt, cache tokens in usage", async () => {
  const fakes = await startFakes({ anthropic: [{ calls: [CALL] }, { text: "Sunny." }] });
  const { agent } = agentFor(fakes.urls, ", { cache: true }", { protocol: "native" });
  const session = await agent.run("Weather?");
  const body = (await fakes.stop()).anthropic[0].body;
  assert.deepEqual(body.tools.at(-1).cache_control, { type: "ephemeral" });
  assert.deepEqual(body.system[0].cache_control, { type: "ephemeral" });
  assert.ok(body.system[1].text.startsWith("Current date and time: "));
  assert.ok(!("cache" in body));
  const [first, second] = session.turns.at(-1).model_calls.map((c) => c.usage);
  assert.ok(first.cache_write_tokens > 0);
  assert.equal(second.cache_read_tokens, first.cache_write_tokens);
});

test("a tool_use cut by max_tokens never runs", async () => {
  const fakes = await startFakes({ anthropic: [{ calls: [["tool__get_weather", '{"location": "Ac']], finish_reason: "length" }] });
  const { agent, intents, called } = agentFor(fakes.urls, "", { protocol: "native" });
  await streamed(agent, "Weather?");
  await fakes.stop();
  assert.deepEqual(called, []);
  assert.equal(intents.at(-1)[0], "error");
  assert.match(intents.at(-1)[1].message, /output limit \(finish_reason=length\)/);
});

for (const [reason, words] of [
  ["refusal", /\(finish_reason=refusal\): the model declined to answer/],
  ["pause_turn", /\(finish_reason=pause_turn\): .*does not resume paused turns/],
]) {
  test(`${reason} ends the run with an error`, async () => {
    const fakes = await startFakes({ anthropic: [{ text: "Partial", finish_reason: reason }] });
    const { agent, intents } = agentFor(fakes.urls);
    await agent.run("hi");
    await fakes.stop();
    assert.deepEqual(intents.map(([n]) => n), ["error"]);
    assert.match(intents[0][1].message, words);
  });
}

test("529 and 429 are retried; an overloaded event before output too; after output it is an error", async () => {
  let fakes = await startFakes({ anthropic: [{ status: 529 }, { status: 429, retry_after: 0 }, { error_event: 2, text: BLOCK_TEXT }, { text: BLOCK_TEXT }] });
  let run = agentFor(fakes.urls);
  await streamed(run.agent, "hi");
  assert.equal((await fakes.stop()).anthropic.length, 4);
  assert.deepEqual(run.intents.at(-1), ["response_text", { text: "It is sunny in Accra." }]);

  fakes = await startFakes({ anthropic: [{ error_event: 6, text: BLOCK_TEXT, chunk_size: 4 }, { text: BLOCK_TEXT }] });
  run = agentFor(fakes.urls);
  await streamed(run.agent, "hi");
  assert.equal((await fakes.stop()).anthropic.length, 1);
  assert.equal(run.intents.at(-1)[0], "error");
  assert.match(run.intents.at(-1)[1].message, /^Anthropic API error \(529\): Overloaded \[overloaded_error\]/);
});

test("overloaded for good names the API and the attempts", async () => {
  const fakes = await startFakes({ anthropic: [{ status: 529 }, { status: 529 }, { status: 529 }] });
  const { agent, intents } = agentFor(fakes.urls);
  await agent.run("hi");
  await fakes.stop();
  assert.match(intents.at(-1)[1].message, /^Anthropic API error \(529\): .*\(gave up after 3 attempts\)/);
});

test("embeddings are a clear error", async () => {
  const provider = new AnthropicProvider("anthropic", "http://127.0.0.1:9", "k", HTTP);
  await assert.rejects(provider.embed(["x"], "claude-sonnet-4-5"), (e) => e instanceof ConfigError && /Anthropic has no embeddings API/.test(e.message));
});

// -- vectors shared with the Python adapter ---------------------------------------------------

const WEATHER = { type: "object", properties: { location: { type: "string" } }, required: ["location"] };
const DATE = "Current date and time: 2026-12-01T10:30:00+00:00 (Tuesday, 01 December 2026 10:30 GMT)";
const THINKING = { type: "thinking", thinking: "Look it up.", signature: "EqQBCkgIARAB" };
const REQUESTS = [
  { stream: false, options: {} },
  { stream: true, options: { max_tokens: 300, temperature: 0.2, stop_sequences: ["END"] } },
  { stream: true, functions: true, options: { cache: true } },
  { stream: false, functions: true, options: { cache: "1h", tool_choice: { type: "auto" } } },
  { stream: false, system: "Be terse.", options: { cache: "5m" } },
  { stream: true, options: { thinking: { type: "enabled", budget_tokens: 9000 } } },
  { stream: false, responseSchema: true, options: { output_config: { effort: "low" } } },
  {
    stream: true,
    functions: true,
    messages: [
      { role: "user", content: "Weather?" },
      { role: "assistant", content: "", tool_calls: [{ id: "toolu_1", name: "tool__get_weather", arguments: '{"location": "Accra"}' }, { id: "toolu_2", name: "tool__get_weather", arguments: "[1]" }], reasoning: [THINKING] },
      { role: "tool", content: "sunny", tool_call_id: "toolu_1", name: "tool__get_weather" },
      { role: "tool", content: "{}", tool_call_id: "toolu_2", name: "tool__get_weather" },
      { role: "assistant", content: "Sunny.", reasoning: [{ type: "redacted_thinking", data: "Emw" }] },
      { role: "user", content: "Thanks" },
    ],
  },
].map((r) => ({
  model: "claude-sonnet-4-5",
  system: r.system ?? `You help.\n\n${DATE}`,
  messages: r.messages ?? [{ role: "user", content: "Weather?" }],
  functions: r.functions ? [{ name: "tool__get_weather", description: "Gets the weather", parameters: WEATHER }] : [],
  responseSchema: r.responseSchema ? { name: "Forecast", schema: WEATHER } : null,
  options: r.options ?? {},
  stream: r.stream,
}));

const PY = JSON.parse(execFileSync(PYTHON, [join(here, "anthropic_vectors.py")], { input: JSON.stringify(REQUESTS), encoding: "utf8", maxBuffer: 256 * 1024 * 1024 }));

test("request bodies equal the Python adapter's", () => {
  REQUESTS.forEach((spec, i) => {
    const request = { ...spec, messages: spec.messages.map(messageFromJson) };
    assert.deepEqual(buildMessagesBody(request), PY.bodies[i], `request ${i}`);
  });
});

test("every recorded Anthropic response decodes as in the Python runtime", async () => {
  const names = readdirSync(REAL).filter((n) => n.endsWith(".json")).sort();
  assert.ok(names.length >= 300);
  const records = names.map((n) => JSON.parse(readFileSync(join(REAL, n), "utf8")));
  const server = createServer((req, res) => {
    const index = Number(req.url.split("/")[2]);
    const { status, headers, body } = records[index].response;
    req.resume();
    req.on("end", () => {
      res.writeHead(status, { ...headers, "content-length": Buffer.byteLength(body) });
      res.end(body);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = server.address().port;
  try {
    let same = 0;
    for (const [i, name] of names.entries()) {
      const provider = new AnthropicProvider("anthropic", `http://127.0.0.1:${port}/r/${i}`, "k", HTTP);
      const request = { model: "m", system: "", messages: [], functions: [], responseSchema: null, options: {}, stream: Boolean(records[i].request.stream) };
      let got;
      try {
        got = [];
        for await (const event of provider.stream(request)) got.push(normal(event));
      } catch (error) {
        got = { error: error.message, status: error.status ?? null };
      }
      assert.deepEqual(got, PY.replays[name], name);
      same++;
    }
    assert.equal(same, names.length);
  } finally {
    server.close();
  }
});

/** A TS event in the Python script's form (absent optional fields as null). */
function normal(event) {
  if (event.type === "tool_call_delta") return { type: event.type, index: event.index, id: event.id ?? null, name: event.name ?? null, arguments: event.arguments };
  if (event.type === "finish") return { type: event.type, reason: event.reason, raw: event.raw ?? null, message: event.message ?? null };
  if (event.type === "usage") return { type: event.type, inputTokens: event.inputTokens, outputTokens: event.outputTokens, cacheReadTokens: event.cacheReadTokens ?? null, cacheWriteTokens: event.cacheWriteTokens ?? null };
  return event;
}
