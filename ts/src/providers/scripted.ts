// A model that answers from a script, for precise tests (providers/scripted.py). It never
// touches the network: each model call takes the next response of a list (or asks a function
// for it) and streams it as the neutral events a real provider would produce.
//
//   const model = new ScriptedModel([
//     ScriptedModel.call("tool__get_weather", { location: "Accra" }), // a native tool call
//     ScriptedModel.text("It is sunny in Accra."),                     // a [response_text] block
//   ]);
//
// A response is a string (raw model text, streamed in `chunkSize` pieces), a `NativeCall`
// (`ScriptedModel.call`), `ScriptedModel.json(value)`, `ScriptedModel.reply(...parts)` (text and
// calls in one response), `ScriptedModel.fail(message)` (a ProviderError, after streaming
// `after` first) or `ScriptedModel.events(...events)` (exact stream events). Every request is
// kept in `requests`; running past the end of a list script is
// `ProviderError("scripted model has no response left for call N (the script has M)")`.

import { createHash } from "node:crypto";
import { ProviderError } from "../errors.js";
import { isObject } from "../schema.js";
import { pyJson } from "../values.js";
import type { ModelRequest, Provider, StreamEvent } from "./base.js";

/** One native function call; `args` is an object (sent as JSON) or JSON text used as given. */
export class NativeCall {
  constructor(
    readonly name: string,
    readonly args: Record<string, unknown> | string,
    readonly id: string | null = null,
  ) {}
}

export interface ReplyOptions {
  /** The finish reason (default `tool_calls` when the reply holds a call, else `stop`). */
  finish?: string | null;
  /** `[inputTokens, outputTokens]`: a usage event before the finish. */
  usage?: [number | null, number | null] | null;
}

/** Several parts (text and calls) in one response, streamed in order. */
export class Reply {
  constructor(
    readonly parts: readonly (string | NativeCall)[],
    readonly finish: string | null = null,
    readonly usage: [number | null, number | null] | null = null,
  ) {}
}

/** The provider fails with `ProviderError(message)` after streaming `before` first. */
export class ScriptedFailure {
  constructor(
    readonly message: string,
    readonly before: Reply | null = null,
    readonly status: number | null = null,
    readonly retryable = false,
  ) {}
}

class RawEvents {
  constructor(readonly events: readonly StreamEvent[]) {}
}

export type Response = string | NativeCall | Reply | ScriptedFailure | RawEvents;
export type ScriptFunction = (request: ModelRequest) => Response | Promise<Response>;
export type EmbeddingFunction = (texts: string[], model: string) => number[][] | Promise<number[][]>;

export interface ScriptedOptions {
  /** Characters per streamed text or argument piece (at least 1; default 8). */
  chunkSize?: number;
  /** `(texts, model) => vectors` for `embed`; without it, `hashedEmbedding` of each text. */
  embeddings?: EmbeddingFunction;
  /** The provider name reported to the engine and in errors (default `scripted`). */
  name?: string;
  /** Seconds to wait before each streamed event (0: yield to other tasks only). */
  delay?: number;
}

export class ScriptedModel implements Provider {
  readonly name: string;
  readonly chunkSize: number;
  readonly delay: number;
  readonly requests: ModelRequest[] = [];
  readonly embedRequests: [string[], string][] = [];
  private script: readonly Response[] | ScriptFunction;
  private embeddings: EmbeddingFunction | null;

  constructor(script: readonly Response[] | ScriptFunction, options: ScriptedOptions = {}) {
    const chunkSize = options.chunkSize ?? 8;
    if (!Number.isInteger(chunkSize) || chunkSize < 1) throw new RangeError("chunkSize must be at least 1");
    if (typeof script === "string") throw new TypeError("script must be a list of responses or a function, not one string");
    this.script = script;
    this.chunkSize = chunkSize;
    this.name = options.name ?? "scripted";
    this.delay = options.delay ?? 0;
    this.embeddings = options.embeddings ?? null;
  }

  static call(name: string, args: Record<string, unknown> | string = {}, id: string | null = null): NativeCall {
    return new NativeCall(name, args, id);
  }

