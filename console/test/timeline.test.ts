import assert from "node:assert/strict";
import { test } from "node:test";
import { addRun, answerOf, runStats, Timeline } from "../src/timeline";
import type { Turn } from "../src/types";

const text = (delta: string, segment = 0) => ({
  name: "response_text", agent: "Desk",
  value: { partial: true, complete: false, mode: "text", segment, delta },
});

test("text partials add their deltas up until the final intent replaces them", () => {
  const t = new Timeline();
  t.startRun();
  t.add("partial", text("It is "));
  t.add("partial", text("28C"));
  assert.equal(t.items.length, 1);
  assert.equal(t.items[0].text, "It is 28C");
  assert.equal(t.items[0].partial, true);
  t.add("response_text", { text: "It is 28C." });
  assert.equal(t.items.length, 1);
  assert.deepEqual(t.items[0].value, { text: "It is 28C." });
  assert.equal(t.items[0].partial, false);
  assert.equal(t.items[0].agent, "Desk");
});

test("a structured partial shows its latest snapshot; a final without partials is new", () => {
  const t = new Timeline();
  t.startRun();
  const call = (snapshot: unknown) => ({ name: "tool_call", agent: "Desk", value: { mode: "structured", segment: 0, snapshot } });
  t.add("partial", call({ type: "lookup_order", args: {} }));
  t.add("partial", call({ type: "lookup_order", args: { order: "A-17" } }));
  assert.deepEqual(t.items[0].value, { type: "lookup_order", args: { order: "A-17" } });
  t.add("tool_call", { type: "lookup_order", args: { order: "A-17" } });
  t.add("tool_result", { name: "lookup_order", result: "shipped" });
  assert.deepEqual(t.items.map((i) => [i.name, i.partial, i.run]), [["tool_call", false, 1], ["tool_result", false, 1]]);
  assert.equal(t.add("session", {}), false);
});

const turn: Turn = {
  id: "t1", input: { text: "hi" }, agent: "Desk", status: "complete", error: null, output: null,
  intents: [{ name: "tool_call", value: { type: "x", args: {} } }, { name: "response_text", value: { text: "Hello." } }],
  model_calls: [
    { finish_reason: "stop", model: "m", usage: { input_tokens: 10, output_tokens: 3, total_tokens: 13 } },
    { finish_reason: "stop", model: "m", usage: null },
  ],
};

test("a stored session's timeline has one run per turn; stats add the model calls up", () => {
  const t = Timeline.of({ agent: "Desk", turns: [turn, { ...turn, id: "t2" }] });
  assert.deepEqual(t.items.map((i) => i.run), [1, 1, 2, 2]);
  assert.deepEqual(runStats(turn, 12), {
    turn: "t1", input: "hi", status: "complete", modelCalls: 2, inputTokens: 10, outputTokens: 3, totalTokens: 13, ms: 12, resumed: false,
  });
  assert.equal(answerOf(turn), "Hello.");
  assert.equal(answerOf({ ...turn, intents: [], status: "awaiting_approval" }), "(waiting for approval)");
});

test("a resumed turn is a run of its own, counting only what it added", () => {
  const paused = { ...turn, model_calls: turn.model_calls.slice(0, 1), status: "awaiting_approval" };
  const runs = addRun(addRun([], paused, 5), turn, 7);
  assert.deepEqual(runs.map((r) => [r.turn, r.resumed, r.modelCalls, r.totalTokens, r.ms]), [
    ["t1", false, 1, 13, 5],
    ["t1", true, 1, 0, 7],
  ]);
});
