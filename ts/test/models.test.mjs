// The offline and scripted models (providers/offline.ts, providers/scripted.ts) through the
// public surface, and the pieces they share with the Python runtime computed by it (a child
// process) and compared. Their behaviour inside runs is pinned by the engine vectors
// (conformance/engine.json: engine/offline/* and every scripted scenario).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { ConfigError, ProviderError, ScriptedModel, blockText, createAgent, hashedEmbedding } from "../dist/index.js";
import { PYTHON, compileIr } from "./fakes.mjs";

const IR = compileIr(`
agent Main {
    default config { model: openai("gpt-4o") prompt: "You help." }
    tool lookup(q: string): string @example(q = "tides")
}
`);
const meta = { irHash: IR.hash, compilerVersion: IR.compiler_version, irVersion: IR.ir_version };

function python(code, input) {
  return JSON.parse(execFileSync(PYTHON, ["-c", code], { input: JSON.stringify(input), encoding: "utf8" }));
}

async function run(agent, text) {
  const intents = [];
  agent.onIntent((name, value) => void intents.push([name, value]));
  const session = await agent.run(text);
  return { intents, session };
}

test('"provider": "offline" runs the agent with no key and no network', async () => {
  const agent = createAgent(IR, { provider: "offline", tools: { lookup: async ({ q }) => `found ${q}` } }, meta);
  const { intents } = await run(agent, "tides today?");
  assert.deepEqual(intents.map(([name]) => name), ["tool_call", "tool_result", "response_text"]);
  assert.deepEqual(intents[0][1], { type: "lookup", args: { q: "tides" } });
  assert.equal(intents[2][1].text, 'Offline reply to "tides today?". Called: lookup.');
});

test("AUWGENT_PROVIDER=offline chooses the offline model when the config names no provider", async () => {
  const before = process.env.AUWGENT_PROVIDER;
  process.env.AUWGENT_PROVIDER = " Offline ";
  try {
    const { intents } = await run(createAgent(IR, {}, meta), "hi");
    assert.deepEqual(intents, [["response_text", { text: 'Offline reply to "hi".' }]]);
  } finally {
    if (before === undefined) delete process.env.AUWGENT_PROVIDER;
    else process.env.AUWGENT_PROVIDER = before;
  }
});

test("a provider that is not one is refused in the Python runtime's words", () => {
  assert.throws(() => createAgent(IR, { provider: "ofline" }, meta), { name: "ConfigError", message: "provider: unknown provider 'ofline' (use 'offline' or a Provider)" });
  assert.throws(() => createAgent(IR, { provider: 3 }, meta), { message: "provider: expected a Provider (with stream() and embed()) or 'offline', got number" });
});

test("a missing API key points at the offline model, as in Python", () => {
  const before = process.env.OPENAI_API_KEY;
  delete process.env.OPENAI_API_KEY;
  try {
    const expected = python(
      ["import json, sys", "from auwgent.runtime.agent import agent_from_ir", "try:", "    agent_from_ir(json.load(sys.stdin), {})", "except Exception as e:", "    print(json.dumps(str(e)))"].join("\n"),
      IR,
    );
    assert.throws(() => createAgent(IR, {}, meta), (e) => e instanceof ConfigError && e.message === expected);
    assert.match(expected, /AUWGENT_PROVIDER=offline/);
  } finally {
    if (before !== undefined) process.env.OPENAI_API_KEY = before;
  }
});

test("a scripted model plays its list, records requests, and says when it runs out", async () => {
  const model = new ScriptedModel([ScriptedModel.call("tool__lookup", { q: "x" }), ScriptedModel.text("Done.")], { chunkSize: 3 });
  const agent = createAgent(IR, { provider: model, protocol: "native", tools: { lookup: async () => "r" } }, meta);
  const { intents } = await run(agent, "go");
  assert.deepEqual(intents.map(([name]) => name), ["tool_call", "tool_result", "response_text"]);
  assert.equal(model.calls, 2);
  assert.equal(model.remaining, 0);
  model.assertExhausted();
  assert.equal(model.lastRequest.messages.at(-1).role, "tool");
  const { intents: after } = await run(agent, "again");
  const error = after.find(([name]) => name === "error")[1];
  assert.match(error.message, /scripted model has no response left for call 3 \(the script has 2\)/);
});

