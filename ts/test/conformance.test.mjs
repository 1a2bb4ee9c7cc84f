// The conformance vectors of ../conformance, run through the TypeScript runtime. The Python
// suite runs the same files (tests/conformance/); both check that they ran exactly the ids of
// conformance/manifest.json.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { traceRecorder } from "./trace_tree.mjs";
import { AuwgentError, BlocksDecoder, OfflineModel, ScriptedModel, buildChatBody, compactView, cut, estimateRequest, limitsFor, pyJson, rawEstimate, coerce, createAgent, evaluate, evaluateTaint, irHash, renderPrompt, renderValue, truthy, validate } from "../dist/index.js";
import { approver, normalIds, resumeAll } from "./conformance_approvals.mjs";
import { MemoryScenario } from "./conformance_memory.mjs";
import { runTest } from "../dist/testing.js";
import { PYTHON } from "./fakes.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "conformance");
const GROUPS = ["schema", "expr", "prompts", "blocks", "engine", "taint", "context", "test_blocks"];
const load = (name) => JSON.parse(readFileSync(join(root, `${name}.json`), "utf8"));
const manifest = load("manifest");
const vectors = GROUPS.flatMap((group) => load(group).map((vector) => ({ group, vector })));

const NOW = /Current date and time: \d{4}-\d\d-\d\dT[\d:]+[+-]\d\d:\d\d \([^)]*\)/g;
/** Each run's spotlighting nonce (random) replaced by its rank of first appearance. */
const nonces = (text) => {
  const seen = new Map();
  return text.replace(/untrusted:([0-9a-f]{16})>>/g, (_m, n) => `untrusted:<nonce${seen.get(n) ?? seen.set(n, seen.size + 1).get(n)}>>`);
};
const normal = (value) =>
  JSON.parse(
    nonces(JSON.stringify(value))
      .replace(NOW, "Current date and time: <now>")
      .replace(/"id":"[0-9a-f]{32}"/g, '"id":"<id>"')
      .replace(/"traceback":"(?:[^"\\]|\\.)*"/g, '"traceback":"<traceback>"') // the host language's own
      .replace(/"decided_at":"[^"]*"/g, '"decided_at":"<time>"'), // an approval decision's clock
  );

function contractOf(spec) {
  const callables = spec.callables.map((c) => ({ ...c, configured: true, examples: [] }));
  return { agent: "Main", callables, intents: spec.intents, output: spec.output, types: spec.types, examples: [] };
}

function decode(spec, text, chunk) {
  const decoder = new BlocksDecoder(contractOf(spec), true);
  const pieces = [];
  if (chunk) for (let i = 0; i < text.length; i += chunk) pieces.push(text.slice(i, i + chunk));
  else pieces.push(text);
  const events = [...pieces.flatMap((p) => decoder.feed({ type: "text", text: p })), ...decoder.close()];
  return events
    .filter((e) => e.type !== "partial")
    .map((e) => (e.type === "final" ? { type: "final", kind: e.kind, name: e.name, payload: e.payload } : { type: "rejected", kind: e.kind, name: e.name }));
}

/** The runtime's scripted model playing back a scenario's replies (text, `{parts, finish,
 * usage}` or `{fail, status, retryable, after}`), its requests recorded. */
function scripted(replies, chunk) {
  const response = (reply) => {
    if (typeof reply === "string") return reply;
    if ("fail" in reply) return ScriptedModel.fail(reply.fail, { after: "after" in reply ? response(reply.after) : undefined, status: reply.status ?? undefined, retryable: reply.retryable ?? false });
    const parts = reply.parts.map((p) => (typeof p === "string" ? p : ScriptedModel.call(p.call, p.args)));
    return ScriptedModel.reply(...parts, { finish: reply.finish ?? null, usage: reply.usage ?? null });
  };
  const provider = new ScriptedModel(replies.map(response), { chunkSize: chunk });
  return { provider, requests: provider.requests };
}

/** The runtime's offline model, answering from the contract (its requests recorded). */
function offline(chunk) {
  const provider = new OfflineModel({ chunkSize: chunk });
  return { provider, requests: provider.requests };
}

class ToolFailure extends Error {
  name = "ToolFailure";
}

