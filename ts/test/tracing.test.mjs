// OpenTelemetry tracing (src/tracing.ts, docs/observability.md): the same conversation run
// by both runtimes over real HTTP against the fake OpenAI server, each traced with its own
// OpenTelemetry SDK and in-memory exporter, gives the same span tree; the config keys'
// checks; `tracing: true` and the global provider; the optional package missing.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { trace } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { ConfigError, createAgent } from "../dist/index.js";
import { PYTHON, compileIr, startFakes } from "./fakes.mjs";
import { traceRecorder } from "./trace_tree.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const SOURCE = `
helper Analyst {
    description: "Analyses a topic"
    default config { model: openai("gpt-4o-mini") prompt: "You analyse." }
    output: { summary: string }
}
agent Main {
    default config { model: openai("gpt-4o") prompt: "You help." }
    tool get_weather(location: string): { temperature: number }
    helpers { Analyst }
}
`;
const IR = compileIr(SOURCE);
const meta = { irHash: IR.hash, compilerVersion: IR.compiler_version, irVersion: IR.ir_version };
const block = (kind, name, body) => `[${kind}${name ? `: ${name}` : ""}]\n${body}\n[/${kind}]`;
const SCRIPT = {
  openai: [
    { text: block("tool_call", "get_weather", "location: Accra") },
    { text: block("helper_call", "Analyst", "input: the weather") },
    { text: block("schema", "AnalystOutput", "summary: hot") },
    { text: block("response_text", null, "Hot in Accra.") },
    { status: 401 },
  ],
};
const INPUTS = ["Weather in Accra?", "And tomorrow?"];
const TOOLS = { get_weather: { temperature: 31 } };

async function runTs() {
  const fakes = await startFakes(SCRIPT);
  const recorder = traceRecorder();
  const tools = { get_weather: async () => TOOLS.get_weather };
  const agent = createAgent(IR, { apiKeys: { openaiApiKey: "k" }, baseUrls: { openai: fakes.urls.openai }, tools, tracerProvider: recorder.provider, retry: { attempts: 1 } }, meta);
  agent.onIntent(() => {});
  let session = null;
  const statuses = [];
  for (const text of INPUTS) {
    session = await agent.run(text, { session });
    statuses.push(session.turns.at(-1).status);
  }
  await fakes.stop();
  return { spans: recorder.tree(), statuses };
}

async function runPy() {
  const fakes = await startFakes(SCRIPT);
  const dir = mkdtempSync(join(tmpdir(), "auwgent-tracing-"));
  const file = join(dir, "case.json");
  writeFileSync(file, JSON.stringify({ ir: IR, base_url: fakes.urls.openai, inputs: INPUTS, tools: TOOLS }));
  try {
    return JSON.parse(execFileSync(PYTHON, [join(here, "tracing_py.py"), file], { encoding: "utf8" }));
  } finally {
    await fakes.stop();
  }
}

const names = (nodes) => nodes.map((n) => [n.name, ...names(n.children)]);

test("both runtimes trace one conversation over HTTP alike: names, nesting, attributes, statuses", async () => {
  const [ts, py] = [await runTs(), await runPy()];
  assert.deepEqual(ts.statuses, ["complete", "error"]);
  assert.deepEqual(py, ts);
  // What the tree holds, so that an empty or flat tree cannot pass.
  assert.deepEqual(names(ts.spans), [
    ["invoke_agent Main", ["chat gpt-4o"], ["execute_tool get_weather"], ["chat gpt-4o"], ["invoke_agent Analyst", ["chat gpt-4o-mini"]], ["chat gpt-4o"]],
    ["invoke_agent Main", ["chat gpt-4o"]],
  ]);
  const [first, second] = ts.spans;
  assert.deepEqual(first.children[3].attributes["auwgent.helper_stack"], ["Main", "Analyst"]);
  assert.equal(first.children[0].attributes["gen_ai.response.model"], "openai:gpt-4o");
  assert.equal(second.status.code, "ERROR");
  assert.equal(second.children[0].status.code, "ERROR");
  assert.equal(second.children[0].attributes["error.type"], "ProviderError");
  assert.ok([...ts.spans, ...ts.spans.flatMap((s) => s.children)].every((s) => s.ended));
});

function agentWith(config) {
  return createAgent(IR, { apiKeys: { openaiApiKey: "k" }, ...config }, meta);
}

test("the config keys are checked at construction, naming the key", () => {
  assert.throws(() => agentWith({ tracerProvider: "otel" }), (e) => e instanceof ConfigError && e.message === 'tracerProvider: expected an OpenTelemetry TracerProvider, got "otel"');
  assert.throws(() => agentWith({ tracerProvider: { tracer: 1 } }), (e) => e instanceof ConfigError && e.message === "tracerProvider: expected an OpenTelemetry TracerProvider, got an object without getTracer()");
  assert.throws(() => agentWith({ tracerProvider: { getTracer: () => null } }), /^ConfigError: tracerProvider: its getTracer\(\) did not return an OpenTelemetry Tracer$/);
  assert.throws(() => agentWith({ tracing: "yes" }), /^ConfigError: tracing: expected true or false, got "yes"$/);
  assert.throws(() => agentWith({ tracng: true }), /^ConfigError: tracng: unknown config key; did you mean 'tracing'\?/);
});

test("tracing: true uses the global provider; without it nothing is traced", async () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  assert.ok(trace.setGlobalTracerProvider(provider));
  try {
    const fakes = await startFakes({ openai: [{ text: block("response_text", null, "Hi.") }, { text: block("response_text", null, "Hi.") }] });
    const baseUrls = { openai: fakes.urls.openai };
    await agentWith({ baseUrls }).run("hi");
    assert.equal(exporter.getFinishedSpans().length, 0);
    await agentWith({ baseUrls, tracing: true }).run("hi");
    await fakes.stop();
    const spans = exporter.getFinishedSpans();
    assert.deepEqual(spans.map((s) => s.name), ["chat gpt-4o", "invoke_agent Main"]);
    assert.equal(spans[0].parentSpanContext?.spanId, spans[1].spanContext().spanId);
    const { version } = JSON.parse(readFileSync(join(here, "..", "package.json"), "utf8"));
    assert.deepEqual([spans[0].instrumentationScope.name, spans[0].instrumentationScope.version], ["auwgent", version]);
    assert.deepEqual(spans[1].attributes["auwgent.intents"], ["response_text"]);
  } finally {
    trace.disable();
  }
});

test("asked for without @opentelemetry/api installed, construction says what to install", () => {
  // The built runtime alone, where no node_modules can be found.
  const dir = mkdtempSync(join(tmpdir(), "auwgent-no-otel-"));
  cpSync(join(here, "..", "dist"), join(dir, "dist"), { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  const script = `
    import { createAgent } from "./dist/index.js";
    const ir = JSON.parse(process.argv[2]);
    const meta = { irHash: ir.hash, compilerVersion: ir.compiler_version, irVersion: ir.ir_version };
    createAgent(ir, { apiKeys: { openaiApiKey: "k" } }, meta); // tracing off: the package is not needed
    try {
      createAgent(ir, { apiKeys: { openaiApiKey: "k" }, tracing: true }, meta);
      console.log("no error");
    } catch (error) {
      console.log(error.name + ": " + error.message);
    }`;
  writeFileSync(join(dir, "probe.mjs"), script);
  const out = execFileSync(process.execPath, [join(dir, "probe.mjs"), JSON.stringify(IR)], { cwd: dir, encoding: "utf8" });
  assert.equal(out.trim(), "ConfigError: tracing: OpenTelemetry is not installed; npm install @opentelemetry/api");
});

test("a skipped call's span ends when it is skipped, marked auwgent.skipped, before the model is asked again", async () => {
  const both = `${block("tool_call", "get_weather", "location: Accra")}\n${block("helper_call", "Analyst", "input: the weather")}`;
  const fakes = await startFakes({ openai: [{ text: both }, { text: block("response_text", null, "Skipped both.") }] });
  // The order spans start and end in (the SDK's span times mix two clocks: not comparable).
  const recorder = traceRecorder();
  const events = recorder.order;
  const agent = createAgent(IR, { apiKeys: { openaiApiKey: "k" }, baseUrls: { openai: fakes.urls.openai }, tools: { get_weather: async () => TOOLS.get_weather }, tracerProvider: recorder.provider }, meta);
  agent.onIntent((name) => (name === "tool_call" || name === "helper_call" ? { skip: true } : undefined));
  const session = await agent.run("Weather?");
  await fakes.stop();
  assert.equal(session.turns[0].status, "complete");
  const byName = Object.fromEntries(recorder.exporter.getFinishedSpans().map((s) => [s.name, s]));
  const secondChat = events.lastIndexOf("start chat gpt-4o");
  assert.ok(secondChat > events.indexOf("start chat gpt-4o"), events.join(", "));
  for (const name of ["execute_tool get_weather", "invoke_agent Analyst"]) {
    assert.equal(byName[name].attributes["auwgent.skipped"], true, name);
    assert.ok(events.indexOf(`end ${name}`) < secondChat, events.join(", "));
  }
  assert.equal(byName["invoke_agent Main"].attributes["auwgent.skipped"], undefined);
});
