// Anthropic's Messages API (POST {base}/v1/messages), as the Python runtime's
// providers/anthropic.py: the key in x-api-key with anthropic-version 2023-06-01; calls as
// tool_use blocks, answers as tool_result blocks; thinking blocks kept in history and sent back
// unchanged; `cache` (ours) puts cache_control on the last tool and the system prompt (before
// its date-and-time line); max_tokens, which the API requires, defaults to 4096.

import { ConfigError, ProviderError } from "../errors.js";
import { pyJson } from "../values.js";
import type { FunctionSpec, Message, ModelRequest, Provider, StreamEvent } from "./base.js";
import { field } from "./shape.js";
import { buildOrRefuse, refuse, WEB_SCHEMES } from "../parts.js";
import { callSettings, modelStream, parseChunk, post, StreamInterrupted, type HttpConfig, type HttpSettings, type Reading } from "./http.js";

export const DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com";
export const ANTHROPIC_VERSION = "2023-06-01";
/** Sent when the options do not set max_tokens (the API requires it). */
export const DEFAULT_MAX_TOKENS = 4096;

// Fields the adapter fills from the agent; `cache` is ours, never sent.
const ADAPTER_OWNED = new Set(["model", "messages", "system", "tools", "stream", "cache"]);
const FINISH: Record<string, string> = {
  end_turn: "stop",
  stop_sequence: "stop",
  tool_use: "tool_calls",
  max_tokens: "length",
  model_context_window_exceeded: "length",
  refusal: "refusal",
  pause_turn: "pause_turn",
};
const FINISH_MESSAGES: Record<string, string> = {
  refusal: "the model declined to answer (stop_reason refusal)",
  pause_turn: "the API paused a long-running turn (stop_reason pause_turn); Auwgent does not resume paused turns",
  model_context_window_exceeded: "the conversation filled the model's context window",
};
const ERROR_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};
const DATE_LINE = "\n\nCurrent date and time: ";

/** The cache_control breakpoint for a `cache` option, or null when it is off. */
export function cacheControl(value: unknown): Record<string, string> | null {
  if (value === true) return { type: "ephemeral" };
  if (value === "5m" || value === "1h") return { type: "ephemeral", ttl: value };
  return null;
}

function argumentsOf(text: string): Record<string, any> {
  let value: any;
  try {
    value = text.trim() ? JSON.parse(text) : {};
  } catch {
    return {}; // the model's broken arguments were already answered with an error
  }
  return value && typeof value === "object" && !Array.isArray(value) ? value : { value };
}

function assistantContent(m: Message): string | Record<string, any>[] {
  const reasoning = m.reasoning ?? [];
  const calls = m.tool_calls ?? [];
  if (!reasoning.length && !calls.length) return m.content;
  const blocks: Record<string, any>[] = reasoning.map((part) => ({ ...(part.data as Record<string, any>) }));
  if (m.content) blocks.push({ type: "text", text: m.content });
  for (const c of calls) blocks.push({ type: "tool_use", id: c.id, name: c.name, input: argumentsOf(c.arguments) });
  return blocks;
}

/** A user turn's content: its text, or its parts as `text`, `image` and `document` blocks
 * (`source` base64 or url). */
function userContent(m: Message): string | Record<string, any>[] {
  if (!m.parts || !m.parts.length) return m.content;
  return userBlocks(m.parts);
}

function userBlocks(parts: Record<string, any>[]): Record<string, any>[] {
  return parts.map((part, index) => {
    if (part.type === "text") return { type: "text", text: part.text };
    const kind = part.type === "image" ? "image" : "document";
    if ("url" in part) {
      if (!WEB_SCHEMES.some((s) => part.url.startsWith(s))) throw refuse(index, part, "the Messages API fetches http(s) URLs only");
      return { type: kind, source: { type: "url", url: part.url } };
    }
    return { type: kind, source: { type: "base64", media_type: part.media_type, data: part.data } };
  });
}

