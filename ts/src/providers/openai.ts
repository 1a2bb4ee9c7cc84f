// OpenAI Chat Completions, for openai(...) and every custom(id, base_url, model).

import { createHash } from "node:crypto";
import { ProviderError } from "../errors.js";
import { pyJson } from "../values.js";
import type { Message, ModelRequest, Provider, StreamEvent } from "./base.js";
import { errorInBody, isEventStream, parseChunk, post, readJson, retryUnstarted, sse, type HttpSettings } from "./http.js";

export const DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1";
const OWNED = new Set(["model", "messages", "stream"]);

function messageJson(m: Message): Record<string, any> {
  if (m.role === "tool") return { role: "tool", tool_call_id: m.tool_call_id ?? "", content: m.content };
  if (m.role === "assistant" && m.tool_calls && m.tool_calls.length)
    return {
      role: "assistant",
      content: m.content || null,
      tool_calls: m.tool_calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })),
    };
  return { role: m.role, content: m.content };
}

function isMapping(value: unknown): value is Record<string, any> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * `schema` in the form OpenAI's strict mode demands, at every depth: each object lists all its
 * properties in `required` and sets `additionalProperties: false`; a property that was
 * optional becomes nullable instead (null for an optional field means "not given").
 */
export function strictSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(strictSchema);
  if (!isMapping(schema)) return schema;
  const out: Record<string, any> = {};
  for (const [key, value] of Object.entries(schema)) {
    if ((key === "properties" || key === "$defs" || key === "definitions") && isMapping(value))
      out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, strictSchema(sub)]));
    else if (key === "items" || key === "anyOf" || key === "oneOf" || key === "allOf") out[key] = strictSchema(value);
    else out[key] = value;
  }
  if (out.type === "object" || "properties" in out) {
    const properties: Record<string, any> = { ...(out.properties ?? {}) };
    const required = new Set<unknown>(Array.isArray(schema.required) ? schema.required : []);
    out.properties = Object.fromEntries(Object.entries(properties).map(([name, sub]) => [name, required.has(name) ? sub : nullable(sub)]));
    out.required = Object.keys(properties);
    out.additionalProperties = false;
  }
  return out;
}

function nullable(schema: unknown): unknown {
  if (!isMapping(schema)) return schema;
  const kind = schema.type;
  if (typeof kind === "string" && !("enum" in schema)) return kind !== "null" ? { ...schema, type: [kind, "null"] } : schema;
  if (Array.isArray(kind) && !("enum" in schema)) return kind.includes("null") ? schema : { ...schema, type: [...kind, "null"] };
  if (Array.isArray(schema.anyOf)) return { ...schema, anyOf: [...schema.anyOf, { type: "null" }] };
  return { anyOf: [{ ...schema }, { type: "null" }] };
}

/**
 * The JSON body of a Chat Completions request. With `strict` (the default; `strict: false` in
 * the runtime config turns it off for endpoints that refuse it), native tools and structured
 * output carry `strict: true` and their schemas are in strict form (strictSchema).
 */
export function buildChatBody(request: ModelRequest, { strict = true }: { strict?: boolean } = {}): Record<string, any> {
  const messages: Record<string, any>[] = [];
  if (request.system) messages.push({ role: "system", content: request.system });
  for (const m of request.messages) messages.push(messageJson(m));
  const body: Record<string, any> = { model: request.model, messages };
  if (request.functions.length)
    body.tools = request.functions.map((f) => {
      const spec: Record<string, any> = { name: f.name, description: f.description, parameters: strict ? strictSchema(f.parameters) : { ...f.parameters } };
      if (strict) spec.strict = true;
      return { type: "function", function: spec };
    });
  if (request.responseSchema !== null) {
    const { name, schema } = request.responseSchema;
    body.response_format = { type: "json_schema", json_schema: strict ? { name, schema: strictSchema(schema), strict: true } : { name, schema } };
  }
  for (const [k, v] of Object.entries(request.options)) if (!OWNED.has(k)) body[k] = v;
  if (request.stream) {
    body.stream = true;
    const so: Record<string, any> = { ...(body.stream_options ?? {}) };
    if (!("include_usage" in so)) so.include_usage = true;
    body.stream_options = so;
  }
  return body;
}

// Ids made up for calls that came without one start with this (as in the Python runtime).
export const MADE_ID_PREFIX = "auwgent_call_";

/** Python's json.dumps(value, sort_keys=True): the text a request digest is taken of. */
function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return "[" + value.map(sortedJson).join(", ") + "]";
  if (value !== null && typeof value === "object")
    return "{" + Object.keys(value).sort().map((k) => `${JSON.stringify(k)}: ${sortedJson((value as Record<string, unknown>)[k])}`).join(", ") + "}";
  return pyJson(value);
}

/**
 * Numbers the calls of one response and gives an id to each that came without one (some
 * compatible endpoints send "" or no id at all). A made-up id depends only on the request, the
 * response's own id and the call's position, so it is stable however the response was chunked
 * and two rounds of one conversation never share one.
 */
class CallIds {
  responseId = "";
  private ids = new Map<number, string>();
  private digest: string | null = null;
  constructor(private body: Record<string, any>) {}

