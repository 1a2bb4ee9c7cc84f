/** Per run: tokens, model calls and time, the trace as a waterfall, the requests as sent. */

import type { RunStats } from "../timeline";
import type { Span, TurnRecord } from "../types";

export function RunsView(props: {
  runs: RunStats[];
  selected: number | null;
  record: TurnRecord | null;
  tracing: boolean;
  onSelect: (index: number) => void;
}) {
  if (props.runs.length === 0) return <p class="muted">No run in this conversation yet.</p>;
  return (
    <div class="runs">
      <table>
        <thead>
          <tr><th>run</th><th>input</th><th>status</th><th>model calls</th><th>tokens in / out / total</th><th>time</th></tr>
        </thead>
        <tbody>
          {props.runs.map((run, i) => (
            <tr key={i} class={i === props.selected ? "current" : ""}>
              <td><button type="button" onClick={() => props.onSelect(i)} aria-pressed={i === props.selected}>#{i + 1}</button></td>
              <td class="clip">{run.resumed ? <span class="badge">resumed</span> : null} {run.input}</td>
              <td>{run.status}</td>
              <td>{run.modelCalls}</td>
              <td>{run.inputTokens} / {run.outputTokens} / {run.totalTokens}</td>
              <td>{run.ms === null ? "" : `${Math.round(run.ms)} ms`}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {props.record === null ? null : <Record record={props.record} tracing={props.tracing} />}
      {props.record === null ? null : <p class="muted">The trace and the requests are the turn's: a turn resumed after approvals has one trace per run.</p>}
    </div>
  );
}

function Record(props: { record: TurnRecord; tracing: boolean }) {
  const { record } = props;
  return (
    <div>
      <h3>Trace</h3>
      {record.spans.length > 0 ? traces(record.spans).map((spans, i) => <Waterfall key={i} spans={spans} />) : (
        <p class="muted">{props.tracing ? "No span recorded for this run." : 'Tracing needs OpenTelemetry: pip install "auwgent[otel]".'}</p>
      )}
      <h3>Requests to the model, as sent</h3>
      {record.requests.length === 0 ? <p class="muted">No request recorded for this run.</p> : null}
      {record.requests.map((request, i) => (
        <details key={i} class="request-sent">
          <summary>{request.kind === "http" ? `${String(request.method)} ${String(request.url)}` : `model request ${i + 1} (the offline model's input)`}</summary>
          {request.kind === "http" ? <pre>{JSON.stringify(request, null, 2)}</pre> : <ModelRequest body={request.body as Body} />}
        </details>
      ))}
    </div>
  );
}

type Body = { system: string; messages: { role: string; content: string }[]; [key: string]: unknown };

/** The runtime's request to an in-process model: the system prompt and the messages as
 * text, the rest (functions, response schema, options) as JSON. */
function ModelRequest(props: { body: Body }) {
  const { system, messages, ...rest } = props.body;
  return (
    <div class="model-request">
      <h4>system</h4>
      <pre>{system}</pre>
      <h4>messages</h4>
      <ol class="sent-messages">
        {messages.map((m, i) => <li key={i}><strong>{m.role}</strong><pre>{m.content || JSON.stringify(m)}</pre></li>)}
      </ol>
      <h4>the rest</h4>
      <pre>{JSON.stringify(rest, null, 2)}</pre>
    </div>
  );
}

/** The spans grouped by the trace they belong to (a root span and its descendants), in
 * start order: a turn resumed after approvals has one trace per run, each on its own axis. */
export function traces(spans: Span[]): Span[][] {
  const byId = new Map(spans.map((s) => [s.id, s]));
  const rootOf = (span: Span): string => {
    const parent = span.parent === null ? undefined : byId.get(span.parent);
    return parent === undefined ? span.id : rootOf(parent);
  };
  const groups = new Map<string, Span[]>();
  for (const span of spans) {
    const root = rootOf(span);
    groups.set(root, [...(groups.get(root) ?? []), span]);
  }
  return [...groups.values()];
}

/** Span depth from the parent links (the root at 0). */
function depths(spans: Span[]): Map<string, number> {
  const byId = new Map(spans.map((s) => [s.id, s]));
  const depth = new Map<string, number>();
  const of = (span: Span): number => {
    const known = depth.get(span.id);
    if (known !== undefined) return known;
    const parent = span.parent === null ? undefined : byId.get(span.parent);
    const d = parent === undefined ? 0 : of(parent) + 1;
    depth.set(span.id, d);
    return d;
  };
  spans.forEach(of);
  return depth;
}

export function Waterfall(props: { spans: Span[] }) {
  const { spans } = props;
  const start = Math.min(...spans.map((s) => s.start));
  const end = Math.max(...spans.map((s) => s.end));
  const total = Math.max(end - start, 1);
  const depth = depths(spans);
  return (
    <ol class="waterfall" aria-label="trace waterfall">
      {spans.map((span) => {
        const left = ((span.start - start) / total) * 100;
        const width = Math.max(((span.end - span.start) / total) * 100, 0.5);
        const ms = (span.end - span.start) / 1e6;
        return (
          <li key={span.id} class={`span ${span.status}`} title={JSON.stringify(span.attributes, null, 2)}>
            <span class="span-name" style={{ paddingLeft: `${(depth.get(span.id) ?? 0) * 1}em` }}>{span.name}</span>
            <span class="span-track">
              <span class="span-bar" style={{ left: `${left}%`, width: `${width}%` }} />
            </span>
            <span class="span-ms">{ms.toFixed(1)} ms</span>
          </li>
        );
      })}
    </ol>
  );
}
