// What the TypeScript runtime checks and refuses as the Python runtime does, through the public
// surface over real HTTP: finish reasons, budgets, size caps and the call deadline, response
// shapes, non-text parts, the IR hash, tool implementations, hand-edited sessions.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { execFileSync } from "node:child_process";
import { ConfigError, createAgent, irHash } from "../dist/index.js";
import { PYTHON, compileIr, startFakes } from "./fakes.mjs";

const SOURCE = `
agent Main {
    default config { model: openai("gpt-4o") prompt: "You help." }
    config Gem { model: gemini("gemini-2.5-flash") prompt: "You help." }
    tool lookup(q: string): string @desc "Looks up"
    tool stock(sku: string, store?: string): number
    helpers { Billing handoff user }
}
helper Billing {
    description: "Talks billing"
    default config { model: openai("gpt-4o") prompt: "You do billing." }
}
`;
const IR = compileIr(SOURCE);
const meta = { irHash: IR.hash, compilerVersion: IR.compiler_version, irVersion: IR.ir_version };
const keys = { openaiApiKey: "k", geminiApiKey: "k" };
const block = (kind, name, body) => `[${kind}${name ? `: ${name}` : ""}]\n${body}\n[/${kind}]`;
const answer = (text) => ({ text: block("response_text", null, text) });

function agentFor(urls, extra = {}) {
  return createAgent(IR, { apiKeys: keys, baseUrls: { openai: urls.openai, gemini: urls.gemini }, ...extra }, meta);
}

function collect(agent) {
  const intents = [];
  agent.onIntent((name, value) => void intents.push([name, value]));
  return intents;
}

/** `agent`, reading partials when `streamed`: the runtime asks for a streamed answer only then. */
function reading(agent, streamed) {
  if (streamed) agent.onIntentPartial(() => {});
  return agent;
}

/** A server on 127.0.0.1 answering every POST with `body` (SSE when it is a list of events),
 * its headers `delay` seconds after the request; `requests` are the bodies it got, `streamed`
 * whether each asked for a streamed answer. */
