// auwgent: the TypeScript runtime of Auwgent. Generated
// `<stem>.agent.types.ts` files import it; applications mostly use what those files export.

export { Agent, AgentCore, createAgent, irHash, nowLine, BUILTIN_INTENTS, HOOKS, IR_VERSION, RUNTIME_VERSION } from "./agent.js";
export { CONFIG_KEYS } from "./config.js";
export type { IntentEvent, IRMeta, RunOptions } from "./agent.js";
export { ApprovalError, AuwgentError, ConfigError, ConflictError, ContextError, FallbackError, InputError, ProviderError, ToolError, UnsupportedError, WorkflowError } from "./errors.js";
export { checkInput, file, image, text, toolParts, ToolParts, FILE_MEDIA_TYPES, IMAGE_MEDIA_TYPES, MAX_PART_BYTES } from "./parts.js";
export type { FilePart, ImagePart, Input, Part, TextPart } from "./parts.js";
export { BlocksDecoder, BlocksCodec } from "./blocks.js";
export type { DecodeEvent, FinalEvent, PartialEvent, RejectedEvent } from "./blocks.js";
export { renderPrompt } from "./prompts.js";
export { evaluate, renderValue, truthy } from "./expr.js";
export { coerce, validate, describe, toJsonSchema } from "./schema.js";
export { parseBody, parseValue, pyJson, MAX_BODY_CHARS, MAX_DEPTH } from "./values.js";
export type { Repair } from "./values.js";
export { blocksSection } from "./section.js";
export type { Contract, CallableSpec } from "./section.js";
export { buildChatBody, strictSchema } from "./providers/openai.js";
export { buildGeminiBody } from "./providers/gemini.js";
export { buildMessagesBody } from "./providers/anthropic.js";
export type { Message, ModelRequest, Provider, StreamEvent, FunctionSpec } from "./providers/base.js";
export type { SessionState, Turn, Frame, ModelCall, Usage } from "./session.js";
export type { Middleware, MiddlewareContext, IntentControl } from "./types.js";
export { blockText, hashedEmbedding, NativeCall, Reply, replyEvents, ScriptedFailure, ScriptedModel } from "./providers/scripted.js";
export type { EmbeddingFunction, ReplyOptions, Response, ScriptFunction, ScriptedOptions } from "./providers/scripted.js";
export { OfflineModel } from "./providers/offline.js";
export { Cassette, CassetteMiss, CASSETTE_VERSION, normaliseRequest } from "./cassette.js";
export type { CassetteMode, CassetteOptions, Interaction, RecordedRequest } from "./cassette.js";
export type { FetchLike } from "./providers/http.js";
export { BLOB_THRESHOLD, MemorySessionStore, SessionStoreError, SessionStoreMiddleware, SQLiteSessionStore, StoredSessionError } from "./stores.js";
export type { SessionStore } from "./stores.js";
export { openStore, PostgresSessionStore, RedisSessionStore } from "./stores_net.js";
export type { RedisClient } from "./stores_net.js";
