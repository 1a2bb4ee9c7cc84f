// The one interface between the engine and a model provider: a request in the runtime's
// neutral message form, an async stream of neutral events out.

export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

export interface Message {
  role: "user" | "assistant" | "tool";
  content: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string | null;
  name?: string | null;
  /** The model's reasoning that the provider wants back with this assistant message, as it
   * sent it (Anthropic's `thinking` blocks with their signatures, `redacted_thinking`): each a
   * part whose `data` is the block. Never answer text. */
  reasoning?: { kind: string; data: unknown }[];
  /** A user message given as parts (text, image, file: src/parts.ts, checked), in order;
   * `content` then holds their text. */
  parts?: Record<string, any>[];
}

/** The kinds of parts that are the model's reasoning: kept with the assistant message in
 * history (`Message.reasoning`), never answer text. */
export const REASONING_KINDS = new Set(["thinking", "redacted_thinking"]);

export interface FunctionSpec {
  name: string;
  description: string;
  parameters: Record<string, any>;
}

export interface ModelRequest {
  model: string;
  system: string;
  messages: Message[];
  functions: FunctionSpec[];
  responseSchema: Record<string, any> | null;
  options: Record<string, any>;
  stream: boolean;
  contract?: unknown;
}

export type StreamEvent =
  | { type: "text"; text: string }
  | { type: "tool_call_delta"; index: number; id?: string | null; name?: string | null; arguments: string }
  /** `inputTokens` counts the whole prompt, cached parts included; the cache counts say how
   * much of it was read from or written to the provider's prompt cache (Anthropic). */
  | { type: "usage"; inputTokens: number | null; outputTokens: number | null; cacheReadTokens?: number | null; cacheWriteTokens?: number | null }
  /** Why the model stopped, in OpenAI's words ("stop", "tool_calls", "length",
   * "content_filter", ...); `raw` the provider's own reason where it differs (Gemini's
   * `SAFETY`), `message` any explanation the provider gave with it. */
  | { type: "finish"; reason: string; raw?: string | null; message?: string | null }
  /** A piece of the answer that is neither text nor a call (an image, code the model ran),
   * as it came on the wire: kept in the turn's `parts`, never silently dropped. */
  | { type: "part"; kind: string; data: unknown };

export type FinishEvent = Extract<StreamEvent, { type: "finish" }>;

export interface Provider {
  name: string;
  stream(request: ModelRequest): AsyncIterable<StreamEvent>;
  /** `options`: the embedding model's options from the IR (provider-specific fields). */
  embed(texts: string[], model: string, options?: Record<string, any>): Promise<number[][]>;
}