/** A scenario's `mcp_servers` (`{"Files": ["mcp_server.py", "files"]}`): each named server of
 * the IR launched as that script of tests/mcptools with its arguments, by the project's Python
 * (the IR gets this machine's paths, and its hash again). */
function withMcpServers(ir, servers) {
  if (!servers) return ir;
  const doc = structuredClone(ir);
  for (const [name, [script, ...args]] of Object.entries(servers))
    doc.mcp[name] = { command: PYTHON, args: [join(root, "..", "tests", "mcptools", script), ...args], env: doc.mcp[name].env ?? {} };
  doc.hash = irHash(doc);
  return doc;
}

async function scenario(ir, sc, chunk) {
  ir = withMcpServers(ir, sc.mcp_servers);
  const { provider, requests } = sc.model === "offline" ? offline(chunk) : scripted(sc.replies, chunk);
  const tools = Object.fromEntries(
    Object.entries(sc.tools ?? {}).map(([name, b]) => [
      name,
      async () => {
        if ("raise" in b) throw new ToolFailure(b.raise);
        return b.return;
      },
    ]),
  );
  const ends = [];
  const config = { provider, context: sc.context ?? { name: "Ama" }, tools, protocol: sc.protocol ?? "blocks", persona: sc.persona ?? null, ...(sc.config ?? {}) };
  // "approvals": the approver's answers and the resumes (conformance/gen_approvals.py).
  const gated = sc.approvals ?? null;
  const asked = [];
  if (gated?.approver != null) config.approver = approver(gated.approver, asked);
  const middleware = [];
  if (sc.llm_end) middleware.push({ onLLMEnd: (response) => void ends.push(structuredClone(response)) });
  const seen = {};
  const guards = (sc.guards ?? []).map((spec) => seer(spec, seen));
  for (const { spec, guard } of guards) {
    if (spec.kind !== "middleware") continue;
    middleware.push({ name: spec.name, onIntent: (name, value) => guard(name, value), ...("target" in spec ? { target: spec.target } : {}) });
  }
  // `memory`: recall and ingestion over a real SQLite file (conformance_memory.mjs).
  const memory = sc.memory ? new MemoryScenario(sc.memory) : null;
  if (memory) {
    config.memory = memory.config();
    middleware.push(memory.middleware());
    await memory.seed();
  }
  if (middleware.length) config.middleware = middleware;
  const recorder = sc.trace ? traceRecorder() : null; // the OpenTelemetry spans (trace_tree.mjs)
  if (recorder) config.tracerProvider = recorder.provider;
  let agent;
  try {
    agent = createAgent(ir, config, { irHash: ir.hash, compilerVersion: ir.compiler_version, irVersion: ir.ir_version });
  } catch (error) {
    if (!memory || !(error instanceof AuwgentError)) throw error; // a refused memory config
    memory.output();
    return normal({ raised: { error: error.name, message: error.message } });
  }
  memory?.prepare(agent);
  const intents = [];
  agent.onIntent((name, value, who) => void intents.push({ name, agent: who, value: structuredClone(value) }));
  for (const { spec, guard } of guards) if (spec.kind === "handler") agent.onIntent(guard);
  if (sc.handler_raises)
    agent.onIntent(function guard(name) {
      if (name === sc.handler_raises) throw new ToolFailure("guard down");
    });
  if (sc.guard_returns)
    agent.onIntent(function guard(name) {
      return name === sc.guard_returns.on ? structuredClone(sc.guard_returns.value) : undefined;
    });
  let session = sc.session ? structuredClone(sc.session) : null;
  // A stored session edited by hand: its top frame claims what the scenario says.
  if (session && sc.tamper) Object.assign(session.stack.at(-1), sc.tamper);
  let raised = null;
  try {
    for (const text of sc.inputs) {
      session = await agent.run(text, { session, ...(memory ? memory.runOptions() : {}) });
      if (memory) await agent.drain();
    }
  } catch (error) {
    // What run refuses before anything runs (a bad session).
    if (!(error instanceof AuwgentError)) throw error;
    raised = { error: error.name, message: error.message };
  }
  if (gated !== null && raised === null) [session, raised] = await resumeAll(agent, session, gated.resume ?? [], gated.edit ?? []);
  await agent.close(); // stops the MCP servers it launched
  const out = { intents, requests: requests.map((request) => buildChatBody(request)), session };
  if (raised) out.raised = raised;
  if (sc.llm_end) out.llm_end = ends;
  if (guards.length) out.seen = seen; // what each guard was shown, in order
  if (recorder) out.spans = recorder.tree(); // ids and times left out
  if (memory) {
    out.memory = memory.output();
    return normal(normalized(MemoryScenario.normal(out), sc.normalize ?? []));
  }
  if (gated !== null) return normal(normalized(normalIds({ ...out, asked }), sc.normalize ?? []));
  return normal(normalized(out, sc.normalize ?? []));
}