  /** Structured output: `value` as JSON text, written as the Python runtime writes it. */
  static json(value: unknown): string {
    return pyJson(value);
  }

  /** Parts in one response; a last argument that is a plain object holds `finish` / `usage`. */
  static reply(...parts: (string | NativeCall | ReplyOptions)[]): Reply {
    const last = parts[parts.length - 1];
    const options: ReplyOptions = isObject(last) && !(last instanceof NativeCall) ? (parts.pop() as ReplyOptions) : {};
    return new Reply(parts as (string | NativeCall)[], options.finish ?? null, options.usage ?? null);
  }

  static fail(message: string, options: { after?: string | NativeCall | Reply; status?: number; retryable?: boolean } = {}): ScriptedFailure {
    const after = options.after;
    const before = after === undefined ? null : after instanceof Reply ? after : new Reply([after]);
    return new ScriptedFailure(message, before, options.status ?? null, options.retryable ?? false);
  }

  /** A `[response_text]` block: the model's text answer in the block protocol. */
  static text(content: string): string {
    return blockText("response_text", null, content);
  }

  static block(kind: string, name: string | null = null, body: unknown = ""): string {
    return blockText(kind, name, body);
  }

  /** Exactly these stream events (no finish event is added). */
  static events(...events: StreamEvent[]): Response {
    return new RawEvents(events);
  }

  get calls(): number {
    return this.requests.length;
  }

  /** Responses left in a list script (`null` for a function script). */
  get remaining(): number | null {
    if (typeof this.script === "function") return null;
    return Math.max(0, this.script.length - this.requests.length);
  }

  assertExhausted(): void {
    const left = this.remaining;
    if (left)
      throw new Error(`scripted model was called ${this.calls} time(s); ${left} response(s) of ${this.calls + left} were never used`);
  }

  get lastRequest(): ModelRequest {
    const last = this.requests[this.requests.length - 1];
    if (last === undefined) throw new RangeError("the scripted model has had no request yet");
    return last;
  }

  async *stream(request: ModelRequest): AsyncGenerator<StreamEvent> {
    this.requests.push(request);
    const number = this.requests.length;
    const response = await this.next(request, number);
    for (const event of eventsFor(response, number, this.chunkSize, this.name)) {
      await new Promise((resolve) => (this.delay > 0 ? setTimeout(resolve, this.delay * 1000) : setImmediate(resolve)));
      yield event;
    }
  }

  async embed(texts: string[], model: string): Promise<number[][]> {
    this.embedRequests.push([[...texts], model]);
    if (this.embeddings === null) return texts.map((text) => hashedEmbedding(text));
    const result = await this.embeddings([...texts], model);
    if (result.length !== texts.length)
      throw new ProviderError(this.name, `embeddings function returned ${result.length} vectors for ${texts.length} texts`);
    return result;
  }

  private async next(request: ModelRequest, number: number): Promise<Response> {
    if (typeof this.script === "function") return checked(await this.script(request), number, this.name);
    if (number > this.script.length)
      throw new ProviderError(this.name, `scripted model has no response left for call ${number} (the script has ${this.script.length})`);
    return checked(this.script[number - 1], number, this.name);
  }
}

function checked(response: unknown, number: number, provider: string): Response {
  if (typeof response === "string" || response instanceof NativeCall || response instanceof Reply || response instanceof ScriptedFailure || response instanceof RawEvents)
    return response;
  const what = response === null ? "null" : Array.isArray(response) ? "list" : typeof response === "object" ? "object" : typeof response;
  throw new ProviderError(provider, `scripted response for call ${number} is a ${what}; expected a string or a value from ScriptedModel.call/json/reply/fail/events`);
}

function* eventsFor(response: Response, number: number, chunkSize: number, provider: string): Generator<StreamEvent> {
  if (response instanceof RawEvents) {
    for (const event of response.events) yield event;
  } else if (response instanceof ScriptedFailure) {
    if (response.before !== null) yield* replyEvents(response.before, number, chunkSize, false);
    throw new ProviderError(provider, response.message, response.status, response.retryable);
  } else {
    yield* replyEvents(response instanceof Reply ? response : new Reply([response]), number, chunkSize);
  }
}

