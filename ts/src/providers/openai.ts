// OpenAI Chat Completions, for openai(...) and every custom(id, base_url, model).

import { ProviderError } from "../errors.js";
import { pyJson } from "../values.js";
import type { Message, ModelRequest, Provider, StreamEvent } from "./base.js";
import { field, MadeIds, type Kind } from "./shape.js";
import { buildOrRefuse, dataUrl, refuse, WEB_SCHEMES } from "../parts.js";
import { callSettings, errorInBody, modelStream, parseChunk, post, readJson, type HttpConfig, type HttpSettings, type Reading } from "./http.js";

export const DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1";
const OWNED = new Set(["model", "messages", "stream"]);

/** The filename sent with a file part that has none (Chat Completions requires one). */
export const DEFAULT_FILENAME = "document.pdf";

/** User content parts in Chat Completions' shape: `text`, `image_url` (a URL or a data: URL),
 * `file` (`file_data` as a data: URL with a filename). */
function contentParts(parts: Record<string, any>[]): Record<string, any>[] {
  return parts.map((part, index) => {
    if (part.type === "text") return { type: "text", text: part.text };
    if (part.type === "image") {
      if ("url" in part && !WEB_SCHEMES.some((s) => part.url.startsWith(s))) throw refuse(index, part, "Chat Completions fetches http(s) image URLs only");
      return { type: "image_url", image_url: { url: "url" in part ? part.url : dataUrl(part) } };
    }
    if ("url" in part) throw refuse(index, part, "Chat Completions takes files as base64 data only");
    return { type: "file", file: { file_data: dataUrl(part), filename: part.filename ?? DEFAULT_FILENAME } };
  });
}

function messageJson(m: Message): Record<string, any> {
  if (m.role === "tool") return { role: "tool", tool_call_id: m.tool_call_id ?? "", content: m.content };
  if (m.role === "assistant" && m.tool_calls && m.tool_calls.length)
    return {
      role: "assistant",
      content: m.content || null,
      tool_calls: m.tool_calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })),
    };
  if (m.parts && m.parts.length) return { role: m.role, content: contentParts(m.parts) };
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
  // Images that tools returned follow their round's `tool` messages as one user message (a
  // `tool` message holds text only).
  let shown: Record<string, any>[] = [];
  request.messages.forEach((m, i) => {
    messages.push(messageJson(m));
    if (m.role === "tool" && m.parts?.length)
      shown.push({ type: "text", text: `The tool call ${m.tool_call_id} returned these images:` }, ...contentParts(m.parts));
    if (shown.length && request.messages[i + 1]?.role !== "tool") {
      messages.push({ role: "user", content: shown });
      shown = [];
    }
  });
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

/**
 * Numbers the calls of one response and gives an id to each that came without one (some
 * compatible endpoints send "" or no id at all). A made-up id depends only on the request, the
 * response's own id and the call's position, so it is stable however the response was chunked
 * and two rounds of one conversation never share one.
 */
class CallIds extends MadeIds {
  private ids = new Map<number, string>();
  constructor(
    private provider: string,
    body: Record<string, any>,
  ) {
    super(body);
  }

  events(where: string, fragments: unknown, whole: boolean): StreamEvent[] {
    const provider = this.provider;
    const events: StreamEvent[] = [];
    const list: any[] = field(provider, where, fragments, "list") ?? [];
    list.forEach((f: any, position: number) => {
      field(provider, where, f, "object", false, "[]");
      const given = field(provider, where, f.index, "integer", true, "[].index");
      const index = whole || given === null ? position : given;
      const fn = field(provider, where, f.function, "object", true, "[].function") ?? {};
      let id: string | null = field(provider, where, f.id, "string", true, "[].id");
      if (!this.ids.has(index)) {
        // Some compatible endpoints send "" or no id at all; a made-up stable one keeps the
        // history valid (each tool answer names the call it answers).
        this.ids.set(index, id || this.id(index));
        id = this.ids.get(index)!;
      } else id = null;
      const name = field(provider, where, fn.name, "string", true, "[].function.name");
      const args = field(provider, where, fn.arguments, "string", true, "[].function.arguments") || "";
      events.push({ type: "tool_call_delta", index, id, name, arguments: args });
    });
    return events;
  }
}

// Parts of list-valued content that are reasoning, not the answer.
const REASONING_PARTS = new Set(["thinking", "reasoning"]);

const TEXT_OR_PARTS: Kind[] = ["string", "list"];

/** The events of a message's or delta's `content` (`where` names the message or delta). */
function contentEvents(provider: string, where: string, content: unknown): StreamEvent[] {
  if (typeof content === "string") return content ? [{ type: "text", text: content }] : [];
  const events: StreamEvent[] = [];
  // Some vendors (Mistral's reasoning models) send a list of typed parts.
  for (const part of field(provider, where, content, TEXT_OR_PARTS, true, ".content") ?? []) {
    field(provider, where, part, "object", false, ".content[]");
    const kind = part.type;
    if (kind === "text") {
      const text = field(provider, where, part.text, "string", true, ".content[].text");
      if (text) events.push({ type: "text", text });
    } else if (!REASONING_PARTS.has(kind)) events.push({ type: "part", kind: String(kind), data: part });
  }
  return events;
}

