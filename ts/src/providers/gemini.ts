// Google Gemini over its REST API (generateContent / streamGenerateContent?alt=sse,
// embedContent / batchEmbedContents). The key travels in x-goog-api-key.

import { ProviderError } from "../errors.js";
import { pyJson } from "../values.js";
import type { Message, ModelRequest, Provider, StreamEvent } from "./base.js";
import { field, MADE_ID_PREFIX, MadeIds } from "./shape.js";
import { buildOrRefuse, refuse } from "../parts.js";
import { callSettings, errorInBody, modelStream, parseChunk, post, readJson, type HttpConfig, type HttpSettings, type Reading } from "./http.js";

export const DEFAULT_GEMINI_BASE_URL = "https://generativelanguage.googleapis.com";
// Where each option goes in a generateContent request (as the Python runtime's gemini_options):
// top-level fields of the request body; the fields of an embedding request; option values that
// are API messages themselves (their keys are field names to convert). Everything else goes
// into generationConfig.
const REQUEST_LEVEL = new Set(["safetySettings", "toolConfig", "cachedContent", "labels", "serviceTier", "store", "continuationToken"]);
const GENERATION_CONFIG = new Set([
  "temperature",
  "topP",
  "topK",
  "candidateCount",
  "maxOutputTokens",
  "stopSequences",
  "responseLogprobs",
  "logprobs",
  "presencePenalty",
  "frequencyPenalty",
  "seed",
  "responseMimeType",
  "responseSchema",
  "responseJsonSchema",
  "responseModalities",
  "mediaResolution",
  "speechConfig",
  "thinkingConfig",
  "imageConfig",
  "enableEnhancedCivicAnswers",
  "audioTranscriptionConfig",
]);
const EMBEDDING = new Set(["taskType", "title", "outputDimensionality"]);
const MESSAGE_VALUED = new Set(["thinkingConfig", "toolConfig", "speechConfig", "imageConfig", "audioTranscriptionConfig"]);
const FINISH: Record<string, string> = {
  STOP: "stop",
  MAX_TOKENS: "length",
  SAFETY: "content_filter",
  RECITATION: "content_filter",
  BLOCKLIST: "content_filter",
  PROHIBITED_CONTENT: "content_filter",
  SPII: "content_filter",
  IMAGE_SAFETY: "content_filter",
  IMAGE_PROHIBITED_CONTENT: "content_filter",
  IMAGE_RECITATION: "content_filter",
  MODEL_ARMOR: "content_filter",
  MALFORMED_FUNCTION_CALL: "malformed_function_call",
};

function camel(key: string): string {
  const [head, ...rest] = key.split("_");
  return head + rest.map((p) => p.slice(0, 1).toUpperCase() + p.slice(1)).join("");
}

function camelDeep(value: any): any {
  if (Array.isArray(value)) return value.map(camelDeep);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [camel(k), camelDeep(v)]));
  return value;
}

/**
 * Split DSL options into [request-level fields, generationConfig fields]. Keys become
 * lowerCamelCase; values are left untouched except inside the option objects that are API
 * messages themselves. `generation_config: {...}` is merged into generationConfig; embedding
 * options are left out (see embeddingOptions); a key of no known place goes into
 * generationConfig (the compiler reports those).
 */
export function geminiOptions(options: Record<string, any>): [Record<string, any>, Record<string, any>] {
  const top: Record<string, any> = {};
  const config: Record<string, any> = {};
  for (const [key, value] of Object.entries(options)) {
    const name = camel(key);
    if (name === "generationConfig" && value && typeof value === "object" && !Array.isArray(value)) Object.assign(config, configFields(value));
    else if (REQUEST_LEVEL.has(name)) top[name] = MESSAGE_VALUED.has(name) ? camelDeep(value) : value;
    else if (EMBEDDING.has(name)) continue; // a model serving as an embedding model too: not for chat
    else Object.assign(config, configFields({ [key]: value }));
  }
  return [top, config];
}

function configFields(options: Record<string, any>): Record<string, any> {
  const fields: Record<string, any> = {};
  for (const [key, value] of Object.entries(options)) {
    const name = camel(key);
    fields[name] = MESSAGE_VALUED.has(name) ? camelDeep(value) : value;
  }
  return fields;
}

/** The fields an embedding request gets from an option object: all but the chat ones. */
export function embeddingOptions(options: Record<string, any>): Record<string, any> {
  const out: Record<string, any> = {};
  for (const [key, value] of Object.entries(options)) {
    const name = camel(key);
    if (!GENERATION_CONFIG.has(name) && !REQUEST_LEVEL.has(name) && name !== "generationConfig") out[name] = value;
  }
  return out;
}

