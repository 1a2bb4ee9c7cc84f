/** The live timeline of the conversation's intents. */

import type { Item } from "../timeline";

const KINDS: Record<string, string> = {
  response_text: "text",
  tool_call: "call",
  workflow_call: "call",
  helper_call: "call",
  tool_result: "result",
  workflow_result: "result",
  helper_result: "result",
  tool_error: "error",
  error: "error",
  approval_request: "approval",
  approval_result: "approval",
};

function body(item: Item): string {
  if (item.partial && item.text !== "") return item.text;
  const value = item.value as Record<string, unknown> | null;
  if (item.name === "response_text" && value !== null && typeof value.text === "string") return value.text;
  return JSON.stringify(value, null, 2) ?? "";
}

export function TimelineView(props: { items: Item[] }) {
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
            <pre>{body(item)}</pre>
          </li>,
        ];
      })}
    </ol>
  );
}