function history(messages: Message[]): Record<string, any>[] {
  const out: Record<string, any>[] = [];
  for (const m of messages) {
    if (m.role === "tool") {
      // A tool result's content: its text, with the images the tool returned as blocks.
      const content = m.parts?.length ? [{ type: "text", text: m.content }, ...userBlocks(m.parts)] : m.content;
      const result = { type: "tool_result", tool_use_id: m.tool_call_id ?? "", content };
      const last = out[out.length - 1];
      if (last && last.role === "user" && Array.isArray(last.content) && last.content[0]?.type === "tool_result") last.content.push(result);
      else out.push({ role: "user", content: [result] });
    } else if (m.role === "assistant") out.push({ role: "assistant", content: assistantContent(m) });
    else out.push({ role: "user", content: userContent(m) });
  }
  return out;
}

function system(text: string, cache: Record<string, string> | null): string | Record<string, any>[] {
  if (cache === null) return text;
  const at = text.lastIndexOf(DATE_LINE);
  const tail = at < 0 ? "" : text.slice(at + 2);
  if (at < 0 || tail.includes("\n\n")) return [{ type: "text", text, cache_control: cache }];
  return [
    { type: "text", text: text.slice(0, at), cache_control: cache },
    { type: "text", text: tail },
  ];
}

function tool(f: FunctionSpec): Record<string, any> {
  return { name: f.name, description: f.description, input_schema: { ...f.parameters } };
}

function maxTokens(options: Record<string, any>): unknown {
  if ("max_tokens" in options) return options.max_tokens;
  const budget = options.thinking?.budget_tokens;
  return Number.isInteger(budget) && budget >= DEFAULT_MAX_TOKENS ? budget + DEFAULT_MAX_TOKENS : DEFAULT_MAX_TOKENS;
}

/** The JSON body of a Messages API request (exported so tests can inspect it). */
export function buildMessagesBody(request: ModelRequest): Record<string, any> {
  const options = request.options;
  const cache = cacheControl(options.cache);
  const body: Record<string, any> = { model: request.model, max_tokens: maxTokens(options), messages: history(request.messages) };
  if (request.system) body.system = system(request.system, cache);
  if (request.functions.length) {
    const tools = request.functions.map(tool);
    if (cache !== null) tools[tools.length - 1]!.cache_control = cache;
    body.tools = tools;
  }
  for (const [key, value] of Object.entries(options)) if (!ADAPTER_OWNED.has(key)) body[key] = value;
  if (request.responseSchema !== null) body.output_config = { ...(body.output_config ?? {}), format: { type: "json_schema", schema: request.responseSchema.schema } };
  if (request.stream) body.stream = true;
  return body;
}

/** The error an `error` event (or error body) stands for; a server-side one before the
 * response produced anything is retried like a failed connection. */
function errorOf(provider: string, error: any, started: boolean): ProviderError {
  const kind = error && typeof error === "object" ? error.type : undefined;
  const message = error && typeof error === "object" ? error.message : undefined;
  const text = typeof message === "string" && message ? `${message} [${kind}]` : `[${kind}]`;
  const status = typeof kind === "string" ? ERROR_STATUS[kind] ?? null : null;
  const retryable = status !== null && (status === 429 || status >= 500);
  if (retryable && !started) return new StreamInterrupted(provider, text, status, true);
  return new ProviderError(provider, text, status, retryable);
}

interface Block {
  [key: string]: any;
}

/** The events of one response (streamed, or the blocks of a whole message); a new one for
 * every attempt. */
class Decoder implements Reading<StreamEvent> {
  private blocks = new Map<number, Block>();
  private calls = 0;
  private started = false;
  private done = false;
  private reason: string | null = null;
  private stopSequence: string | null = null;
  private counts: Record<string, number | null> = {};
  private usageSeen = false;
  constructor(private provider: string) {}

  events(payloads: string[]): StreamEvent[] {
    const out: StreamEvent[] = [];
    for (const data of payloads) if (!this.done) out.push(...this.feed(parseChunk(data, this.provider)));
    return out;
  }

