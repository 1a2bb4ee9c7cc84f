/** The live timeline of the conversation's intents: a one-line summary of each (a call with
 * its arguments, a result, an approval), its whole payload a click away. */

import { useEffect, useRef } from "preact/hooks";
import type { Item } from "../timeline";

const KINDS: Record<string, string> = {
  response_text: "text",
  tool_call: "call",
  workflow_call: "call",
  helper_call: "call",
  tool_result: "result",
  workflow_result: "result",
  helper_result: "result",
  tool_skipped: "error",
  tool_error: "error",
  response_schema: "text",
  handoff_complete: "result",
  error: "error",
  approval_request: "approval",
  approval_result: "approval",
};

type Value = Record<string, unknown>;

const short = (value: unknown, limit = 160): string => {
  const text = typeof value === "string" ? JSON.stringify(value) : (JSON.stringify(value) ?? "");
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
};

const args = (value: unknown): string =>
  Object.entries((value as Value | undefined) ?? {}).map(([k, v]) => `${k}=${short(v, 60)}`).join(", ");

/** The one line shown for an intent (its kind decides which fields matter). */
export function summary(item: Item): string {
  if (item.partial && item.text !== "") return item.text;
  const v = (item.value ?? {}) as Value;
  switch (item.name) {
    case "response_text":
      return String(v.text ?? "");
    case "tool_call":
    case "workflow_call":
    case "helper_call":
      return `${String(v.type ?? v.name ?? "")}(${args(v.args)})`;
    case "tool_result":
    case "workflow_result":
    case "helper_result":
      return `${String(v.name ?? "")} → ${short(v.result ?? v.output)}`;
    case "tool_skipped":
      return `${String(v.type ?? "")}(${args(v.args)}) skipped`;
    case "response_schema":
      return `${String(v.type ?? "")} ${short(v.response, 400)}`;
    case "handoff_complete":
      return `the helper hands the conversation back${v.summary ? `: ${String(v.summary)}` : ""}`;
    case "tool_error":
      return `${String(v.tool ?? v.name ?? "")}: ${String(v.message ?? "")}`;
    case "error":
      return String(v.message ?? "");
    case "approval_request":
      return `${String(v.kind ?? "")} ${String(v.name ?? "")}(${args(v.args)}) waits for a decision`;
    case "approval_result":
      return `${v.approved === true ? "approved" : "denied"}${v.reason ? `: ${String(v.reason)}` : ""}`;
    default:
      return short(item.value, 400);
  }
}

export function TimelineView(props: { items: Item[] }) {
  const end = useRef<HTMLLIElement>(null);
  useEffect(() => end.current?.scrollIntoView?.({ block: "nearest" }), [props.items]);
  if (props.items.length === 0) return <p class="muted">No intents yet: send a message.</p>;
  let run = 0;
  return (
    <ol class="timeline" aria-live="polite">
      {props.items.map((item) => {
        const divider = item.run !== run ? <li class="run-divider" key={`run-${item.run}`}>run {item.run}</li> : null;
        run = item.run;
        return [
          divider,
          <li key={item.key} class={`intent ${KINDS[item.name] ?? "custom"}${item.partial ? " partial" : ""}`}
            data-intent={item.name}>
            <div class="intent-head">
              <span class="intent-name">{item.name}</span>
              {item.agent ? <span class="muted"> {item.agent}</span> : null}
              {item.partial ? <span class="badge">streaming</span> : null}
            </div>
            <div class="intent-line">{summary(item)}</div>
            {item.partial ? null : (
              <details>
                <summary>payload</summary>
                <pre>{JSON.stringify(item.value, null, 2)}</pre>
              </details>
            )}
          </li>,
        ];
      })}
      <li ref={end} class="end" aria-hidden="true" />
    </ol>
  );
}
