// History compaction by `summarize` (docs/context.md), as the Python runtime's
// context_budget.py has it: the covered turns (tool results as stubs, the previous summary
// first) go to the `summarizeWith` model (else the config's) in one request of its own, inside
// the round that needed the room. That request counts like any other model call: on the
// turn's `model_calls` with `"purpose": "summarize"`, toward `budget.requests` and
// `budget.tokens`, with its own `chat` span when tracing is on. It fails closed: a summary
// that cannot be made (too big to send, the request fails, an empty answer) ends the round
// with an error and nothing is compacted.
import { cleared, ContextWindowError, estimateRequest, limitsFor, summaryMessage, type CompactionRecord } from "./budget.js";
import { providerKey } from "./config.js";
import type { Message, ModelRequest, StreamEvent } from "./providers/base.js";
import type { ModelCall, Usage } from "./session.js";
import type { RunTrace, SpanLike } from "./tracing.js";

/** The system prompt of the summary request (the Python runtime's words). */
export const SUMMARIZE_PROMPT =
  "You compress conversations. Summarize the conversation below for the assistant that continues it: keep facts, names, numbers, decisions, what the user asked for and what is still open. Answer with the summary only.";

type Model = Record<string, any>;

/** What the summary request needs from the run (src/engine.ts's Run). */
export interface SummaryHost {
  core: { provider(model: any): { stream(request: ModelRequest): AsyncIterable<StreamEvent> } };
  turn: { model_calls: ModelCall[] } | null;
  trace: RunTrace | null;
  /** Counts a model call toward the run's budget (requests and tokens). */
  spend(requests: number, tokens: number): void;
}

/** Messages as plain text for a summarizer (roles in brackets, calls by name). */
export function transcript(messages: readonly Message[]): string {
  return messages
    .map((m) => `[${m.role}] ${m.content}` + (m.tool_calls ?? []).map((c) => ` [calls ${c.name}(${c.arguments})]`).join(""))
    .join("\n");
}

/** What a new summary covers: the previous summary (when the last record is one), then the
 * turns after it, with their tool results as stubs naming their recall ids. */
export function toSummarize(segments: readonly (readonly Message[])[], refs: readonly (readonly (string | null)[])[], record: CompactionRecord | null): Message[] {
  let start = 0;
  const out: Message[] = [];
  if (record !== null && record.policy === "summarize") {
    start = Number(record.turns);
    out.push(summaryMessage(String(record.summary), start));
  }
  for (let index = start; index < segments.length; index++) out.push(...cleared(segments[index]!, refs[index] ?? []));
  return out;
}

/** One request to `model` for the summary of `old`; its text, or a ContextWindowError. */
export async function summarize(host: SummaryHost, agentName: string, model: Model, old: readonly Message[]): Promise<string> {
  const name = String(model.model);
  const request: ModelRequest = {
    model: name,
    system: SUMMARIZE_PROMPT,
    messages: [{ role: "user", content: transcript(old) }],
    functions: [],
    responseSchema: null,
    options: model.options ?? {},
    stream: true,
  };
  const limits = limitsFor(model);
  const size = estimateRequest(limits, request.system, request.messages);
  if (size > limits.budget)
    throw new ContextWindowError(`history.compact "summarize": the turns to summarize need about ${size} tokens, over the ${limits.budget} ${name} may use; nothing was sent`);
  host.spend(1, 0);
  const span: SpanLike | null = host.trace === null ? null : host.trace.chatStart(agentName, providerKey(model as never), name);
  const chunks: string[] = [];
  let usage: Usage | null = null;
  try {
    for await (const event of host.core.provider(model).stream(request)) {
      if (event.type === "text") chunks.push(event.text);
      else if (event.type === "usage") usage = tokenUsage(event);
    }
  } catch (error) {
    if (span !== null) host.trace!.chatEnd(span, name, null, null, error);
    throw error;
  }
  if (span !== null) host.trace!.chatEnd(span, name, usage, "stop", null);
  host.spend(0, usage?.total_tokens ?? 0);
  host.turn?.model_calls.push({ model: `${providerKey(model as never)}:${name}`, finish_reason: null, usage, purpose: "summarize" });
  const text = chunks.join("").trim();
  if (!text) throw new ContextWindowError(`history.compact "summarize": ${name} answered with an empty summary`);
  return text;
}

function tokenUsage(event: Extract<StreamEvent, { type: "usage" }>): Usage {
  const given = event.inputTokens ?? 0;
  const made = event.outputTokens ?? 0;
  return { input_tokens: given, output_tokens: made, total_tokens: given + made };
}