/** A scenario's optional `normalize`: `[[pattern, replacement], ...]` applied to its output's
 * JSON text (code mode's limits name measured numbers). */
function normalized(out, rules) {
  if (!rules.length) return out;
  let text = JSON.stringify(out);
  for (const [pattern, replacement] of rules) text = text.replace(new RegExp(pattern, "g"), replacement);
  return JSON.parse(text);
}

/** A context vector through src/budget.ts (the same rules as runtime/context_budget.py). */
function contextVector(v) {
  if (v.kind === "limits") {
    const { contextWindow, maxOutputTokens, budget } = limitsFor(v.model);
    return { contextWindow, maxOutputTokens, budget };
  }
  if (v.kind === "estimate") {
    const limits = limitsFor(v.model);
    return {
      zones: rawEstimate(limits, v.system, v.messages, v.functions),
      total: estimateRequest(limits, v.system, v.messages, v.functions, v.factor),
    };
  }
  if (v.kind === "cut") return cut(v.text, v.limit, v.ref, v.offset);
  return JSON.parse(JSON.stringify(compactView(v.segments, v.refs, v.record)));
}

/** A scenario's guard: it notes every intent it is shown (`name` or `name type`) in
 * `seen[spec.name]` and, on the intent `spec.on`, returns `spec.returns` or throws `spec.raises`. */
function seer(spec, seen) {
  const notes = (seen[spec.name] ??= []);
  const guard = (name, value) => {
    const kind = value && typeof value === "object" ? value.type : undefined;
    notes.push(typeof kind === "string" ? `${name} ${kind}` : name);
    if (name !== spec.on || ("only" in spec && kind !== spec.only)) return undefined; // "only": the one call type it acts on
    if ("raises" in spec) throw new ToolFailure(spec.raises);
    return structuredClone(spec.returns);
  };
  Object.defineProperty(guard, "name", { value: spec.name });
  return { spec, guard };
}

async function run(group, v) {
  if (group === "schema") {
    const coerced = coerce(v.value, v.type, v.types);
    return { coerced, errors: validate(coerced, v.type, v.types) };
  }
  if (group === "expr") {
    const value = evaluate(v.expr, v.scope, v.ctx, false);
    return { value, rendered: renderValue(value), truthy: truthy(value) };
  }
  if (group === "prompts") {
    const agent = v.ir.agents[v.ir.root];
    return renderPrompt(v.ir, agent, agent.configs.default, v.context);
  }
  if (group === "blocks") return v.chunkings.map((chunk) => decode(v.contract, v.text, chunk));
  if (group === "engine") return scenario(v.ir, v.scenario, v.chunk_size);
  if (group === "taint") return evaluateTaint(v.case);
  if (group === "context") return contextVector(v);
  if (group === "test_blocks") return testBlock(v);
  throw new Error(`unknown group ${group}`);
}

/** A DSL test block (`auwgent test --runtime ts`, src/testing.ts): its problems and intents. */
async function testBlock(v) {
  const outcome = await runTest(v.spec, { ir: v.ir, floats: v.floats }, ".");
  return normal({ problems: outcome.problems, intents: outcome.intents });
}

test("the vectors are exactly the manifest", () => {
  assert.deepEqual(Object.keys(manifest), GROUPS);
  const ran = Object.fromEntries(GROUPS.map((g) => [g, vectors.filter((x) => x.group === g).map((x) => x.vector.id)]));
  assert.deepEqual(ran, manifest);
  assert.ok(vectors.length >= 150);
});

let passed = 0;
for (const { group, vector } of vectors) {
  test(vector.id, async () => {
    assert.deepEqual(await run(group, vector), vector.expected);
    passed++;
  });
}

test.after(() => console.log(`conformance: ${passed} of ${vectors.length} vectors passed in the TypeScript runtime`));