function deltaEvents(provider: string, where: string, delta: any, calls: CallIds, whole = false): StreamEvent[] {
  field(provider, where, delta, "object");
  if (!delta) return [];
  // A refusal (structured outputs) is the model's answer too: passed on as text rather than
  // an empty reply that would hide why.
  const events = contentEvents(provider, where, delta.content);
  if (!events.length) {
    const refusal = field(provider, where, delta.refusal, "string", true, ".refusal");
    if (refusal) events.push({ type: "text", text: refusal });
  }
  if (delta.tool_calls != null) events.push(...calls.events(`${where}.tool_calls`, delta.tool_calls, whole));
  return events;
}

function firstChoice(chunk: any, provider: string): Record<string, any> | null {
  if (!chunk || typeof chunk !== "object" || Array.isArray(chunk)) throw new ProviderError(provider, "unexpected response shape (not a JSON object)");
  const failure = errorInBody(chunk, provider);
  if (failure) throw failure;
  for (const item of field(provider, "choices", chunk.choices, "list") ?? []) {
    const choice = field(provider, "choices[]", item, "object", false);
    if ((field(provider, "choices[].index", choice.index, "integer") ?? 0) === 0) return choice;
  }
  return null;
}

function usageOf(payload: any, provider: string): StreamEvent | null {
  if (!payload || typeof payload !== "object" || Array.isArray(payload)) return null;
  return {
    type: "usage",
    inputTokens: field(provider, "usage.prompt_tokens", payload.prompt_tokens, "integer"),
    outputTokens: field(provider, "usage.completion_tokens", payload.completion_tokens, "integer"),
  };
}

function finishOf(provider: string, choice: Record<string, any>): string | null {
  return field(provider, "choices[0].finish_reason", choice.finish_reason, "string");
}

/** The events of one answer of Chat Completions, whole or streamed (see modelStream). */
class ChatReading implements Reading<StreamEvent> {
  private finish: string | null = null;
  private usage: StreamEvent | null = null;
  /** The stream's [DONE] marker came (a whole answer is done by itself). */
  private done = false;
  private calls: CallIds;

  constructor(
    private name: string,
    body: Record<string, any>,
  ) {
    this.calls = new CallIds(name, body);
  }

  whole(payload: any): StreamEvent[] {
    const name = this.name;
    const choice = firstChoice(payload, name);
    if (choice === null) throw new ProviderError(name, "response has no choices");
    this.calls.responseId = String(payload.id ?? "");
    // A whole message reads as one delta holding everything; its calls are numbered in order.
    const events = deltaEvents(name, "choices[0].message", choice.message, this.calls, true);
    this.usage = usageOf(payload.usage, name);
    this.finish = finishOf(name, choice) || "stop";
    this.done = true;
    return events;
  }

  events(payloads: string[]): StreamEvent[] {
    const name = this.name;
    const events: StreamEvent[] = [];
    for (const data of payloads) {
      if (this.done) continue;
      if (data.trim() === "[DONE]") {
        this.done = true;
        continue;
      }
      const chunk = parseChunk(data, name);
      const choice = firstChoice(chunk, name);
      this.usage = usageOf(chunk.usage, name) ?? this.usage;
      if (choice === null) continue;
      this.calls.responseId ||= String(chunk.id ?? "");
      for (const event of deltaEvents(name, "choices[0].delta", choice.delta, this.calls)) events.push(event);
      this.finish = finishOf(name, choice) || this.finish;
    }
    return events;
  }

  end(): StreamEvent[] {
    if (!this.done) throw new ProviderError(this.name, "stream ended before completion (no [DONE] marker)");
    const finish: StreamEvent = { type: "finish", reason: this.finish ?? "stop" };
    return this.usage ? [this.usage, finish] : [finish];
  }
}

export class OpenAIProvider implements Provider {
  baseUrl: string;
  constructor(
    public name: string,
    baseUrl: string,
    private apiKey: string | null,
    private http: HttpConfig,
    private strict = true,
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
  }

  /** The settings of a new call; `whole` for a model call not streamed. */
  private settings(whole = false): HttpSettings {
    return callSettings(this.http, this.name, this.apiKey, whole);
  }

  private headers(): Record<string, string> {
    return this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {};
  }

  stream(request: ModelRequest): AsyncIterable<StreamEvent> {
    const body = buildOrRefuse(this.name, () => buildChatBody(request, { strict: this.strict }));
    const call = this.settings(!request.stream);
    const url = `${this.baseUrl}/chat/completions`;
    return modelStream(call, request.stream, () => post(url, body, this.headers(), call), () => new ChatReading(this.name, body));
  }

  /** Embed `texts` in one /embeddings call; the options (dimensions, user, ...) go into the
   * body as written. Vectors come back in input order. */
  async embed(texts: string[], model: string, options: Record<string, any> = {}): Promise<number[][]> {
    if (!texts.length) return [];
    const call = this.settings();
    const response = await post(`${this.baseUrl}/embeddings`, { ...options, model, input: texts }, this.headers(), call);
    const payload = await readJson(response, call);
    const rows = payload && Array.isArray(payload.data) ? payload.data : null;
    if (rows === null || rows.length !== texts.length) throw new ProviderError(this.name, "embeddings response does not match the input count");
    if (!rows.every((r: any) => r && Array.isArray(r.embedding))) throw new ProviderError(this.name, "embeddings response has no values");
    return [...rows].sort((a: any, b: any) => (a.index ?? 0) - (b.index ?? 0)).map((r: any) => r.embedding.map(Number));
  }
}
