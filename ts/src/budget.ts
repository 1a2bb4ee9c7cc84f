// The context budget's shared rules (docs/context.md), as src/auwgent/runtime/context_budget.py
// has them: every model's window from the one table (models.ts, generated from
// src/auwgent/ir/models.json), the token estimate of a request, the cut of an over-long tool
// result, and the view of earlier turns under a compaction record. Pinned by
// conformance/context.json.
import { AuwgentError } from "./errors.js";
import { MODELS } from "./models.js";
import type { FunctionSpec, Message } from "./providers/base.js";
import type { ModelCall } from "./session.js";
import { summarize, toSummarize, type SummaryHost } from "./summarize.js";

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

/** Per model, reported input tokens over raw estimates, summed over every reported request
 * (kept between 0.5 and 3: a provider that reports nonsense cannot switch the check off). */
export class Calibration {
  private sums = new Map<string, [number, number]>();

  factor(model: string): number {
    const [raw, reported] = this.sums.get(model) ?? [0, 0];
    return raw && reported ? Math.min(3, Math.max(0.5, reported / raw)) : 1;
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

// -- the run's budget (runtime/context_budget.py's ContextBudget) --------------------------

/** The built-in `recall` tool, offered once the session kept a cut result. */
export const RECALL_TOOL: Record<string, any> = {
  name: RECALL,
  description: "Returns the full text of a tool result that was cut or cleared to save context, from `offset` (a character position) on.",
  params: [
    { name: "id", type: { kind: "string" }, optional: false, description: 'the id the marker names, e.g. "r1" or "t3.2"' },
    { name: "offset", type: { kind: "number" }, optional: true, description: "the first character to return (default 0)" },
  ],
  returns: { kind: "string" },
  examples: [],
  builtin: true,
};

/** A request would not fit the model's window even after compaction; it was not sent. */
export class ContextWindowError extends AuwgentError {}

/** The full text behind `ref` in `session` (`"r1"`: a cut result; `"t3.2"`: turn 3, message
 * 2), or null. */
export function recall(session: Record<string, any>, ref: string): string | null {
  const kept = session.context?.kept ?? {};
  if (ref in kept) return String(kept[ref]);
  const match = /^t(\d+)\.(\d+)$/.exec(ref);
  if (!match) return null;
  const message = session.turns?.[Number(match[1])]?.messages?.[Number(match[2])];
  return message ? String(message.content ?? "") : null;
}

interface RunLike extends SummaryHost {
  session: Record<string, any>;
  turn: { messages: Record<string, any>[]; model_calls: ModelCall[] } | null;
  core: { root: string } & SummaryHost["core"];
  emit(name: string, value: unknown, agentName: string): Promise<unknown>;
}

interface InvocationLike {
  agent: Record<string, any>;
  configName: string;
  history: Message[];
  tools: Record<string, any>[];
  record: Record<string, any>[] | null;
  name: string;
}

interface RequestLike {
  system: string;
  messages: Message[];
  functions: FunctionSpec[];
}

/** The run's side of the budget: tool caps, `recall`, the window check and compaction by
 * `drop`, `clearToolResults` and `summarize` (src/summarize.ts). */
export class RunBudget {
  private raw = new WeakMap<object, [string, number]>();

  constructor(private run: RunLike, private calibration: Calibration) {}

  /** `session.context` (`cuts` is made with the first cut, as in Python). */
  private state(): { kept: Record<string, string>; cuts?: Record<string, number>; compactions: CompactionRecord[] } {
    const found = (this.run.session.context ??= {});
    found.kept ??= {};
    found.compactions ??= [];
    return found;
  }

  /** A tool's result as the model sees it, cut to its `@maxOutput` (else the config's). */
  cap(inv: InvocationLike, name: string, text: string): string {
    const cfg = inv.agent.configs[inv.configName];
    const tool = inv.tools.find((t) => t.name === name);
    const limit = capChars(tool?.maxOutput ?? cfg.maxToolOutput ?? DEFAULT_TOOL_OUTPUT, limitsFor(cfg.model));
    if (chars(text) <= limit) return text;
    const state = this.state();
    const ref = `r${Object.keys(state.kept).length + 1}`;
    state.kept[ref] = text;
    (state.cuts ??= {})[ref] = limit;
    return cut(text, limit, ref);
  }

  /** The model-visible tools, with `recall` once something was kept. */
  tools(tools: Record<string, any>[]): Record<string, any>[] {
    const kept = this.run.session.context?.kept;
    if (!kept || !Object.keys(kept).length || tools.some((t) => t.name === RECALL)) return tools;
    return [...tools, RECALL_TOOL];
  }

  offersRecall(inv: InvocationLike): boolean {
    return inv.tools.includes(RECALL_TOOL);
  }

  /** The model's `recall` call: [ok, text] for the kept text from `offset`. */
  recallText(inv: InvocationLike, args: Record<string, any>): [boolean, string] {
    const ref = String(args.id ?? "");
    const full = recall(this.run.session, ref);
    if (full === null) return [false, `recall: nothing is kept under the id '${ref}'`];
    const cfg = inv.agent.configs[inv.configName];
    const limit = this.state().cuts?.[ref] || capChars(cfg.maxToolOutput ?? DEFAULT_TOOL_OUTPUT, limitsFor(cfg.model));
    return [true, cut(full, limit, ref, Math.max(0, Number(args.offset ?? 0)))];
  }

  /** Calibrate with the input tokens reported for `request`. */
  observe(request: object, inputTokens: number | null | undefined): void {
    const found = this.raw.get(request);
    if (found) this.calibration.observe(found[0], found[1], inputTokens);
  }

  /** `request`'s messages with the recorded compaction applied, a new one made past the
   * trigger; throws ContextWindowError when it still does not fit. */
  async fit<R extends RequestLike>(inv: InvocationLike, request: R): Promise<R> {
    const cfg = inv.agent.configs[inv.configName];
    const limits = limitsFor(cfg.model);
    const key = `${cfg.model.provider}:${cfg.model.model}`;
    const factor = this.calibration.factor(key);
    const [segments, refs, current] = this.segments(inv);
    const policy = { keepLast: 6, trigger: 0.8, ...(cfg.history ?? {}) };
    let record = this.lastRecord(segments.length);
    let messages = [...compactView(segments, refs, record), ...current];
    const size = estimateRequest(limits, request.system, messages, request.functions, factor);
    if (policy.compact && size > policy.trigger * limits.budget) {
      const newer = await this.compact(inv, policy, segments, refs, record, current, size, limits);
      if (newer) {
        record = newer;
        messages = [...compactView(segments, refs, record), ...current];
      }
    }
    const fitted = { ...request, messages };
    const earlier = messages.length - current.length;
    const head = rawEstimate(limits, request.system, messages.slice(0, earlier), request.functions);
    const turn = rawEstimate(limits, "", messages.slice(earlier)).messages;
    const zones = { system: head.system, tools: head.tools, history: head.messages - limits.requestTokens, turn };
    const raw = zones.system + zones.tools + zones.history + zones.turn;
    const total = Math.ceil(raw * factor);
    if (total > limits.budget) {
      const parts = Object.entries(zones).map(([zone, tokens]) => `${zone} ${Math.ceil(tokens * factor)}`).join(", ");
      const compact = policy.compact ? `history.compact "${policy.compact}" left nothing more to compact` : "the config declares no history compaction";
      throw new ContextWindowError(
        `context window exceeded: the request to ${key} needs about ${total} tokens, over the ${limits.budget} it may use (contextWindow ${limits.contextWindow} - maxOutputTokens ${limits.maxOutputTokens}); by zone: ${parts}; ${compact}; nothing was sent`,
      );
    }
    this.raw.set(fitted, [key, raw]);
    return fitted;
  }

  private segments(inv: InvocationLike): [Message[][], (string | null)[][], Message[]] {
    const run = this.run;
    if (run.turn === null || inv.record !== run.turn.messages) return [[], [], [...inv.history]];
    const segments: Message[][] = [];
    const refs: (string | null)[][] = [];
    let at = 0;
    const turns = run.session.turns as Record<string, any>[];
    turns.slice(0, -1).forEach((turn, number) => {
      let count = (turn.messages ?? []).length;
      const first: (string | null)[] = [];
      if ((turn.agent ?? run.core.root) === run.core.root) {
        count += 1;
        first.push(null);
      }
      segments.push(inv.history.slice(at, at + count));
      refs.push([...first, ...Array.from({ length: count - first.length }, (_, i) => `t${number}.${i}`)]);
      at += count;
    });
    return [segments, refs, inv.history.slice(at)];
  }

  private lastRecord(turns: number): CompactionRecord | null {
    const records = ((this.run.session.context?.compactions ?? []) as CompactionRecord[]).filter((r) => r.turns <= turns);
    return records.length ? records[records.length - 1]! : null;
  }

  private async compact(inv: InvocationLike, policy: Record<string, any>, segments: Message[][], refs: (string | null)[][], record: CompactionRecord | null, current: Message[], size: number, limits: Limits): Promise<CompactionRecord | null> {
    const covered = segments.length - Number(policy.keepLast);
    if (covered <= (record ? record.turns : 0)) return null;
    const newer: CompactionRecord = { policy: policy.compact, turns: covered };
    if (policy.compact === "summarize") {
      const model = policy.summarizeWith ?? inv.agent.configs[inv.configName].model;
      newer.summary = await summarize(this.run, inv.name, model, toSummarize(segments.slice(0, covered), refs.slice(0, covered), record));
    }
    const after = estimateRequest(limits, "", [...compactView(segments, refs, newer), ...current]);
    const before = estimateRequest(limits, "", [...compactView(segments, refs, record), ...current]);
    if (after >= before) return null;
    newer.before = size;
    newer.after = size - (before - after);
    newer.turn = segments.length;
    this.state().compactions.push(newer);
    await this.run.emit("context_compacted", { policy: newer.policy, turns: newer.turns, before: newer.before, after: newer.after }, inv.name);
    return newer;
  }
}