  private made(index: number): string {
    this.digest ??= createHash("sha256").update(sortedJson(this.body)).digest("hex");
    return MADE_ID_PREFIX + createHash("sha256").update(`${this.digest}|${this.responseId}|${index}`).digest("hex").slice(0, 24);
  }

  events(fragments: unknown, whole: boolean): StreamEvent[] {
    const events: StreamEvent[] = [];
    if (!Array.isArray(fragments)) return events;
    fragments.forEach((f: any, position: number) => {
      const fn = f?.function ?? {};
      const index = whole || typeof f?.index !== "number" ? position : f.index;
      let id: string | null = null;
      if (!this.ids.has(index)) {
        const given: string = (typeof f?.id === "string" && f.id) || this.made(index);
        this.ids.set(index, given);
        id = given;
      }
      events.push({ type: "tool_call_delta", index, id, name: fn.name ?? null, arguments: fn.arguments || "" });
    });
    return events;
  }
}

function deltaEvents(delta: Record<string, any>, calls: CallIds, whole = false): StreamEvent[] {
  const events: StreamEvent[] = [];
  // A refusal (structured outputs) is the model's answer too: passed on as text.
  const content = delta.content || delta.refusal;
  if (content) events.push({ type: "text", text: content });
  if (delta.tool_calls != null) events.push(...calls.events(delta.tool_calls, whole));
  return events;
}

function firstChoice(chunk: any, provider: string): Record<string, any> | null {
  if (!chunk || typeof chunk !== "object" || Array.isArray(chunk)) throw new ProviderError(provider, "unexpected response shape (not a JSON object)");
  const failure = errorInBody(chunk, provider);
  if (failure) throw failure;
  for (const choice of chunk.choices ?? []) if (choice && typeof choice === "object" && (choice.index ?? 0) === 0) return choice;
  return null;
}

function usageOf(payload: any): StreamEvent | null {
  if (!payload || typeof payload !== "object") return null;
  return { type: "usage", inputTokens: payload.prompt_tokens ?? null, outputTokens: payload.completion_tokens ?? null };
}

export class OpenAIProvider implements Provider {
  baseUrl: string;
  constructor(
    public name: string,
    baseUrl: string,
    private apiKey: string | null,
    private http: Omit<HttpSettings, "provider" | "secret">,
    private strict = true,
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
  }

  private settings(): HttpSettings {
    return { ...this.http, provider: this.name, secret: this.apiKey };
  }

  private headers(): Record<string, string> {
    return this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {};
  }

  stream(request: ModelRequest): AsyncIterable<StreamEvent> {
    const body = buildChatBody(request, { strict: this.strict });
    return retryUnstarted(() => this.once(request, body), this.http.retry);
  }

  private async *once(request: ModelRequest, body: Record<string, any>): AsyncGenerator<StreamEvent> {
    const response = await post(`${this.baseUrl}/chat/completions`, body, this.headers(), this.settings());
    if (!(request.stream && isEventStream(response))) {
      const payload = await readJson(response, this.name);
      const choice = firstChoice(payload, this.name);
      if (choice === null) throw new ProviderError(this.name, "response has no choices");
      const calls = new CallIds(body);
      calls.responseId = String(payload.id ?? "");
      // A whole message reads as one delta holding everything; its calls are numbered in order.
      for (const event of deltaEvents(choice.message ?? {}, calls, true)) yield event;
      const usage = usageOf(payload.usage);
      if (usage) yield usage;
      yield { type: "finish", reason: choice.finish_reason || "stop" };
      return;
    }
    let finish: string | null = null;
    let usage: StreamEvent | null = null;
    let done = false;
    const calls = new CallIds(body);
    for await (const data of sse(response, this.settings())) {
      if (done) continue;
      if (data.trim() === "[DONE]") {
        done = true;
        continue;
      }
      const chunk = parseChunk(data, this.name);
      const choice = firstChoice(chunk, this.name);
      usage = usageOf(chunk.usage) ?? usage;
      if (choice === null) continue;
      calls.responseId ||= String(chunk.id ?? "");
      for (const event of deltaEvents(choice.delta ?? {}, calls)) yield event;
      finish = choice.finish_reason || finish;
    }
    if (!done) throw new ProviderError(this.name, "stream ended before completion (no [DONE] marker)");
    if (usage) yield usage;
    yield { type: "finish", reason: finish ?? "stop" };
  }

  /** Embed `texts` in one /embeddings call; the options (dimensions, user, ...) go into the
   * body as written. Vectors come back in input order. */
  async embed(texts: string[], model: string, options: Record<string, any> = {}): Promise<number[][]> {
    if (!texts.length) return [];
    const response = await post(`${this.baseUrl}/embeddings`, { ...options, model, input: texts }, this.headers(), this.settings());
    const payload = await readJson(response, this.name);
    const rows = payload && Array.isArray(payload.data) ? payload.data : null;
    if (rows === null || rows.length !== texts.length) throw new ProviderError(this.name, "embeddings response does not match the input count");
    if (!rows.every((r: any) => r && Array.isArray(r.embedding))) throw new ProviderError(this.name, "embeddings response has no values");
    return [...rows].sort((a: any, b: any) => (a.index ?? 0) - (b.index ?? 0)).map((r: any) => r.embedding.map(Number));
  }
}
