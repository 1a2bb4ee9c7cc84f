// The spans of a run as a tree both runtimes can compare (the `trace` key of an engine
// scenario; the Python side is src/auwgent/testing/trace_tree.py). A tracer provider of
// @opentelemetry/sdk-trace-base with its InMemorySpanExporter and a processor that notes the
// order spans start and end in (`order`); ids and times are left out.
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

const CODES = { 0: "UNSET", 1: "OK", 2: "ERROR" };

export function traceRecorder() {
  const exporter = new InMemorySpanExporter();
  const started = [];
  const order = []; // "start <name>" and "end <name>", as they happen
  const starts = {
    onStart: (span) => void (started.push(span), order.push(`start ${span.name}`)),
    onEnd: (span) => void order.push(`end ${span.name}`),
    forceFlush: async () => {},
    shutdown: async () => {},
  };
  const provider = new BasicTracerProvider({ spanProcessors: [starts, new SimpleSpanProcessor(exporter)] });
  const tree = () => {
    const ended = new Set(exporter.getFinishedSpans().map((s) => s.spanContext().spanId));
    const nodes = new Map();
    const roots = [];
    for (const span of started) {
      const id = span.spanContext().spanId;
      const node = nodeOf(span, ended.has(id));
      nodes.set(id, node);
      const parent = span.parentSpanContext ? nodes.get(span.parentSpanContext.spanId) : undefined;
      (parent ? parent.children : roots).push(node);
    }
    return roots;
  };
  return { provider, exporter, tree, order };
}

function nodeOf(span, ended) {
  const attributes = Object.fromEntries(Object.keys(span.attributes).sort().map((key) => [key, span.attributes[key]]));
  const status = { code: CODES[span.status.code] };
  if (span.status.message) status.description = span.status.message;
  return { name: span.name, attributes, status, ended, children: [] };
}