/** The stream events of `reply`: text in `chunkSize` pieces, each call as fragments (ids
 * `call_<callNumber>_<index>` unless given), then (with `finish`) usage and finish. */
export function* replyEvents(reply: Reply, callNumber: number, chunkSize: number, finish = true): Generator<StreamEvent> {
  let index = 0;
  for (const part of reply.parts) {
    if (typeof part === "string") {
      for (let i = 0; i < part.length; i += chunkSize) yield { type: "text", text: part.slice(i, i + chunkSize) };
      continue;
    }
    const args = typeof part.args === "string" ? part.args : pyJson(part.args);
    // Real providers send the id and name with the first fragment, then argument pieces.
    yield { type: "tool_call_delta", index, id: part.id ?? `call_${callNumber}_${index}`, name: part.name, arguments: args.slice(0, chunkSize) };
    for (let i = chunkSize; i < args.length; i += chunkSize) yield { type: "tool_call_delta", index, arguments: args.slice(i, i + chunkSize) };
    index++;
  }
  if (!finish) return;
  if (reply.usage !== null) yield { type: "usage", inputTokens: reply.usage[0], outputTokens: reply.usage[1] };
  yield { type: "finish", reason: reply.finish ?? (index ? "tool_calls" : "stop") };
}

const BLOCK_KINDS = ["response_text", "tool_call", "workflow_call", "helper_call", "custom", "schema"];
const PLAIN_WORDS = /^(?:[A-Za-z][A-Za-z0-9 _.-]*[A-Za-z0-9]|[A-Za-z])$/;
const LOOKS_TYPED = new Set(["true", "false", "yes", "no", "null", "none"]);

/** The block-protocol text of one block: `[kind: name]`, the body, `[/kind]`. A string body
 * is written as is; a flat object of simple values as `key: value` lines; anything else as JSON. */
export function blockText(kind: string, name: string | null, body: unknown): string {
  if (!BLOCK_KINDS.includes(kind)) throw new RangeError(`unknown block kind '${kind}'; expected one of ${BLOCK_KINDS.join(", ")}`);
  if ((name === null) !== (kind === "response_text")) throw new RangeError(name ? "response_text blocks take no name" : `a ${kind} block needs a name`);
  const header = name === null ? `[${kind}]` : `[${kind}: ${name}]`;
  let text = bodyText(body);
  if (text && !text.endsWith("\n")) text += "\n";
  return `${header}\n${text}[/${kind}]`;
}

function bodyText(value: unknown): string {
  if (typeof value === "string") return value;
  if (isObject(value) && Object.values(value).every(plainScalar))
    return Object.entries(value).map(([key, v]) => `${key}: ${typeof v === "boolean" ? (v ? "true" : "false") : String(v)}\n`).join("");
  return pyJson(value);
}

function plainScalar(value: unknown): boolean {
  if (typeof value === "string") return PLAIN_WORDS.test(value) && !LOOKS_TYPED.has(value.toLowerCase());
  return typeof value === "boolean" || typeof value === "number";
}

const WORD = /[\p{L}\p{N}_]+/gu;

/** A deterministic unit vector for `text`, the Python runtime's: a hashed bag of words. */
export function hashedEmbedding(text: string, dimensions = 8): number[] {
  if (!Number.isInteger(dimensions) || dimensions < 1) throw new RangeError("dimensions must be at least 1");
  let vector = new Array<number>(dimensions).fill(0);
  for (const word of text.toLowerCase().match(WORD) ?? []) {
    const digest = createHash("sha256").update(word, "utf8").digest();
    const slot = digest.readUInt32BE(0) % dimensions;
    vector[slot]! += digest[4]! & 1 ? 1 : -1;
  }
  if (!vector.some((v) => v !== 0)) {
    const digest = createHash("sha256").update(text, "utf8").digest();
    vector = vector.map((_, i) => (digest[i % digest.length]! - 127.5) / 127.5);
  }
  const norm = Math.sqrt(vector.reduce((sum, v) => sum + v * v, 0));
  return vector.map((v) => v / norm);
}