export function buildGeminiBody(request: ModelRequest, signatures: Map<string, string> = new Map()): Record<string, any> {
  const contents: Record<string, any>[] = [];
  const names = new Map<string, string>();
  for (const m of request.messages) addMessage(contents, names, signatures, m);
  const body: Record<string, any> = { contents };
  if (request.system) body.systemInstruction = { parts: [{ text: request.system }], role: "user" };
  if (request.functions.length)
    body.tools = [{ functionDeclarations: request.functions.map((f) => ({ name: f.name, description: f.description, parametersJsonSchema: { ...f.parameters } })) }];
  const [top, config] = geminiOptions(request.options);
  if (request.responseSchema !== null) {
    config.responseMimeType = "application/json";
    config.responseJsonSchema = request.responseSchema.schema;
  }
  if (Object.keys(config).length) body.generationConfig = config;
  Object.assign(body, top);
  return body;
}

function addMessage(contents: Record<string, any>[], names: Map<string, string>, signatures: Map<string, string>, m: Message): void {
  if (m.role === "tool") {
    let value: any;
    try {
      value = JSON.parse(m.content);
    } catch {
      value = m.content;
    }
    const response = value && typeof value === "object" && !Array.isArray(value) ? value : { result: value };
    const callId = m.tool_call_id ?? "";
    const part: Record<string, any> = { name: m.name ?? names.get(callId) ?? "", response };
    if (callId && !callId.startsWith(MADE_ID_PREFIX)) part.id = callId;
    if (m.parts?.length) part.parts = userParts(m.parts); // images the tool returned
    const last = contents[contents.length - 1];
    if (last && last.role === "user" && "functionResponse" in last.parts[0]) last.parts.push({ functionResponse: part });
    else contents.push({ role: "user", parts: [{ functionResponse: part }] });
  } else if (m.role === "assistant") {
    const parts: Record<string, any>[] = m.content ? [{ text: m.content }] : [];
    for (const call of m.tool_calls ?? []) {
      names.set(call.id, call.name);
      let args: any;
      try {
        args = call.arguments.trim() ? JSON.parse(call.arguments) : {};
      } catch {
        args = {};
      }
      if (!args || typeof args !== "object" || Array.isArray(args)) args = { value: args };
      const fc: Record<string, any> = { name: call.name, args };
      if (!call.id.startsWith(MADE_ID_PREFIX)) fc.id = call.id;
      const part: Record<string, any> = { functionCall: fc };
      const sig = signatures.get(call.id);
      if (sig) part.thoughtSignature = sig;
      parts.push(part);
    }
    contents.push({ role: "model", parts: parts.length ? parts : [{ text: "" }] });
  } else if (m.parts && m.parts.length) contents.push({ role: "user", parts: userParts(m.parts) });
  else contents.push({ role: "user", parts: [{ text: m.content }] });
}

/** User content parts in Gemini's shape: `text`, `inlineData` (the data in URL-safe base64, as
 * the google-genai SDK writes bytes), `fileData` (a URL; Gemini needs its media type). */