  private feed(event: any): StreamEvent[] {
    const provider = this.provider;
    if (!event || typeof event !== "object" || Array.isArray(event)) throw new ProviderError(provider, "unexpected response shape (not a JSON object)");
    switch (event.type) {
      case "content_block_delta":
        return this.delta(event);
      case "content_block_start":
        return this.start(event);
      case "content_block_stop":
        return this.stop(event);
      case "message_start": {
        const message = field(provider, "message_start.message", event.message, "object") ?? {};
        this.noteUsage("message_start.message.usage", message.usage);
        break;
      }
      case "message_delta": {
        const delta = field(provider, "message_delta.delta", event.delta, "object") ?? {};
        this.noteStop("message_delta.delta", delta);
        this.noteUsage("message_delta.usage", event.usage);
        break;
      }
      case "message_stop":
        this.done = true;
        break;
      case "error":
        throw errorOf(provider, event.error, this.started);
    }
    return []; // ping, and event types added to the API later, carry nothing for us
  }

  private index(event: any, where: string): number {
    return field(this.provider, `${where}.index`, event.index, "integer", false);
  }

  private start(event: any): StreamEvent[] {
    const where = "content_block_start";
    const index = this.index(event, where);
    const block: Block = { ...(field(this.provider, where, event.content_block, "object", true, ".content_block") ?? {}) };
    this.blocks.set(index, block);
    if (block.type === "text") {
      const text = field(this.provider, where, block.text, "string", true, ".content_block.text");
      block.text = "";
      return text ? this.out({ type: "text", text }) : [];
    }
    if (block.type === "tool_use") {
      const id = field(this.provider, where, block.id, "string", false, ".id");
      const name = field(this.provider, where, block.name, "string", false, ".name");
      block.given = field(this.provider, where, block.input, "object", true, ".input") ?? {};
      block.call = this.calls++;
      block.json = false;
      return this.out({ type: "tool_call_delta", index: block.call, id, name, arguments: "" });
    }
    if (block.type === "thinking") {
      block.thinking ??= "";
      block.signature ??= "";
    }
    return [];
  }

  private delta(event: any): StreamEvent[] {
    const provider = this.provider;
    const where = "content_block_delta";
    const index = this.index(event, where);
    const delta = field(provider, where, event.delta, "object", false, ".delta");
    const block = this.blocks.get(index);
    if (block === undefined) throw new ProviderError(provider, `${where} for block ${index}, which was never started`);
    switch (delta.type) {
      case "text_delta": {
        const text = field(provider, where, delta.text, "string", true, ".delta.text");
        return text ? this.out({ type: "text", text }) : [];
      }
      case "input_json_delta": {
        const part = field(provider, where, delta.partial_json, "string", true, ".delta.partial_json");
        if (block.type !== "tool_use" || !part) return [];
        block.json = true;
        return this.out({ type: "tool_call_delta", index: block.call, arguments: part });
      }
      case "thinking_delta":
        block.thinking = (block.thinking ?? "") + (field(provider, where, delta.thinking, "string", true, ".delta.thinking") ?? "");
        break;
      case "signature_delta":
        block.signature = (block.signature ?? "") + (field(provider, where, delta.signature, "string", true, ".delta.signature") ?? "");
        break;
      case "citations_delta":
        return this.out({ type: "part", kind: "citation", data: delta.citation });
    }
    return [];
  }

  private stop(event: any): StreamEvent[] {
    const index = this.index(event, "content_block_stop");
    const block = this.blocks.get(index);
    if (block === undefined) return [];
    this.blocks.delete(index);
    if (block.type === "tool_use") return block.json ? [] : this.out({ type: "tool_call_delta", index: block.call, arguments: pyJson(block.given) });
    if (block.type === "text") return [];
    if (block.type === "thinking")
      return this.out({ type: "part", kind: "thinking", data: { type: "thinking", thinking: String(block.thinking ?? ""), signature: String(block.signature ?? "") } });
    return this.out({ type: "part", kind: String(block.type), data: block });
  }