async function rawServer(body, delay = 0) {
  const requests = [];
  const streamed = [];
  const server = createServer((req, res) => {
    let data = "";
    req.on("data", (c) => (data += c));
    req.on("end", () => {
      const request = JSON.parse(data || "null");
      requests.push(request);
      streamed.push(req.url.includes(":streamGenerateContent") || request?.stream === true);
      setTimeout(answer, delay * 1000);
    });
    const answer = () => {
      if (Array.isArray(body)) {
        res.writeHead(200, { "content-type": "text/event-stream" });
        for (const event of body) res.write(`data: ${typeof event === "string" ? event : JSON.stringify(event)}\n\n`);
        res.end();
      } else {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      }
    };
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    requests,
    streamed,
    close: () => new Promise((r) => {
      server.close(r);
      server.closeAllConnections(); // the client keeps its connections alive
    }),
  };
}

test("Gemini SAFETY ends the run with an error naming the reason and the provider's message; nothing is re-asked", async () => {
  const fakes = await startFakes({ gemini: [{ text: "Here is how", finish_reason: "safety", finish_message: "The answer was blocked." }, answer("x")] });
  const agent = agentFor(fakes.urls, { config: "Gem" });
  const intents = collect(agent);
  const session = await agent.run("hi");
  const { gemini } = await fakes.stop();
  assert.equal(gemini.length, 1);
  assert.equal(session.turns[0].status, "error");
  assert.deepEqual(intents, [["error", { message: "the provider stopped the model's answer (finish_reason=content_filter, SAFETY): The answer was blocked." }]]);
  assert.equal(session.turns[0].model_calls[0].finish_reason, "content_filter");
});

test("a text answer cut by the output limit is delivered truncated; onLLMEnd sees why and the usage", async () => {
  const fakes = await startFakes({ openai: [{ text: "[response_text]\nOnce upon a", finish_reason: "length" }] });
  const ends = [];
  const agent = agentFor(fakes.urls, { middleware: [{ onLLMEnd: (response) => void ends.push(response) }] });
  const intents = collect(agent);
  const session = await agent.run("story");
  await fakes.stop();
  assert.deepEqual(intents, [["response_text", { text: "Once upon a", truncated: true }]]);
  assert.equal(session.turns[0].status, "complete");
  assert.equal(ends.length, 1);
  assert.equal(ends[0].truncated, true);
  assert.equal(ends[0].finish_reason, "length");
  assert.ok(ends[0].usage.total_tokens > 0);
  assert.deepEqual(session.usage, session.turns[0].model_calls[0].usage);
});

test("budget.requests: the request that would pass the cap is never made", async () => {
  const fakes = await startFakes({ openai: [{ text: block("tool_call", "lookup", "q: x") }, answer("never")] });
  const agent = agentFor(fakes.urls, { budget: { requests: 1 }, tools: { lookup: async () => "found" } });
  const intents = collect(agent);
  await agent.run("go");
  const { openai } = await fakes.stop();
  assert.equal(openai.length, 1);
  assert.equal(intents.at(-1)[1].message, "budget exceeded: this run has used 1 model requests of its 1 (budget.requests); no further model request is made");
  assert.throws(() => agentFor(fakes.urls, { budget: { tokens: 0 } }), /budget\.tokens: must be at least 1, got 0/);
  assert.throws(() => agentFor(fakes.urls, { budget: { token: 5 } }), /budget\.token: unknown config key; did you mean 'tokens'\?/);
});

test("limits.eventBytes and limits.responseBytes end a call whose answer is too large", async () => {
  const big = "x".repeat(4000);
  const reply = { text: block("response_text", null, big) };
  const fakes = await startFakes({ openai: [{ ...reply, chunk_size: 5000 }, reply, reply] });
  // An event exists only in a streamed answer: partials are read, so the answer streams.
  const agent = reading(agentFor(fakes.urls, { limits: { eventBytes: 1000 }, retry: { attempts: 1 } }), true);
  const intents = collect(agent);
  await agent.run("hi");
  // The size of the whole response is capped in both paths: an answer read whole, then streamed.
  const bodies = [];
  for (const streamed of [false, true]) {
    const whole = reading(agentFor(fakes.urls, { limits: { responseBytes: 2000 }, retry: { attempts: 1 } }), streamed);
    bodies.push(collect(whole));
    await whole.run("hi");
  }
  const { openai } = await fakes.stop();
  assert.deepEqual(openai.map((r) => r.body.stream ?? false), [true, false, true]);
  assert.equal(intents.at(-1)[0], "error");
  assert.match(intents.at(-1)[1].message, /an event of the stream is larger than the limit of 1000 bytes \(limits\.eventBytes\)/);
  for (const more of bodies) {
    assert.equal(more.at(-1)[0], "error");
    assert.match(more.at(-1)[1].message, /the response is larger than the limit of 2000 bytes \(limits\.responseBytes\)/);
  }
  assert.throws(() => agentFor(fakes.urls, { limits: { eventBytes: 0.5 } }), /limits\.eventBytes: expected an integer, got 0\.5/);
});

test("timeouts.call ends a call at its deadline, retries and their waits included", async () => {
  const fakes = await startFakes({ openai: [{ stall: 6, after_chunks: 1 }] });
  const agent = agentFor(fakes.urls, { timeouts: { call: 0.4, idle: 5 }, retry: { attempts: 1 } });
  const intents = collect(agent);
  const started = Date.now();
  await agent.run("hi");
  await fakes.stop();
  assert.ok(Date.now() - started < 5500); // well before the stall ends
  assert.match(intents.at(-1)[1].message, /the call took longer than 0\.4s \(timeouts\.call\)/);
});

test("a whole answer's headers may take longer than timeouts.firstByte: the call's deadline bounds them", async () => {
  const reply = (text) => ({ choices: [{ index: 0, message: { content: block("response_text", null, text) }, finish_reason: "stop" }] });
  const server = await rawServer(reply("Slow but whole."), 0.5);
  const timeouts = { connect: 0.1, firstByte: 0.1 };
  const agent = agentFor({ openai: server.url, gemini: server.url }, { timeouts, retry: { attempts: 1 } });
  const session = await agent.run("hi");
  // The same wait for a streamed answer is past its first-byte timeout.
  const streamed = reading(agentFor({ openai: server.url, gemini: server.url }, { timeouts, retry: { attempts: 1 } }), true);
  const intents = collect(streamed);
  await streamed.run("hi");
  await server.close();
  assert.deepEqual(server.streamed, [false, true]);
  assert.equal(session.turns[0].output, "Slow but whole.");
  assert.equal(intents.at(-1)[0], "error");
  assert.equal(intents.at(-1)[1].message, "OpenAI API error: request failed (ReadTimeout: no response before the first-byte timeout)");
});

test("a response of the wrong shape is a ProviderError naming the provider and the field", async () => {
  // Each case as a stream (read with partials) and as a whole answer (read without).
  const shape = "OpenAI API error: unexpected response shape: ";
  const cases = [
    [[{ choices: "none" }, "[DONE]"], { choices: "none" }, `${shape}choices is a string, expected a list`],
    [[{ choices: [{ index: 0, delta: { content: { text: "hi" } } }] }, "[DONE]"], { choices: [{ index: 0, message: { content: { text: "hi" } } }] }, `${shape}choices[0].{}.content is an object, expected a string or a list`],
    [
      [{ choices: [{ index: 0, delta: { tool_calls: [{ index: "0", function: { name: "lookup" } }] } }] }, "[DONE]"],
      { choices: [{ index: 0, message: { tool_calls: [{ index: "0", function: { name: "lookup" } }] } }] },
      `${shape}choices[0].{}.tool_calls[].index is a string, expected an integer`,
    ],
    [[{ choices: [{ index: 0, delta: { content: "hi" } }], usage: { prompt_tokens: "3" } }, "[DONE]"], { choices: [{ index: 0, message: { content: "hi" } }], usage: { prompt_tokens: "3" } }, `${shape}usage.prompt_tokens is a string, expected an integer`],
  ];
  const gemini = { candidates: [{ content: { parts: [{ functionCall: { name: 7 } }] }, finishReason: "STOP" }] };
  cases.push([[gemini], gemini, "Gemini API error: unexpected response shape: candidates[0].content.parts[].functionCall.name is an integer, expected a string", "Gem"]);
  for (const [events, whole, message, config] of cases)
    for (const streamed of [true, false]) {
      const server = await rawServer(streamed ? events : whole);
      const agent = reading(agentFor({ openai: server.url, gemini: server.url }, { retry: { attempts: 1 }, ...(config ? { config } : {}) }), streamed);
      const intents = collect(agent);
      await agent.run("hi");
      await server.close();
      assert.deepEqual(server.streamed, [streamed]);
      assert.equal(intents.at(-1)[0], "error");
      assert.equal(intents.at(-1)[1].message, message.replace("{}", streamed ? "delta" : "message"));
    }
});

test("non-text parts of an answer (an image, code the model ran) are kept in turn.parts", async () => {
  const image = { mimeType: "image/png", data: "iVBORw0KGgo=" };
  const parts = [{ inlineData: image }, { executableCode: { language: "PYTHON", code: "print(1)" } }];
  const text = { text: block("response_text", null, "Here it is.") };
  // Streamed over two events (read with partials), then as one whole answer.
  const answers = [
    [
      { candidates: [{ content: { role: "model", parts } }] },
      { candidates: [{ content: { role: "model", parts: [text] }, finishReason: "STOP" }] },
    ],
    { candidates: [{ content: { role: "model", parts: [...parts, text] }, finishReason: "STOP" }] },
  ];
  for (const body of answers) {
    const server = await rawServer(body);
    const agent = reading(agentFor({ openai: server.url, gemini: server.url }, { config: "Gem" }), Array.isArray(body));
    const session = await agent.run("draw");
    await server.close();
    assert.deepEqual(server.streamed, [Array.isArray(body)]);
    assert.equal(session.turns[0].output, "Here it is.");
    assert.deepEqual(session.turns[0].parts, [
      { agent: "Main", kind: "inlineData", data: image },
      { agent: "Main", kind: "executableCode", data: { language: "PYTHON", code: "print(1)" } },
    ]);
  }
});

test("the IR hash is recomputed: an IR edited after generation is refused with the way out", () => {
  const edited = structuredClone(IR);
  edited.agents.Main.tools[0].description = "Deletes everything";
  assert.throws(
    () => createAgent(edited, { apiKeys: keys }, meta),
    (e) => e instanceof ConfigError && e.message === "ir_hash: the embedded IR does not match its hash (it was edited after it was generated, or the module was changed by hand); regenerate the bindings with `auwgent generate`",
  );
  // Whole-number floats (1.0) are listed by the generated module: the hash is the compiler's.
  const code = [
    "import json, sys",
    "from auwgent.compiler.pipeline import compile_sources",
    "from auwgent.codegen.typescript import whole_floats",
    "doc = compile_sources({'main.agent': sys.stdin.read()}).documents['main.agent']",
    "print(json.dumps({'ir': doc, 'floats': whole_floats(doc, '')}))",
  ].join("\n");
  const source = 'agent Main { default config { model: openai("gpt-4o", { temperature: 1.0, top_p: 0.5 }) prompt: "Hi {{ 2.0 * 3 }}" } }';
  const { ir, floats } = JSON.parse(execFileSync(PYTHON, ["-c", code], { input: source, encoding: "utf8" }));
  assert.equal(floats.length, 2);
  const fmeta = { irHash: ir.hash, compilerVersion: ir.compiler_version, irVersion: ir.ir_version };
  assert.equal(irHash(ir, floats), ir.hash);
  createAgent(ir, { apiKeys: keys }, { ...fmeta, floats });
  assert.throws(() => createAgent(ir, { apiKeys: keys }, fmeta), /ir_hash: the embedded IR does not match its hash/);
});

test("tool implementations are checked against their declarations: every problem in one ConfigError", () => {
  const tools = {
    lookupp: async () => "",
    lookup: async ({ query }) => query,
    stock: async ({ sku, store = "main" }) => 1,
  };
  assert.throws(
    () => createAgent(IR, { apiKeys: keys, tools }, meta),
    (e) =>
      e instanceof ConfigError &&
      e.message ===
        "tools: 2 problems with the tool implementations:\n" +
          "  - tools.lookupp: no tool named 'lookupp' is declared; did you mean 'lookup'?\n" +
          "  - tools.lookup: the implementation does not match the declaration lookup(q): missing parameter 'q'; unknown parameter 'query'",
  );
  assert.throws(() => createAgent(IR, { apiKeys: keys, tools: { stock: "42" } }, meta), /^ConfigError: tools\.stock: expected a function, got string$/);
  assert.throws(() => createAgent(IR, { apiKeys: keys, tools: { lookup: async (q, extra) => q } }, meta), /tools\.lookup: the implementation takes 2 parameters; a tool takes one args object \(\{ q \}\)/);
  // An args object taken whole, defaults and aliases are fine.
  createAgent(IR, { apiKeys: keys, tools: { lookup: async (args) => args.q, stock: async function ({ sku: id, store = "x" }) { return 1; } } }, meta);
});

test("a hand-edited session grants nothing: the helper's tools come from the IR", async () => {
  const fakes = await startFakes({
    openai: [{ text: block("helper_call", "Billing", "input: refund") }, answer("Which invoice?"), { text: block("tool_call", "lookup", "q: secrets") }, answer("I cannot look that up.")],
  });
  let ran = false;
  const agent = agentFor(fakes.urls, { tools: { lookup: async () => void (ran = true) } });
  const first = await agent.run("refund");
  assert.equal(first.stack.length, 2);
  const tampered = JSON.parse(JSON.stringify(first));
  tampered.stack[1].tools = "all";
  const intents = collect(agent);
  await agent.run("look up secrets", { session: tampered });
  await fakes.stop();
  assert.equal(ran, false);
  assert.match(intents.find((i) => i[0] === "tool_error")[1].message, /^Tool not found: lookup/);
  const stranger = JSON.parse(JSON.stringify(first));
  stranger.stack[1].agent = "Nobody";
  await assert.rejects(agent.run("hi", { session: stranger }), /session\.stack\[1\]\.agent: agent 'Nobody' is not part of this agent's IR/);
});

test("a feature key that asks for nothing is accepted; one that asks for a feature not here is refused", () => {
  const with_ = (edit) => {
    const ir = structuredClone(IR);
    edit(ir);
    ir.hash = irHash(ir);
    return () => createAgent(ir, { apiKeys: keys }, { ...meta, irHash: ir.hash });
  };
  with_((ir) => (ir.agents.Main.configs.default.codeMode = false))();
  with_((ir) => (ir.mcp = {}))();
  with_((ir) => (ir.agents.Main.configs.default.codeMode = true))(); // code mode runs here (src/code_mode.ts)
  with_((ir) => (ir.mcp = { Files: { command: "files-server", args: [], env: {} } }))(); // MCP servers run here (src/mcp.ts)
  assert.throws(with_((ir) => (ir.agents.Main.tools[0].mcp = "Files")), /^ConfigError: ir: tool lookup names MCP server 'Files', which the IR does not declare$/);
  // @approval runs here (src/approvals.ts): a gated tool is accepted.
  with_((ir) => (ir.agents.Billing.tools = [{ ...ir.agents.Main.tools[0], approval: { timeout: null } }]))();
});

test("a Gemini call that comes without an id gets the stable id the Python runtime would make", async () => {
  const call = { candidates: [{ content: { role: "model", parts: [{ functionCall: { name: "tool__lookup", args: { q: "x" } } }] }, finishReason: "STOP" }], responseId: "resp-1" };
  const code = [
    "import json, sys",
    "from auwgent.runtime.providers.shape import digest_of, made_call_id",
    "print(made_call_id(digest_of(json.load(sys.stdin))(), 'resp-1', 0))",
  ].join("\n");
  // The call comes in a stream (read with partials), then in a whole answer.
  for (const streamed of [true, false]) {
    const server = await rawServer(streamed ? [call] : call);
    const agent = reading(agentFor({ openai: server.url, gemini: server.url }, { config: "Gem", protocol: "native", maxToolLoops: 1, tools: { lookup: async () => "rows" } }), streamed);
    const session = await agent.run("find");
    await server.close();
    assert.deepEqual(server.streamed, [streamed]);
    const id = session.turns[0].messages.find((m) => m.tool_calls?.length).tool_calls[0].id;
    assert.match(id, /^auwgent_call_[0-9a-f]{24}$/);
    const expected = execFileSync(PYTHON, ["-c", code], { input: JSON.stringify(server.requests[0]), encoding: "utf8" }).trim();
    assert.equal(id, expected);
  }
});

test("a header whose word is an Object property name ([constructor: x], [__proto__: x]) is text, as in Python", async () => {
  const { BlocksDecoder } = await import("../dist/index.js");
  const text = (word) => `[${word}: x]\nhello\n[/${word}]\n[response_text]\nhi\n[/response_text]`;
  const words = ["constructor", "__proto__", "hasOwnProperty", "tool_call"];
  const code = [
    "import json, sys",
    "from auwgent.runtime.protocol.blocks import BlocksDecoder",
    "from auwgent.runtime.protocol.contract import Contract",
    "from auwgent.runtime.providers.base import TextDelta",
    "c = Contract(agent='A', callables=(), intents=(), output={'kind': 'text'}, types={})",
    "out = []",
    "for text in json.load(sys.stdin):",
    "    d = BlocksDecoder(c, partials=False)",
    "    out.append([[type(e).__name__, e.kind, e.segment] for e in d.feed(TextDelta(text=text)) + d.close()])",
    "print(json.dumps(out))",
  ].join("\n");
  const python = JSON.parse(execFileSync(PYTHON, ["-c", code], { input: JSON.stringify(words.map(text)), encoding: "utf8" }));
  const contract = { output: { kind: "text" }, callables: [], intents: [], types: {} };
  const names = { final: "FinalEvent", rejected: "RejectedEvent", partial: "PartialEvent" };
  const ts = words.map((word) => {
    const decoder = new BlocksDecoder(contract, false);
    return [...decoder.feed({ type: "text", text: text(word) }), ...decoder.close()].map((e) => [names[e.type], e.kind, e.segment]);
  });
  assert.deepEqual(ts, python);
  assert.deepEqual(ts[0], [["FinalEvent", "response_text", 1]]);
});
