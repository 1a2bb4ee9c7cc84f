// The runtime config given to auwgent({...}): read once, checked at construction. Every
// mistake is a ConfigError naming the key path; keys and meanings match the Python runtime.

import { ConfigError, ContextError } from "./errors.js";
import { frame } from "./section.js";
import { DEFAULT_LIMITS, DEFAULT_RETRY, DEFAULT_TIMEOUTS, type FetchLike, type Limits, type RetryPolicy, type Timeouts } from "./providers/http.js";
import { describe, given, validate, type IRField, type Types } from "./schema.js";
import { parseLoopDetection } from "./loops.js";
import { parseMemoryOptions, type MemoryOptions } from "./memory.js";
import { CONFIG_KEYS } from "./runtime-config.js";
import type { Agent as IRAgent, Document, Model } from "./ir.js";
import { codeLimitsOf, codeModeOf, type CodeLimits } from "./code_mode.js";

export { CONFIG_KEYS } from "./runtime-config.js";

export const DEFAULT_MAX_TOOL_LOOPS = 10;
export const DEFAULT_MAX_OUTPUT_RETRIES = 2;

export interface RuntimeOptions {
  maxToolLoops: number | null;
  maxOutputRetries: number;
  protocol: "blocks" | "native" | null;
  retry: RetryPolicy;
  timeouts: Timeouts;
  limits: Limits;
  runTimeout: number | null;
  /** Caps on model requests and tokens, per run and per conversation; null: none. */
  budget: Budget | null;
  baseUrls: Record<string, string>;
  /** How many identical calls mean no progress; null: loop detection is off. */
  loopRepeats: number | null;
  persona: string | null;
  /** The IANA zone of the date line; null: the machine's local zone. */
  timezone: string | null;
  /** Replaces the system clock for the date line. */
  clock: (() => Date) | null;
  /** OpenAI-compatible native tools and structured output carry `strict: true`. */
  strict: boolean;
  /** `httpClient.fetch`, bound: what every provider request goes through (a cassette, say). */
  fetch: FetchLike | null;
  /** Recall and background ingestion (src/memory.ts); null: memory is off. */
  memory: MemoryOptions | null;
  /** `codeMode`: null lets each config's DSL `codeMode` decide. */
  codeMode: boolean | null;
  codeLimits: CodeLimits;
}

export interface Budget {
  tokens: number | null;
  requests: number | null;
  conversationTokens: number | null;
  conversationRequests: number | null;
}

const BUDGET_KEYS = ["tokens", "requests", "conversationTokens", "conversationRequests"] as const;

function budgetOf(config: Record<string, any>): Budget | null {
  if (config.budget == null) return null;
  const given = sub(config, "budget", BUDGET_KEYS);
  const value = (key: (typeof BUDGET_KEYS)[number]) => (given[key] == null ? null : num(`budget.${key}`, given[key], true, 1));
  return { tokens: value("tokens"), requests: value("requests"), conversationTokens: value("conversationTokens"), conversationRequests: value("conversationRequests") };
}

function unknownKey(path: string, key: string, valid: readonly string[]): ConfigError {
  const hint = closest(key, valid);
  return new ConfigError(`${path}${key}: unknown config key${hint ? `; did you mean '${hint}'?` : ` (valid keys: ${valid.join(", ")})`}`);
}

/** The most similar of `names` (edit distance at most a third of the length), or null. */
export function closest(word: string, names: readonly string[]): string | null {
  let best: string | null = null;
  let bestScore = Infinity;
  for (const name of names) {
    const d = distance(word.toLowerCase(), name.toLowerCase());
    if (d < bestScore && d <= Math.max(1, Math.floor(name.length / 3))) {
      best = name;
      bestScore = d;
    }
  }
  return best;
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length]!;
}

function num(path: string, value: unknown, integer = false, minimum = 0): number {
  if (typeof value !== "number" || !Number.isFinite(value)) throw new ConfigError(`${path}: expected ${integer ? "an integer" : "a number"}, got ${JSON.stringify(value)}`);
  if (integer && !Number.isInteger(value)) throw new ConfigError(`${path}: expected an integer, got ${value}`);
  if (value < minimum) throw new ConfigError(`${path}: must be at least ${minimum}, got ${value}`);
  return value;
}

function sub(config: Record<string, any>, key: string, keys: readonly string[]): Record<string, any> {
  const value = config[key] ?? {};
  if (typeof value !== "object" || Array.isArray(value)) throw new ConfigError(`${key}: expected an object, got ${typeof value}`);
  for (const k of Object.keys(value)) if (!keys.includes(k)) throw unknownKey(`${key}.`, k, keys);
  return value;
}

