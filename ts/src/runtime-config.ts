// Generated from auwgent.runtime.config.KEYS by scripts/generate_runtime_config.py:
// do not edit. The runtime config keys the TypeScript runtime reads, and their types.

import type { Provider } from "./providers/base.js";
import type { FetchLike } from "./providers/http.js";

export const CONFIG_KEYS = [
  "apiKeys",
  "context",
  "tools",
  "middleware",
  "config",
  "baseUrls",
  "maxToolLoops",
  "maxOutputRetries",
  "protocol",
  "retry",
  "timeouts",
  "limits",
  "httpClient",
  "provider",
  "persona",
  "timezone",
  "clock",
  "memory",
  "loopDetection",
  "budget",
  "tracing",
  "tracerProvider",
  "strict",
  "approver",
  "approvals",
  "codeMode",
  "codeLimits",
  "mcp",
] as const;

/** Retries with backoff on 429, 5xx and connection errors (delays in seconds). */
export interface AuwgentRetry {
  /** Tries, the first included. */
  attempts?: number;
  baseDelay?: number;
  maxDelay?: number;
}

/** Timeouts in seconds. */
export interface AuwgentTimeouts {
  connect?: number;
  firstByte?: number;
  idle?: number;
  call?: number;
  run?: number | null;
}

/** Size caps on one event and one response from a provider, in bytes. */
export interface AuwgentLimits {
  eventBytes?: number;
  responseBytes?: number;
}

/** Caps on model requests and tokens, per run and per conversation. */
export interface AuwgentBudget {
  tokens?: number;
  requests?: number;
  conversationTokens?: number;
  conversationRequests?: number;
}

/** Code mode's limits per execute_code call (seconds, bytes, calls, characters). */
export interface AuwgentCodeLimits {
  timeout?: number;
  memory?: number;
  maxCalls?: number;
  maxOutput?: number;
}

/** The runtime config given to `auwgent({...})` (docs/runtime.md). */
export interface RuntimeConfig {
  apiKeys?: Record<string, string>;
  context?: Record<string, unknown>;
  tools?: Record<string, (args: any) => unknown>;
  /** Middleware classes or instances. */
  middleware?: object[];
  config?: string;
  baseUrls?: Record<string, string>;
  maxToolLoops?: number;
  maxOutputRetries?: number;
  protocol?: "blocks" | "native";
  retry?: AuwgentRetry;
  timeouts?: AuwgentTimeouts;
  limits?: AuwgentLimits;
  /** What every provider request goes through (a Cassette, say). */
  httpClient?: { fetch: FetchLike };
  /** A provider replacing every model; "offline" runs without a network. */
  provider?: Provider | "offline";
  persona?: string;
  /** The date line's zone, e.g. "Africa/Accra". */
  timezone?: string;
  /** Replaces the system clock. */
  clock?: () => Date;
  /** Recall and background ingestion. */
  memory?: import("./memory.js").MemoryConfig | boolean;
  /** {"repeats": N} (default 3) or false: stop a model repeating the same calls. */
  loopDetection?: { repeats?: number } | false;
  budget?: AuwgentBudget;
  /** OpenTelemetry spans with the global provider. */
  tracing?: boolean;
  /** OpenTelemetry spans with this provider. */
  tracerProvider?: { getTracer(name: string, version?: string): unknown };
  /** Native tools and structured output on OpenAI-compatible APIs carry strict: true (default true). */
  strict?: boolean;
  /** Decides on calls marked @approval (same as agent.onApproval). */
  approver?: (request: never) => unknown;
  /** "defer": every gated call pauses the run for agent.resume(). */
  approvals?: "ask" | "defer";
  /** Code mode for every agent (docs/code-mode.md). */
  codeMode?: boolean;
  codeLimits?: AuwgentCodeLimits;
  /** Per MCP server declared in the IR: env, headers, timeout, startTimeout. */
  mcp?: Record<string, { env?: Record<string, string>; headers?: Record<string, string>; timeout?: number; startTimeout?: number }>;
}
