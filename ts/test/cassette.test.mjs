// Cassettes across the two runtimes: a cassette recorded by the Python runtime (a child
// process, auwgent.testing.Cassette) against the fake provider servers replays in the
// TypeScript runtime with the servers gone, and the other way round; a request the cassette
// lacks is the same CassetteMiss, diff included, in both.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Cassette, CassetteMiss, createAgent } from "../dist/index.js";
import { PYTHON, compileIr, startFakes } from "./fakes.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const SOURCE = `
agent Main {
    default config { model: openai("gpt-4o") prompt: "You help {{ctx.name}}." }
    config G { model: gemini("gemini-2.5-flash") prompt: "You help {{ctx.name}}." }
    context { name: string }
    tool lookup(q: string): string
}
`;
const IR = compileIr(SOURCE);
const meta = { irHash: IR.hash, compilerVersion: IR.compiler_version, irVersion: IR.ir_version };
const KEY = "sk-test-cassette-key-0001";
const DEAD = { openai: "http://127.0.0.1:9/v1", gemini: "http://127.0.0.1:9" }; // nothing listens
const TOOLS = { lookup: "found it" };
const call = (name, body) => `[tool_call: ${name}]\n${body}\n[/tool_call]`;
const answer = (text) => `[response_text]\n${text}\n[/response_text]`;
const SCRIPT = { openai: [{ text: call("lookup", "q: tides"), chunk_size: 7 }, { text: answer("High at noon."), chunk_size: 5 }], gemini: [{ text: call("lookup", "q: tides"), chunk_size: 7 }, { text: answer("High at noon."), chunk_size: 5 }], api_key: KEY };

function config(urls, named) {
  return { apiKeys: { openaiApiKey: KEY, geminiApiKey: KEY }, baseUrls: urls, context: { name: "Ama" }, ...(named ? { config: named } : {}) };
}

function inPython(spec) {
  const dir = mkdtempSync(join(tmpdir(), "auwgent-cassette-py-"));
  const file = join(dir, "spec.json");
  writeFileSync(file, JSON.stringify({ ir: IR, tools: TOOLS, ...spec }));
  return JSON.parse(execFileSync(PYTHON, [join(here, "cassette_py.py"), file], { encoding: "utf8" }));
}

async function inTypeScript({ cassette, mode, inputs, config: cfg, partials }) {
  const tape = new Cassette(cassette, mode);
  const tools = { lookup: async () => TOOLS.lookup };
  const agent = createAgent(IR, { ...cfg, httpClient: tape, tools }, meta);
  const intents = [];
  agent.onIntent((name, value) => void intents.push([name, structuredClone(value)]));
  if (partials) agent.onIntentPartial(() => {});
  let session = null;
  for (const text of inputs) session = await agent.run(text, { session });
  return { intents, outputs: session.turns.map((t) => t.output ?? null), misses: tape.misses.map((m) => m.message), tape };
}

const tmp = () => join(mkdtempSync(join(tmpdir(), "auwgent-cassette-")), "tape.json");
const INPUTS = ["tides?", "and tomorrow?"];
const CASES = [
  ["OpenAI, whole answers", null, false],
  ["OpenAI, streamed", null, true],
  ["Gemini, whole answers", "G", false],
  ["Gemini, streamed", "G", true],
];

for (const [label, named, partials] of CASES) {
  test(`${label}: recorded by Python, replayed by TypeScript with no server`, async () => {
    const fakes = await startFakes({ ...SCRIPT, openai: [...SCRIPT.openai, ...SCRIPT.openai], gemini: [...SCRIPT.gemini, ...SCRIPT.gemini] });
    const cassette = tmp();
    let recorded;
    try {
      recorded = inPython({ cassette, mode: "record", inputs: INPUTS, config: config(fakes.urls, named), partials });
    } finally {
      await fakes.stop();
    }
    assert.ok(!readFileSync(cassette, "utf8").includes(KEY), "the key is not in the file");
    const replayed = await inTypeScript({ cassette, mode: "replay", inputs: INPUTS, config: config(DEAD, named), partials });
    assert.deepEqual(replayed.misses, []);
    assert.deepEqual(replayed.intents, recorded.intents);
    assert.deepEqual(replayed.outputs, recorded.outputs);
    assert.deepEqual(replayed.tape.unused, []);
    assert.equal(recorded.intents.filter(([n]) => n === "tool_result").length, 2);
  });

  test(`${label}: recorded by TypeScript, replayed by Python with no server`, async () => {
    const fakes = await startFakes({ ...SCRIPT, openai: [...SCRIPT.openai, ...SCRIPT.openai], gemini: [...SCRIPT.gemini, ...SCRIPT.gemini] });
    const cassette = tmp();
    let recorded;
    try {
      recorded = await inTypeScript({ cassette, mode: "record", inputs: INPUTS, config: config(fakes.urls, named), partials });
    } finally {
      await fakes.stop();
    }
    const text = readFileSync(cassette, "utf8");
    assert.ok(!text.includes(KEY), "the key is not in the file");
    assert.equal(JSON.parse(text).interactions.length, 4);
    const replayed = inPython({ cassette, mode: "replay", inputs: INPUTS, config: config(DEAD, named), partials });
    assert.deepEqual(replayed.misses, []);
    assert.deepEqual(replayed.intents, recorded.intents);
    assert.deepEqual(replayed.outputs, recorded.outputs);
  });
}

test("a request the cassette lacks: the same CassetteMiss, diff and all, in both runtimes", async () => {
  const fakes = await startFakes(SCRIPT);
  const cassette = tmp();
  try {
    inPython({ cassette, mode: "record", inputs: ["tides?"], config: config(fakes.urls, null) });
  } finally {
    await fakes.stop();
  }
  const other = { cassette, mode: "replay", inputs: ["tides in Ho?"], config: config(DEAD, null) };
  const python = inPython(other);
  const ts = await inTypeScript(other);
  assert.equal(ts.misses.length, 1);
  assert.deepEqual(ts.misses, python.misses);
  assert.match(ts.misses[0], /^cassette .* has no recorded answer for POST \/v1\/chat\/completions\n--- recorded request #1\n\+\+\+ this request\n@@ /);
  assert.match(ts.misses[0], /\n-.*"tides\?"[\s\S]*\n\+.*"tides in Ho\?"[\s\S]*re-record the cassette \(mode='record'\) if the change is intended$/);
  const errors = (r) => r.intents.filter(([n]) => n === "error").map(([, v]) => v.message);
  assert.deepEqual(errors(ts), errors(python));
});

test("modes, a missing file and a file of another version", async () => {
  assert.throws(() => new Cassette(tmp()), { message: /does not exist: record it first \(mode='record'\)$/ });
  assert.throws(() => new Cassette(tmp(), "play"), RangeError);
  const old = tmp();
  writeFileSync(old, JSON.stringify({ version: 0, interactions: [] }));
  assert.throws(() => new Cassette(old), (e) => e instanceof CassetteMiss && /expected a version 1 cassette; record it again/.test(e.message));
  assert.throws(() => createAgent(IR, { ...config(DEAD, null), httpClient: 3 }, meta), { message: /^httpClient: expected an object with a fetch\(url, init\) method/ });
});
