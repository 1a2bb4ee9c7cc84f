// The context budget in the TypeScript runtime (docs/context.md): tool results capped with a
// marker and kept, `recall`, `drop` / `clearToolResults` / `summarize` compaction of earlier turns, and a
// request that cannot fit never sent. The shared rules are pinned by conformance/context.json.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createAgent, estimateRequest, limitsFor, recall } from "../dist/index.js";
import { compileIr } from "./fakes.mjs";

const HUGE = Array.from({ length: 80000 }, (_, i) => `line ${String(i).padStart(7, "0")} of the export\n`).join("");

const source = (history) => `
model Tiny {
    provider: openai("gpt-4o-mini")
}
model Small {
    provider: openai("gpt-4o-mini")
    contextWindow: 12000
    maxOutputTokens: 1000
}
agent Main {
    default config {
        model: Small
        prompt: "You answer briefly."
        ${history}
    }
    tool export(table: string): string @desc "Exports a table" @maxOutput(chars = 16000)
}
`;

/** A model that exports in turn 3 and recalls in turn 150; every request is kept. */
function model() {
  const requests = [];
  let calls = 0;
  return {
    requests,
    provider: {
      name: "scripted",
      async *stream(request) {
        requests.push(request);
        if (request.system.startsWith("You compress")) {
          yield { type: "text", text: "Summary: the user asked numbered questions; turn 3 exported a table." };
          yield { type: "usage", inputTokens: 4000, outputTokens: 20 };
          yield { type: "finish", reason: "stop" };
          return;
        }
        const last = request.messages.at(-1);
        const users = request.messages.filter((m) => m.role === "user");
        const asked = users.at(-1)?.content ?? "";
        if (last.role === "tool") yield { type: "text", text: "Done, noted." };
        else if (asked.startsWith("turn 3:") || asked.startsWith("turn 150:")) {
          const [name, args] = asked.startsWith("turn 3:") ? ["tool__export", { table: "orders" }] : ["tool__recall", { id: "r1", offset: 16000 }];
          yield { type: "tool_call_delta", index: 0, id: `call_${++calls}`, name, arguments: JSON.stringify(args) };
          yield { type: "finish", reason: "tool_calls" };
          return;
        } else yield { type: "text", text: `Answer to ${asked.slice(0, 12)} is short and done.` };
        yield { type: "finish", reason: "stop" };
      },
      async embed() {
        return [];
      },
    },
  };
}

async function converse(history, turns = 200) {
  const ir = compileIr(source(history));
  const { provider, requests } = model();
  const agent = createAgent(ir, { provider, protocol: "native", tools: { export: async () => HUGE } }, { irHash: ir.hash, compilerVersion: ir.compiler_version, irVersion: ir.ir_version });
  const seen = [];
  agent.onIntent((name, value) => void seen.push([name, value]));
  let session = null;
  for (let n = 0; n < turns; n++) {
    session = await agent.run(`turn ${n}: what is item ${n}?`, { session });
    assert.equal(session.turns.at(-1).status, "complete", session.turns.at(-1).error);
  }
  return { requests, session, seen };
}

const limits = limitsFor({ provider: "openai", model: "gpt-4o-mini", contextWindow: 12000, maxOutputTokens: 1000 });

for (const policy of ["drop", "clearToolResults"]) {
  test(`200 turns with a 2 MB result stay within the budget (${policy})`, async () => {
    const { requests, session, seen } = await converse(`history: { keepLast: 6, compact: "${policy}", trigger: 0.5 }`);
    const wire = requests.map((r) => JSON.stringify(r.messages));
    for (const r of requests) assert.ok(estimateRequest(limits, r.system, r.messages, r.functions) <= limits.budget);
    assert.ok(!wire.some((w) => w.includes(HUGE)));
    const head = JSON.stringify(HUGE.slice(0, 16000)).slice(1, -1);
    const shown = wire.flatMap((w, i) => (w.includes(head) ? [i] : []));
    assert.ok(shown.length > 0);
    assert.deepEqual(shown, Array.from({ length: shown.length }, (_, k) => shown[0] + k));
    const compactions = session.context.compactions;
    assert.ok(compactions.length >= 1 && compactions.every((c) => c.policy === policy));
    assert.equal(seen.filter(([name]) => name === "context_compacted").length, compactions.length);
    const later = wire.slice(shown.at(-1) + 1);
    const stub = "an earlier tool result of";
    assert.equal(later.every((w) => w.includes(stub)), policy === "clearToolResults");
    assert.equal(recall(session, "r1"), HUGE);
    const recalled = requests.find((r) => r.messages.at(-1).role === "tool" && r.messages.at(-2).tool_calls?.[0]?.name === "tool__recall");
    assert.ok(recalled.messages.at(-1).content.startsWith(HUGE.slice(16000, 16100)));
    assert.match(recalled.messages.at(-1).content, /offset=32000\) returns the rest\]$/);
  });
}

test("200 turns under summarize: one summary request per compaction, counted, its summary shown", async () => {
  const { requests, session } = await converse('history: { keepLast: 6, compact: "summarize", summarizeWith: Tiny, trigger: 0.5 }');
  const summaries = requests.filter((r) => r.system.startsWith("You compress"));
  const answers = requests.filter((r) => !r.system.startsWith("You compress"));
  for (const r of answers) assert.ok(estimateRequest(limits, r.system, r.messages, r.functions) <= limits.budget);
  const compactions = session.context.compactions;
  assert.ok(compactions.length >= 1 && compactions.every((c) => c.policy === "summarize" && c.summary.startsWith("Summary:")));
  assert.equal(summaries.length, compactions.length);
  // The summarizer reads a transcript, tool results as stubs (never the 2 MB export).
  assert.ok(summaries.every((r) => r.messages.length === 1 && r.model === "gpt-4o-mini" && !r.messages[0].content.includes(HUGE.slice(0, 16000))));
  assert.match(summaries[0].messages[0].content, /^\[user\] turn 0: what is item 0\?\n\[assistant\] /);
  const calls = session.turns.flatMap((t) => t.model_calls).filter((c) => c.purpose === "summarize");
  assert.equal(calls.length, compactions.length);
  assert.ok(calls.every((c) => c.model === "openai:gpt-4o-mini" && c.usage.input_tokens === 4000 && c.usage.total_tokens === 4020));
  assert.ok(JSON.stringify(answers.at(-1).messages).includes("[auwgent: a summary of the first"));
  assert.equal(session.turns.length, 200); // the turns themselves are kept whole
});

test("a request that cannot fit is not sent", async () => {
  const ir = compileIr(source(""));
  const { provider, requests } = model();
  const agent = createAgent(ir, { provider, protocol: "native" }, { irHash: ir.hash, compilerVersion: ir.compiler_version, irVersion: ir.ir_version });
  const session = await agent.run("y".repeat(70000));
  const turn = session.turns.at(-1);
  assert.equal(turn.status, "error");
  assert.match(turn.error, /^context window exceeded: .* over the 11000 it may use .*by zone: system \d+, tools \d+, history 0, turn \d+; the config declares no history compaction; nothing was sent$/);
  assert.equal(requests.length, 0);
});