export function parseOptions(config: Record<string, any>): RuntimeOptions {
  for (const key of Object.keys(config)) if (!(CONFIG_KEYS as readonly string[]).includes(key)) throw unknownKey("", key, CONFIG_KEYS);
  const loops = config.maxToolLoops ?? null;
  if (loops !== null) num("maxToolLoops", loops, true, 1);
  const retries = num("maxOutputRetries", config.maxOutputRetries ?? DEFAULT_MAX_OUTPUT_RETRIES, true, 0);
  const protocol = config.protocol ?? null;
  if (protocol !== null && protocol !== "blocks" && protocol !== "native")
    throw new ConfigError(`protocol: expected 'blocks' or 'native', got ${JSON.stringify(protocol)}`);
  const r = sub(config, "retry", ["attempts", "baseDelay", "maxDelay"]);
  const t = sub(config, "timeouts", ["connect", "firstByte", "idle", "call", "run"]);
  const l = sub(config, "limits", ["eventBytes", "responseBytes"]);
  const baseUrls = config.baseUrls ?? {};
  if (typeof baseUrls !== "object" || Array.isArray(baseUrls) || !Object.values(baseUrls).every((v) => typeof v === "string"))
    throw new ConfigError("baseUrls: expected an object of provider name → URL string");
  const strict = config.strict ?? true;
  if (typeof strict !== "boolean") throw new ConfigError(`strict: expected true or false, got ${JSON.stringify(strict)}`);
  return {
    maxToolLoops: loops,
    maxOutputRetries: retries,
    protocol,
    retry: {
      attempts: num("retry.attempts", r.attempts ?? DEFAULT_RETRY.attempts, true, 1),
      baseDelay: num("retry.baseDelay", r.baseDelay ?? DEFAULT_RETRY.baseDelay),
      maxDelay: num("retry.maxDelay", r.maxDelay ?? DEFAULT_RETRY.maxDelay),
    },
    timeouts: {
      connect: num("timeouts.connect", t.connect ?? DEFAULT_TIMEOUTS.connect),
      firstByte: num("timeouts.firstByte", t.firstByte ?? DEFAULT_TIMEOUTS.firstByte),
      idle: num("timeouts.idle", t.idle ?? DEFAULT_TIMEOUTS.idle),
      call: num("timeouts.call", t.call ?? DEFAULT_TIMEOUTS.call),
    },
    limits: {
      eventBytes: num("limits.eventBytes", l.eventBytes ?? DEFAULT_LIMITS.eventBytes, true, 1),
      responseBytes: num("limits.responseBytes", l.responseBytes ?? DEFAULT_LIMITS.responseBytes, true, 1),
    },
    budget: budgetOf(config),
    runTimeout: t.run === undefined || t.run === null ? null : num("timeouts.run", t.run),
    baseUrls: { ...baseUrls },
    loopRepeats: parseLoopDetection(config.loopDetection),
    memory: parseMemoryOptions(config.memory),
    persona: config.persona ?? null,
    timezone: timezoneOf(config.timezone),
    clock: clockOf(config.clock),
    strict,
    fetch: fetchOf(config.httpClient),
    codeMode: codeModeOf(config.codeMode),
    codeLimits: codeLimitsOf(config.codeLimits),
  };
}

/** `httpClient`: an object with a `fetch(url, init)` method, as the platform's (a `Cassette`). */
function fetchOf(client: unknown): FetchLike | null {
  if (client === undefined || client === null) return null;
  const method = typeof client === "object" ? (client as { fetch?: unknown }).fetch : undefined;
  if (typeof method !== "function")
    throw new ConfigError(`httpClient: expected an object with a fetch(url, init) method (a Cassette, say), got ${Array.isArray(client) ? "array" : typeof client}`);
  return method.bind(client) as FetchLike;
}

function timezoneOf(name: unknown): string | null {
  if (name === undefined || name === null) return null;
  if (typeof name !== "string") throw new ConfigError(`timezone: expected an IANA zone name such as 'Africa/Accra', got ${JSON.stringify(name)}`);
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: name });
  } catch {
    throw new ConfigError(`timezone: unknown time zone '${name}'; use an IANA name such as 'Africa/Accra' or 'UTC'`);
  }
  return name;
}

function clockOf(clock: unknown): (() => Date) | null {
  if (clock === undefined || clock === null) return null;
  if (typeof clock !== "function") throw new ConfigError(`clock: expected a function returning a Date, got ${typeof clock}`);
  return () => {
    const now = clock();
    if (!(now instanceof Date) || Number.isNaN(now.getTime())) throw new ConfigError("clock: the function must return a valid Date");
    return now;
  };
}

// ---------------------------------------------------------------------------------------------
// Models, keys and base URLs

export function configNames(doc: Document): string[] {
  const names = ["default"];
  for (const agent of Object.values(doc.agents)) for (const name of Object.keys(agent.configs)) if (!names.includes(name)) names.push(name);
  return names;
}

export function* modelsInUse(doc: Document): Generator<Model, void, undefined> {
  for (const agent of Object.values(doc.agents))
    for (const cfg of Object.values(agent.configs)) {
      yield cfg.model;
      yield* cfg.fallback ?? [];
      if (cfg.embedding) yield cfg.embedding;
    }
}

