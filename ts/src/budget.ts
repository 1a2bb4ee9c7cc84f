// The context budget's shared rules (docs/context.md), as src/auwgent/runtime/context_budget.py
// has them: every model's window from the one table (models.ts, generated from
// src/auwgent/ir/models.json), the token estimate of a request, the cut of an over-long tool
// result, and the view of earlier turns under a compaction record. Pinned by
// conformance/context.json.
import { MODELS } from "./models.js";
import type { FunctionSpec, Message } from "./providers/base.js";

/** The built-in tool offered to the model once a result was cut. */
export const RECALL = "recall";
/** The cap on every tool result when neither `@maxOutput` nor `maxToolOutput` is given. */
export const DEFAULT_TOOL_OUTPUT = { tokens: 10000 } as const;
/** What a non-text part (an image, a file) of a message counts, in tokens. */
export const PART_TOKENS = 1000;
const STUB_MIN_CHARS = 200;

/** One model's window and output limit (tokens) and the estimator's constants. */
export interface Limits {
  contextWindow: number;
  maxOutputTokens: number;
  charsPerToken: number;
  messageTokens: number;
  requestTokens: number;
  /** The tokens a request may use: the window less the room kept for the answer. */
  budget: number;
}

type ProviderRow = { contextWindow: number; maxOutputTokens: number; charsPerToken: number; messageTokens: number; requestTokens: number };

/** The limits of an IR model: its `contextWindow` / `maxOutputTokens` when declared, else the
 * table's longest matching prefix, else its provider's defaults (`custom` never matches). */
export function limitsFor(model: Record<string, any>): Limits {
  const provider = String(model.provider ?? "custom");
  const rows = MODELS.providers as Record<string, ProviderRow>;
  const base = rows[provider] ?? rows.custom!;
  const name = String(model.model ?? "");
  let window: number = base.contextWindow;
  let output: number = base.maxOutputTokens;
  let best = -1;
  for (const entry of MODELS.models) {
    if (provider !== "custom" && name.startsWith(entry.prefix) && entry.prefix.length > best) {
      best = entry.prefix.length;
      window = entry.contextWindow;
      output = entry.maxOutputTokens;
    }
  }
  window = Number(model.contextWindow || window);
  output = Math.min(Number(model.maxOutputTokens || output), window);
  return {
    contextWindow: window,
    maxOutputTokens: output,
    charsPerToken: base.charsPerToken,
    messageTokens: base.messageTokens,
    requestTokens: base.requestTokens,
    budget: Math.max(0, window - output),
  };
}

/** Characters as Python counts them (code points), so both runtimes estimate alike. */
function chars(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

function messageChars(message: Message): [number, number] {
  let total = chars(message.content);
  for (const call of message.tool_calls ?? []) total += chars(call.name) + chars(call.arguments);
  const parts = (message.parts ?? []).filter((p) => p.type !== "text").length;
  return [total, parts];
}

/** Python's `json.dumps(value, separators=(",", ":"))` length for plain JSON values. */
function compactJsonChars(value: unknown): number {
  return chars(JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0")));
}

/** The uncalibrated token estimate of a request, by zone (`system`, `tools`, `messages`). */
export function rawEstimate(limits: Limits, system: string, messages: readonly Message[], functions: readonly FunctionSpec[] = []): { system: number; tools: number; messages: number } {
  const cpt = limits.charsPerToken;
  const systemTokens = Math.ceil(chars(system) / cpt) + (system ? limits.messageTokens : 0);
  let fnChars = 0;
  for (const f of functions) fnChars += chars(f.name) + chars(f.description) + compactJsonChars(f.parameters);
  const tools = Math.ceil(fnChars / cpt);
  let history = limits.requestTokens;
  for (const message of messages) {
    const [n, parts] = messageChars(message);
    history += Math.ceil(n / cpt) + limits.messageTokens + parts * PART_TOKENS;
  }
  return { system: systemTokens, tools, messages: history };
}

/** The calibrated estimate of a whole request, in tokens. */
export function estimateRequest(limits: Limits, system: string, messages: readonly Message[], functions: readonly FunctionSpec[] = [], factor = 1): number {
  const zones = rawEstimate(limits, system, messages, functions);
  return Math.ceil((zones.system + zones.tools + zones.messages) * factor);
}

/** Per model, reported input tokens over raw estimates, summed over every reported request. */
export class Calibration {
  private sums = new Map<string, [number, number]>();

  factor(model: string): number {
    const [raw, reported] = this.sums.get(model) ?? [0, 0];
    return raw && reported ? reported / raw : 1;
  }

  observe(model: string, raw: number, reported: number | null | undefined): void {
    if (reported == null || reported <= 0 || raw <= 0) return;
    const [r, t] = this.sums.get(model) ?? [0, 0];
    this.sums.set(model, [r + raw, t + reported]);
  }
}

/** A `{tokens}` or `{chars}` cap in characters. */
export function capChars(cap: { tokens?: number; chars?: number }, limits: Limits): number {
  if (cap.chars !== undefined) return cap.chars;
  return Math.trunc((cap.tokens ?? DEFAULT_TOOL_OUTPUT.tokens) * limits.charsPerToken);
}

/** `text` from `offset` kept to `limit` characters; when cut, a marker says how much was shown
 * and how `recall` continues. */
export function cut(text: string, limit: number, ref: string, offset = 0): string {
  const points = [...text];
  const rest = points.slice(offset);
  if (rest.length <= limit) return rest.join("");
  const end = offset + limit;
  return `${points.slice(offset, end).join("")}\n[auwgent: cut at ${limit} of ${points.length - offset} characters; recall(id="${ref}", offset=${end}) returns the rest]`;
}

/** A compaction record of `session.context.compactions`. */
export interface CompactionRecord {
  policy: "drop" | "summarize" | "clearToolResults";
  turns: number;
  summary?: string;
  [key: string]: unknown;
}

/** `message` (a tool result of an earlier turn) with its content replaced by a stub. */
export function stub(message: Message, ref: string): Message {
  const size = chars(message.content);
  const { parts: _parts, ...rest } = message;
  return { ...rest, content: `[auwgent: an earlier tool result of ${size} characters was cleared to save context; recall(id="${ref}") returns it]` };
}

/** One past turn with its tool results (every later `tool` or runtime `user` message) stubbed. */
export function cleared(segment: readonly Message[], refs: readonly (string | null)[]): Message[] {
  return segment.map((message, index) => {
    const ref = refs[index] ?? null;
    const result = index > 0 && (message.role === "tool" || message.role === "user");
    return result && ref !== null && chars(message.content) >= STUB_MIN_CHARS ? stub(message, ref) : message;
  });
}

/** The user message that stands for `turns` summarized turns. */
export function summaryMessage(text: string, turns: number): Message {
  return { role: "user", content: `[auwgent: a summary of the first ${turns} turns of this conversation]\n${text}` };
}

/** The past turns as the next request shows them under the last compaction `record`. */
export function compactView(segments: readonly (readonly Message[])[], refs: readonly (readonly (string | null)[])[], record: CompactionRecord | null): Message[] {
  const covered = record ? record.turns : 0;
  const policy = record?.policy ?? null;
  const out: Message[] = [];
  if (policy === "summarize" && record) out.push(summaryMessage(String(record.summary), covered));
  segments.forEach((segment, index) => {
    if (index < covered && (policy === "drop" || policy === "summarize")) return;
    if (index < covered && policy === "clearToolResults") out.push(...cleared(segment, refs[index] ?? []));
    else out.push(...segment);
  });
  return out;
}