test("assertExhausted names the unused responses", () => {
  const model = new ScriptedModel(["a", "b"]);
  assert.throws(() => model.assertExhausted(), { message: "scripted model was called 0 time(s); 2 response(s) of 2 were never used" });
  assert.throws(() => new ScriptedModel("text"), TypeError);
  assert.throws(() => new ScriptedModel([], { chunkSize: 0 }), RangeError);
});

test("a scripted failure streams its first part, then fails with a ProviderError", async () => {
  const model = new ScriptedModel([ScriptedModel.fail("overloaded", { after: "[response_text]\nPart", status: 529 })]);
  const events = [];
  await assert.rejects(
    (async () => {
      for await (const event of model.stream({ messages: [] })) events.push(event);
    })(),
    (e) => e instanceof ProviderError && e.status === 529 && e.message === "scripted API error (529): overloaded",
  );
  assert.deepEqual(events.map((e) => e.text).join(""), "[response_text]\nPart");
});

test("a function script, raw events, reply options, and a response of the wrong kind", async () => {
  const seen = [];
  const model = new ScriptedModel(
    (request) => {
      seen.push(request.messages.length);
      return seen.length === 1 ? ScriptedModel.reply("Hi", ScriptedModel.call("f", "{bad"), { finish: "length", usage: [3, 4] }) : seen.length === 2 ? ScriptedModel.events({ type: "text", text: "x" }) : { nope: 1 };
    },
    { chunkSize: 100 },
  );
  const drain = async () => {
    const out = [];
    for await (const event of model.stream({ messages: [] })) out.push(event);
    return out;
  };
  assert.deepEqual(await drain(), [
    { type: "text", text: "Hi" },
    { type: "tool_call_delta", index: 0, id: "call_1_0", name: "f", arguments: "{bad" },
    { type: "usage", inputTokens: 3, outputTokens: 4 },
    { type: "finish", reason: "length" },
  ]);
  assert.deepEqual(await drain(), [{ type: "text", text: "x" }]);
  await assert.rejects(drain(), { message: "scripted API error: scripted response for call 3 is a object; expected a string or a value from ScriptedModel.call/json/reply/fail/events" });
  assert.equal(model.remaining, null);
});

test("block texts, JSON and embeddings are the Python runtime's, byte for byte", async () => {
  const blocks = [
    ["tool_call", "lookup", { q: "tides", n: 2, ok: true }],
    ["tool_call", "lookup", { q: "yes" }],
    ["tool_call", "lookup", { q: "two words", nested: { a: [1, 2] } }],
    ["schema", "Out", { summary: "Akwaaba: ɛyɛ" }],
    ["response_text", null, "Done."],
    ["custom", "Plan", ""],
  ];
  const texts = ["The tide is high", "", "!!!", "Ẹ kú àárọ̀ ọ̀rẹ́", "word word WORD", "naïve café 42"];
  const expected = python(
    [
      "import json, sys",
      "from auwgent.runtime.providers.scripted import ScriptedModel, block_text, hashed_embedding",
      "d = json.load(sys.stdin)",
      "print(json.dumps({'blocks': [block_text(*b) for b in d['blocks']], 'json': ScriptedModel.json(d['blocks'][2][2]),",
      "  'vectors': [hashed_embedding(t) for t in d['texts']] + [hashed_embedding(t, 3) for t in d['texts']]}))",
    ].join("\n"),
    { blocks, texts },
  );
  assert.deepEqual(blocks.map((b) => blockText(...b)), expected.blocks);
  assert.equal(ScriptedModel.json(blocks[2][2]), expected.json);
  const vectors = [...texts.map((t) => hashedEmbedding(t)), ...texts.map((t) => hashedEmbedding(t, 3))];
  vectors.forEach((vector, i) => vector.forEach((x, j) => assert.ok(Math.abs(x - expected.vectors[i][j]) < 1e-12, `${i}/${j}`)));
  assert.deepEqual(await new ScriptedModel([]).embed(["The tide is high"], "m"), [expected.vectors[0]]);
});