function camelId(ident: string): string {
  const words = ident.split(/[^0-9A-Za-z]+/).filter(Boolean);
  if (!words.length) return ident;
  return words[0]!.slice(0, 1).toLowerCase() + words[0]!.slice(1) + words.slice(1).map((w) => w.slice(0, 1).toUpperCase() + w.slice(1)).join("");
}

export function providerKey(model: Model): string {
  return model.provider === "custom" ? String(model.id) : String(model.provider);
}

export function apiKeyField(model: Model): string {
  return camelId(providerKey(model)) + "ApiKey";
}

export function apiKeyEnv(model: Model): string[] {
  if (model.provider === "gemini") return ["GEMINI_API_KEY", "GOOGLE_API_KEY"];
  if (model.provider === "openai") return ["OPENAI_API_KEY"];
  if (model.provider === "anthropic") return ["ANTHROPIC_API_KEY"];
  return [String(model.id).replace(/[^0-9A-Za-z]+/g, "_").toUpperCase().replace(/^_+|_+$/g, "") + "_API_KEY"];
}

function env(name: string): string | undefined {
  const value = typeof process !== "undefined" ? process.env[name] : undefined;
  return value ? value : undefined;
}

const OFFLINE_HINT =
  'To try the agent without a key, use the offline model: "provider": "offline" in the runtime config, or the environment variable AUWGENT_PROVIDER=offline.';

export function resolveApiKeys(doc: Document, apiKeys: unknown): Record<string, string> {
  const given = apiKeys ?? {};
  if (typeof given !== "object" || Array.isArray(given)) throw new ConfigError(`apiKeys: expected an object, got ${typeof given}`);
  const fields = new Map<string, Model>();
  for (const m of modelsInUse(doc)) fields.set(apiKeyField(m), m);
  const keys: Record<string, string> = {};
  const missing: string[] = [];
  for (const [field, model] of fields) {
    let value = (given as Record<string, unknown>)[field];
    const names = apiKeyEnv(model);
    if (value !== undefined && value !== null && typeof value !== "string")
      throw new ConfigError(`apiKeys.${field}: expected the API key as a string, got ${typeof value}`);
    if (value === undefined || value === null) value = names.map(env).find((v) => v !== undefined);
    if (typeof value !== "string" || !value) {
      missing.push(`apiKeys.${field}: missing API key for provider '${providerKey(model)}'; set it in the config or in the environment variable ${names.join(" or ")}`);
      continue;
    }
    keys[providerKey(model)] = value;
  }
  if (missing.length > 1) throw new ConfigError(`${missing.length} API keys are missing:\n${missing.map((m) => `  - ${m}`).join("\n")}\n${OFFLINE_HINT}`);
  if (missing.length) throw new ConfigError(`${missing[0]}\n${OFFLINE_HINT}`);
  return keys;
}

export function resolveBaseUrl(model: Model, baseUrls: Record<string, string>): string | null {
  const key = providerKey(model);
  if (key in baseUrls) return baseUrls[key]!;
  if (model.provider === "openai" || model.provider === "gemini" || model.provider === "anthropic") return env(`${String(model.provider).toUpperCase()}_BASE_URL`) ?? null;
  return null;
}

// ---------------------------------------------------------------------------------------------
// Context

export class ContextSchema {
  private types: Types;
  private declared = new Map<string, [string, IRField][]>();

  constructor(doc: Document) {
    this.types = doc.types;
    for (const agent of Object.values(doc.agents))
      for (const f of agent.context) {
        if (!this.declared.has(f.name)) this.declared.set(f.name, []);
        this.declared.get(f.name)!.push([agent.name, f]);
      }
  }

  check(data: unknown, path = "context"): Record<string, any> {
    if (!data || typeof data !== "object" || Array.isArray(data))
      throw new ContextError(`${path}: expected an object of context values, got ${Array.isArray(data) ? "array" : data === null ? "null" : typeof data}`);
    for (const [key, value] of Object.entries(data)) {
      for (const [agent, f] of this.declared.get(key) ?? []) {
        const errors = validate(value, f.type, this.types, `${path}.${key}`);
        if (errors.length) {
          const nested = Array.isArray(value) || (value !== null && typeof value === "object");
          throw new ContextError(
            `${path}.${key}: expected ${describe(f.type, this.types)} (declared in ${agent}'s context), got ${given(value)}` +
              (errors.length > 1 || nested ? `: ${errors[0]}` : ""),
          );
        }
      }
    }
    return { ...(data as Record<string, any>) };
  }

  missing(agent: IRAgent, values: Record<string, any>): string[] {
    return agent.context.filter((f) => !f.optional && !(f.name in values)).map((f) => f.name);
  }

  /** The context section: undeclared keys the prompt does not reference (may be empty). A
   * declared value reaches the model only through a prompt that references it. */
  section(values: Record<string, any>, referenced: Set<string>): string {
    const lines: string[] = [];
    for (const [key, value] of Object.entries(values))
      if (!this.declared.has(key) && !referenced.has(key)) lines.push(`- ${frame(key)}: ${frame(value)}`);
    return lines.length ? "Context (values supplied by the application):\n" + lines.join("\n") : "";
  }

}