  private out(event: StreamEvent): StreamEvent[] {
    this.started = true;
    return [event];
  }

  private noteStop(where: string, holder: any): void {
    const reason = field(this.provider, where, holder.stop_reason, "string", true, ".stop_reason");
    if (reason) {
      this.reason = reason;
      this.stopSequence = typeof holder.stop_sequence === "string" ? holder.stop_sequence : null;
    }
  }

  private noteUsage(where: string, value: any): void {
    const usage = field(this.provider, where, value, "object");
    if (!usage) return;
    this.usageSeen = true;
    for (const name of ["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"]) {
      const count = field(this.provider, `${where}.${name}`, usage[name], "integer");
      if (count !== null && count !== undefined) this.counts[name] = count; // message_delta repeats the counts it has
    }
  }

  whole(payload: any): StreamEvent[] {
    const provider = this.provider;
    if (!payload || typeof payload !== "object" || Array.isArray(payload)) throw new ProviderError(provider, "unexpected response shape (not a JSON object)");
    if (payload.type === "error") throw errorOf(provider, payload.error, false);
    const events: StreamEvent[] = [];
    const blocks = field(provider, "content", payload.content, "list") ?? [];
    blocks.forEach((block: any, position: number) => {
      field(provider, "content[]", block, "object", false);
      events.push(...this.start({ index: position, content_block: block }), ...this.stop({ index: position }));
    });
    this.noteStop("message", payload);
    this.noteUsage("usage", payload.usage);
    this.done = true;
    return events;
  }

  end(): StreamEvent[] {
    if (!this.done) throw new ProviderError(this.provider, "stream ended before completion (no message_stop event)");
    if (this.reason === null) throw new ProviderError(this.provider, "the response has no stop_reason");
    const tail: StreamEvent[] = [];
    if (this.usageSeen) {
      const read = this.counts.cache_read_input_tokens ?? null;
      const write = this.counts.cache_creation_input_tokens ?? null;
      tail.push({
        type: "usage",
        inputTokens: (this.counts.input_tokens ?? 0) + (read ?? 0) + (write ?? 0),
        outputTokens: this.counts.output_tokens ?? null,
        cacheReadTokens: read,
        cacheWriteTokens: write,
      });
    }
    let reason = FINISH[this.reason] ?? this.reason;
    if (reason === "stop" && this.calls) reason = "tool_calls";
    let message = FINISH_MESSAGES[this.reason] ?? null;
    if (this.reason === "stop_sequence" && this.stopSequence) message = `stopped at ${pyRepr(this.stopSequence)}`;
    tail.push({ type: "finish", reason, raw: this.reason, message });
    return tail;
  }
}

/** Python's repr of a plain string, as the Python runtime writes it in messages. */
function pyRepr(text: string): string {
  return text.includes("'") && !text.includes('"') ? `"${text}"` : `'${text.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
}

export class AnthropicProvider implements Provider {
  baseUrl: string;
  private headers: Record<string, string>;
  constructor(
    public name: string,
    baseUrl: string,
    private apiKey: string | null,
    private http: HttpConfig,
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
    this.headers = { "anthropic-version": ANTHROPIC_VERSION, ...(apiKey ? { "x-api-key": apiKey } : {}) };
  }

  stream(request: ModelRequest): AsyncIterable<StreamEvent> {
    const body = buildOrRefuse(this.name, () => buildMessagesBody(request));
    const call: HttpSettings = callSettings(this.http, this.name, this.apiKey, !request.stream);
    return modelStream(
      call,
      request.stream,
      () => post(`${this.baseUrl}/v1/messages`, body, this.headers, call),
      () => new Decoder(this.name),
    );
  }

  /** Anthropic has no embeddings API: always a ConfigError (the compiler refuses an
   * anthropic(...) embedding model too, E2079). */
  async embed(_texts: string[], model: string): Promise<number[][]> {
    throw new ConfigError(
      `embedding model '${model}': Anthropic has no embeddings API; embed with gemini("gemini-embedding-001") or openai("text-embedding-3-small")`,
    );
  }
}
