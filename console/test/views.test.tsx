import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";
import { render } from "preact";
import { click, installDom, settle, type } from "./dom";
import { Timeline } from "../src/timeline";
import type { SessionSummary } from "../src/types";
import { ApprovalsView, type Decision } from "../src/views/approvals";
import { ContextForm, type Values } from "../src/views/context";
import { traces, Waterfall } from "../src/views/runs";
import { TestsView } from "../src/views/tests";
import { summary, TimelineView } from "../src/views/timeline";

let root: HTMLElement;
beforeEach(() => {
  installDom();
  root = document.createElement("div");
  document.body.appendChild(root);
});

test("the context form has a field per declared key, typed by the key's type", async () => {
  let values: Values = {};
  const fields = [
    { name: "customer", type: { kind: "string" }, optional: false, description: "who asks" },
    { name: "vip", type: { kind: "boolean" }, optional: false, description: null },
    { name: "limit", type: { kind: "number" }, optional: true, description: null },
    { name: "tier", type: { kind: "union", variants: [{ kind: "literal", value: "gold" }, { kind: "literal", value: "silver" }] }, optional: true, description: null },
    { name: "tags", type: { kind: "array", items: { kind: "string" } }, optional: true, description: null },
  ];
  const draw = () => render(<ContextForm fields={fields} values={values} onChange={(v) => { values = v; draw(); }} />, root);
  draw();
  type(root.querySelector("#ctx-customer"), "Ada");
  click(root.querySelector("#ctx-vip"));
  type(root.querySelector("#ctx-limit"), "3");
  type(root.querySelector("#ctx-tier"), '"gold"', "change");
  type(root.querySelector("#ctx-tags"), '["a"]', "change");
  await settle();
  assert.deepEqual(values, { customer: "Ada", vip: true, limit: 3, tier: "gold", tags: ["a"] });
  assert.match(root.textContent ?? "", /customer \* who asks/);
  assert.equal(root.querySelectorAll("option").length, 3);
});

const session = (pending: string[]): SessionSummary => ({
  id: "c-1", agent: "Desk", turns: 1, status: "awaiting_approval", pending: pending.length, first_input: "refund it",
  pending_approvals: pending.map((id) => ({ id, kind: "tool", name: "refund_order", args: { order: "A-17", amount: 12 }, agent: "Desk" })),
});

test("approvals resume a conversation once each pending request is decided; defer holds it", async () => {
  const calls: [string, Record<string, Decision>][] = [];
  render(<ApprovalsView sessions={[session(["r1", "r2"])]} onDecide={(c, d) => calls.push([c, d])} />, root);
  assert.match(root.textContent ?? "", /"order": "A-17"/);
  const buttons = (id: string) => root.querySelectorAll(`[data-request="${id}"] button`);
  click(buttons("r1")[0]); // approve
  await settle();
  click(buttons("r2")[2]); // defer
  await settle();
  assert.deepEqual(calls, []);
  assert.match(root.querySelector('[data-request="r2"]')?.textContent ?? "", /deferred/);
  type(root.querySelector('[data-request="r2"] input'), "too much");
  await settle();
  click(buttons("r2")[1]); // deny, with the reason
  await settle();
  assert.deepEqual(calls, [["c-1", { r1: { approved: true }, r2: { approved: false, reason: "too much" } }]]);
});

test("no pending request: the inbox says so", () => {
  render(<ApprovalsView sessions={[{ ...session([]), status: "complete" }]} onDecide={() => {}} />, root);
  assert.match(root.textContent ?? "", /No call is waiting/);
});

test("the timeline marks partial items and shows their text so far", () => {
  const t = new Timeline();
  t.startRun();
  t.add("partial", { name: "response_text", agent: "Desk", value: { mode: "text", segment: 0, delta: "Hel" } });
  t.add("tool_call", { type: "lookup_order", args: { order: "A-17" } });
  render(<TimelineView items={t.items} />, root);
  const items = root.querySelectorAll("li.intent");
  assert.equal(items.length, 2);
  assert.ok(items[0].classList.contains("partial"));
  assert.match(items[0].textContent ?? "", /response_text.*streaming.*Hel/s);
  assert.match(items[1].textContent ?? "", /lookup_order\(order="A-17"\)/);
  assert.equal(items[1].getAttribute("data-intent"), "tool_call");
  assert.match(root.textContent ?? "", /run 1/);
});

test("the waterfall places each span on the run's time axis, nested by parent", () => {
  const span = (id: string, parent: string | null, start: number, end: number) =>
    ({ name: id, id, parent, start, end, status: "unset", attributes: {} });
  render(<Waterfall spans={[span("run", null, 0, 1_000_000), span("chat", "run", 250_000, 750_000)]} />, root);
  const bars = root.querySelectorAll<HTMLElement>(".span-bar");
  assert.equal(bars[1].style.left, "25%");
  assert.equal(bars[1].style.width, "50%");
  assert.equal(root.querySelectorAll<HTMLElement>(".span-name")[1].style.paddingLeft, "1em");
  assert.match(root.textContent ?? "", /0\.5 ms/);
});

test("test results: the summary, and the report of a failure", () => {
  const result = {
    ok: true, problems: [], seconds: 0.1,
    results: [
      { name: "ok one", file: "main.agent", line: 3, passed: true, problems: [], seconds: 0, report: null },
      { name: "bad one", file: "main.agent", line: 9, passed: false, problems: ["x"], seconds: 0, report: "expected: x" },
    ],
  };
  render(<TestsView result={result} running={false} onRun={() => {}} />, root);
  assert.match(root.querySelector(".summary")?.textContent ?? "", /1 passed, 1 failed/);
  assert.match(root.querySelector(".fail")?.textContent ?? "", /FAIL.*bad one.*expected: x/s);
});

test("a resumed turn's spans are two traces, each on its own axis", () => {
  const span = (id: string, parent: string | null, start: number) =>
    ({ name: id, id, parent, start, end: start + 10, status: "unset", attributes: {} });
  const spans = [span("run1", null, 0), span("chat1", "run1", 1), span("tool1", "chat1", 2), span("run2", null, 900), span("chat2", "run2", 901)];
  assert.deepEqual(traces(spans).map((group) => group.map((s) => s.id)), [["run1", "chat1", "tool1"], ["run2", "chat2"]]);
});

test("each built-in intent has its own one-line summary", () => {
  const line = (name: string, value: unknown) =>
    summary({ key: 1, name, agent: "Desk", value, partial: false, text: "", run: 1 });
  assert.equal(line("helper_call", { type: "Analyst", args: { topic: "sales" } }), 'Analyst(topic="sales")');
  assert.equal(line("workflow_result", { name: "check", result: "ok" }), 'check → "ok"');
  assert.equal(line("tool_skipped", { type: "delete", args: {} }), "delete() skipped");
  assert.equal(line("response_schema", { type: "Order", response: { id: 1 } }), 'Order {"id":1}');
  assert.equal(line("handoff_complete", { summary: "done" }), "the helper hands the conversation back: done");
  assert.equal(line("approval_result", { approved: false, reason: "too much" }), "denied: too much");
  assert.equal(line("error", { message: "boom" }), "boom");
  assert.equal(line("Planning", { step: "one" }), '{"step":"one"}');
});