function userParts(parts: Record<string, any>[]): Record<string, any>[] {
  return parts.map((part, index) => {
    if (part.type === "text") return { text: part.text };
    if ("data" in part) return { inlineData: { data: part.data.replace(/\+/g, "-").replace(/\//g, "_"), mimeType: part.media_type } };
    if (part.media_type == null) throw refuse(index, part, "Gemini needs the media_type of a URL part");
    return { fileData: { fileUri: part.url, mimeType: part.media_type } };
  });
}

// Keys of a part that describe it rather than carry answer content.
const PART_META = new Set(["thought", "thoughtSignature", "partMetadata", "videoMetadata"]);

/** Turns GenerateContentResponse objects (one per SSE event, or one whole) into events; a new
 * one for every attempt (see modelStream). */
class Decoder implements Reading<StreamEvent> {
  calls = 0;
  usage: StreamEvent | null = null;
  finish: string | null = null;
  raw: string | null = null;
  message: string | null = null;
  constructor(
    private provider: string,
    private signatures: Map<string, string>,
    private made: MadeIds,
  ) {}

  whole(payload: any): StreamEvent[] {
    return (Array.isArray(payload) ? payload : [payload]).flatMap((item) => this.feed(item));
  }

  events(payloads: string[]): StreamEvent[] {
    return payloads.flatMap((data) => this.feed(parseChunk(data, this.provider)));
  }

  private feed(chunk: any): StreamEvent[] {
    const provider = this.provider;
    if (!chunk || typeof chunk !== "object" || Array.isArray(chunk)) throw new ProviderError(provider, "unexpected response shape (not a JSON object)");
    const failure = errorInBody(chunk, provider);
    if (failure) throw failure;
    this.made.responseId ||= String(chunk.responseId ?? "");
    this.noteUsage(field(provider, "usageMetadata", chunk.usageMetadata, "object"));
    const feedback = field(provider, "promptFeedback", chunk.promptFeedback, "object") ?? {};
    if (feedback.blockReason) {
      this.finish = "content_filter";
      this.raw = String(feedback.blockReason);
      this.message = feedback.blockReasonMessage || this.message;
    }
    const candidates = field(provider, "candidates", chunk.candidates, "list") ?? [];
    if (!candidates.length) return [];
    const candidate = field(provider, "candidates[0]", candidates[0], "object", false);
    const content = field(provider, "candidates[0].content", candidate.content, "object") ?? {};
    const parts = field(provider, "candidates[0].content.parts", content.parts, "list") ?? [];
    const events: StreamEvent[] = [];
    for (const part of parts) this.part(part, events);
    const reason = field(provider, "candidates[0].finishReason", candidate.finishReason, "string");
    if (reason) {
      this.finish = FINISH[reason] ?? reason.toLowerCase();
      this.raw = reason;
      this.message = candidate.finishMessage || this.message;
    }
    return events;
  }

  private part(part: any, events: StreamEvent[]): void {
    const where = "candidates[0].content.parts[]";
    field(this.provider, where, part, "object", false);
    if (part.thought) return; // thinking summaries are not the answer
    if ("functionCall" in part) events.push(this.call(part));
    else if ("text" in part) {
      const text = field(this.provider, where, part.text, "string", true, ".text");
      if (text) events.push({ type: "text", text });
    } else {
      // Anything else (inlineData, fileData, executableCode, codeExecutionResult, ...) is
      // passed on as it came: never silently dropped.
      for (const [kind, data] of Object.entries(part)) if (!PART_META.has(kind)) events.push({ type: "part", kind, data });
    }
  }

  private call(part: any): StreamEvent {
    const provider = this.provider;
    const where = "candidates[0].content.parts[].functionCall";
    const call = field(provider, where, part.functionCall, "object", false);
    const name = field(provider, where, call.name, "string", false, ".name");
    const args = field(provider, where, call.args, "object", true, ".args") ?? {};
    const id = field(provider, where, call.id, "string", true, ".id") || this.made.id(this.calls);
    const signature = field(provider, "thoughtSignature", part.thoughtSignature, "string");
    if (signature) this.signatures.set(id, signature);
    return { type: "tool_call_delta", index: this.calls++, id, name, arguments: pyJson(args) };
  }

  private noteUsage(meta: Record<string, any> | null): void {
    if (meta === null) return;
    const count = (name: string): number | null => field(this.provider, `usageMetadata.${name}`, meta[name], "integer");
    let output = count("candidatesTokenCount");
    const thoughts = count("thoughtsTokenCount");
    if (thoughts !== null) output = (output ?? 0) + thoughts;
    this.usage = { type: "usage", inputTokens: count("promptTokenCount"), outputTokens: output };
  }

  end(): StreamEvent[] {
    if (this.finish === null) throw new ProviderError(this.provider, "stream ended before completion (no finishReason received)");
    const reason = this.finish === "stop" && this.calls ? "tool_calls" : this.finish;
    return [...(this.usage ? [this.usage] : []), { type: "finish", reason, raw: this.raw, message: this.message }];
  }
}

function modelPath(model: string): string {
  return model.includes("/") ? model : `models/${model}`;
}

export class GeminiProvider implements Provider {
  baseUrl: string;
  private signatures = new Map<string, string>();
  constructor(
    public name: string,
    baseUrl: string,
    private apiKey: string | null,
    private http: HttpConfig,
  ) {
    const base = baseUrl.replace(/\/+$/, "");
    this.baseUrl = base.endsWith("/v1beta") || base.endsWith("/v1") ? base : `${base}/v1beta`;
  }

  /** The settings of a new call; `whole` for a model call not streamed. */
  private settings(whole = false): HttpSettings {
    return callSettings(this.http, this.name, this.apiKey, whole);
  }

  private post(model: string, method: string, body: unknown, call: HttpSettings): Promise<Response> {
    const headers: Record<string, string> = this.apiKey ? { "x-goog-api-key": this.apiKey } : {};
    return post(`${this.baseUrl}/${modelPath(model)}:${method}`, body, headers, call);
  }

  stream(request: ModelRequest): AsyncIterable<StreamEvent> {
    const body = buildOrRefuse(this.name, () => buildGeminiBody(request, this.signatures));
    const call = this.settings(!request.stream);
    const method = request.stream ? "streamGenerateContent?alt=sse" : "generateContent";
    return modelStream(
      call,
      request.stream,
      () => this.post(request.model, method, body, call),
      () => new Decoder(this.name, this.signatures, new MadeIds(body)),
    );
  }

  /**
   * Embed `texts` with one batchEmbedContents call (one text or several). The options
   * (output_dimensionality, task_type, title, ...) become fields of each request, in
   * lowerCamelCase.
   */
  async embed(texts: string[], model: string, options: Record<string, any> = {}): Promise<number[][]> {
    if (!texts.length) return [];
    const path = modelPath(model);
    const extra = embeddingOptions(options);
    const body = { requests: texts.map((text) => ({ ...extra, model: path, content: { parts: [{ text }], role: "user" } })) };
    const call = this.settings();
    const payload = await readJson(await this.post(model, "batchEmbedContents", body, call), call);
    const rows = payload?.embeddings;
    if (!Array.isArray(rows) || rows.length !== texts.length) throw new ProviderError(this.name, "embeddings response does not match the input count");
    return rows.map((row) => {
      if (!row || !Array.isArray(row.values)) throw new ProviderError(this.name, "embeddings response has no values");
      return row.values.map(Number);
    });
  }
}
