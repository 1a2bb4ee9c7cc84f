// The agent API: createAgent (called by the generated auwgent(config) factory) and Agent.
// Construction checks everything it can (IR version, config keys, API keys, context types,
// tools, middleware, named config); running never throws for what a model, a tool or a
// handler does: failures become `error` / `tool_error` intents and the session is returned.

import { createHash } from "node:crypto";
import { BlocksCodec, type Codec } from "./blocks.js";
import { Calibration } from "./budget.js";
import {
  closest,
  configNames,
  ContextSchema,
  DEFAULT_MAX_TOOL_LOOPS,
  parseOptions,
  providerKey,
  resolveApiKeys,
  resolveBaseUrl,
  type RuntimeOptions,
} from "./config.js";
import { COMPLETE_SPEC, helperParams, Invocation, Run, type IntentSink } from "./engine.js";
import { ConfigError, UnsupportedError } from "./errors.js";
import { Tracing } from "./tracing.js";
import { McpServers, mcpTools } from "./mcp.js";
import { NativeCodec } from "./native.js";
import { renderBody, renderPrompt, referencedContextKeys, schemaTextFor } from "./prompts.js";
import type { Example, Agent as IRAgent, Document, Model, Tool } from "./ir.js";
import type { FunctionSpec, Provider } from "./providers/base.js";
import { AnthropicProvider, DEFAULT_ANTHROPIC_BASE_URL } from "./providers/anthropic.js";
import { DEFAULT_GEMINI_BASE_URL, GeminiProvider } from "./providers/gemini.js";
import { OfflineModel } from "./providers/offline.js";
import { pyRepr } from "./values.js";
import { DEFAULT_OPENAI_BASE_URL, OpenAIProvider } from "./providers/openai.js";
import type { CallableSpec, Contract } from "./section.js";
import type { SessionState } from "./session.js";
import { checkInput, type Input } from "./parts.js";
import { Ingestion } from "./memory.js";
import { approvalOptions, checkApprover, resumeAgent, type ApprovalOptions, type Approver, type ResumeOptions } from "./approvals.js";
import { codeContract, codeModeEnabled, codeModeWanted, requireSandbox } from "./code_mode.js";

export const IR_VERSION = 1;
export const RUNTIME_VERSION = "0.1.0";

export const BUILTIN_INTENTS = [
  "response_text",
  "response_schema",
  "tool_call",
  "tool_result",
  "tool_skipped",
  "tool_error",
  "workflow_call",
  "workflow_result",
  "helper_call",
  "helper_result",
  "approval_request",
  "tainted_call",
  "approval_result",
  "error",
  "context_compacted",
  "handoff_complete",
] as const;

export const HOOKS = ["onRunStart", "onLLMStart", "onIntent", "onIntentPartial", "onLLMEnd", "onRunComplete", "onError"] as const;
type Hook = (typeof HOOKS)[number];
type Fn = (...args: any[]) => any;
/** An `onIntent` / `onIntentPartial` handler, with how messages name it. */
export interface Handler {
  label: string;
  call: (name: string, value: any, agentName: string) => Promise<unknown>;
}

/** A handler or middleware that threw on an intent: who (as messages name it) and what. */
export type HookFailure = [who: string, error: unknown];

class MiddlewareChain {
  private entries: { label: string; targets: Set<string> | null; hooks: Partial<Record<Hook, Fn>> }[] = [];
  private hooks = new Set<Hook>();
  hasIntent = false;
  hasPartial = false;

  constructor(middleware: unknown) {
    if (middleware == null) return;
    if (!Array.isArray(middleware)) throw new ConfigError(`middleware: expected a list of middleware objects, got ${typeof middleware}`);
    middleware.forEach((item: any, i: number) => {
      if (!item || typeof item !== "object") throw new ConfigError(`middleware[${i}]: expected a middleware object`);
      const target = item.target;
      let targets: Set<string> | null = null;
      if (typeof target === "string") targets = new Set([target]);
      else if (Array.isArray(target) && target.every((t) => typeof t === "string")) targets = new Set(target);
      else if (target != null) throw new ConfigError(`middleware[${i}].target: expected an agent name or a list of names, got ${JSON.stringify(target)}`);
      const hooks: Partial<Record<Hook, Fn>> = {};
      for (const hook of HOOKS) {
        const fn = item[hook];
        if (fn == null) continue;
        if (typeof fn !== "function") throw new ConfigError(`middleware[${i}].${hook}: expected a function`);
        hooks[hook] = fn.bind(item);
      }
      const label = typeof item.name === "string" && item.name ? item.name : `middleware[${i}]`;
      this.entries.push({ label, targets, hooks });
    });
    for (const e of this.entries) for (const hook in e.hooks) this.hooks.add(hook as Hook);
    this.hasIntent = this.hooks.has("onIntent");
    this.hasPartial = this.hooks.has("onIntentPartial");
  }

  /** Whether some middleware has `hook` (the engine skips a hook point, and its promise, when
   * none does). */
  has(hook: Hook): boolean {
    return this.hooks.has(hook);
  }

  /** Whether a middleware that applies to `active` has `onError` or `onIntent`. */
  hearsErrors(active: string): boolean {
    return this.entries.some((e) => (e.hooks.onError || e.hooks.onIntent) && (e.targets === null || e.targets.has(active)));
  }

  private for(hook: Hook, active: string): Fn[] {
    const out: Fn[] = [];
    for (const e of this.entries) if (e.hooks[hook] && (e.targets === null || e.targets.has(active))) out.push(e.hooks[hook]!);
    return out;
  }
  async runStart(session: any, ctx: any): Promise<any> {
    for (const fn of this.for("onRunStart", ctx.activeAgent)) {
      const returned = await fn(session, ctx);
      if (returned != null) session = returned;
    }
    return session;
  }
  async llmStart(prompt: string, ctx: any): Promise<string> {
    for (const fn of this.for("onLLMStart", ctx.activeAgent)) {
      const returned = await fn(prompt, ctx);
      if (typeof returned === "string") prompt = returned;
    }
    return prompt;
  }
  /** Every `hook` of the middleware that applies, each isolated: one that throws adds to
   * `failures` and the others still run. Returns `[who, what it returned]`, in order. */
  async each(hook: "onIntent" | "onIntentPartial", name: string, value: unknown, ctx: any, failures: HookFailure[]): Promise<[string, unknown][]> {
    const results: [string, unknown][] = [];
    for (const e of this.entries) {
      const fn = e.hooks[hook];
      if (!fn || (e.targets !== null && !e.targets.has(ctx.activeAgent))) continue;
      const who = `middleware '${e.label}'`;
      try {
        results.push([who, await fn(name, value, ctx)]);
      } catch (error) {
        failures.push([who, error]);
      }
    }
    return results;
  }
  async llmEnd(response: unknown, ctx: any): Promise<void> {
    for (const fn of this.for("onLLMEnd", ctx.activeAgent)) await fn(response, ctx);
  }
  async runComplete(session: unknown, ctx: any): Promise<void> {
    for (const fn of this.for("onRunComplete", ctx.activeAgent)) await fn(session, ctx);
  }
  async error(error: unknown, session: unknown, ctx: any): Promise<boolean> {
    let handled = false;
    for (const fn of this.for("onError", ctx.activeAgent)) if ((await fn(error, session, ctx)) === true) handled = true;
    return handled;
  }
}

/**
 * Implementations by tool name, from the runtime config's `tools` object. Every one is checked
 * against its declarations when the agent is created: unknown names (with the closest declared
 * one), values that are not functions, and parameters a destructured args object takes that
 * the declaration does not give (or gives and it does not take). All problems are reported in
 * one ConfigError.
 */
class ToolRegistry {
  private impls = new Map<string, Fn>();
  /** `routed`: the implementations the runtime supplies itself (`@mcp` tools, src/mcp.ts). */
  constructor(tools: unknown, declared: Map<string, Tool[]>, routed: Map<string, Fn> = new Map()) {
    for (const [name, fn] of routed) this.impls.set(name, fn);
    if (tools == null) return;
    if (typeof tools !== "object" || Array.isArray(tools)) throw new ConfigError(`tools: expected an object of async functions, got ${typeof tools}`);
    const problems: string[] = [];
    const names = [...declared.keys()];
    for (const [name, fn] of Object.entries(tools as Record<string, unknown>)) {
      if (routed.has(name)) problems.push(`tools.${name}: ${pyRepr(name)} is an @mcp tool: its MCP server runs it, so it takes no implementation`);
      else if (!declared.has(name)) {
        const hint = closest(name, names);
        problems.push(`tools.${name}: no tool named '${name}' is declared${hint ? `; did you mean '${hint}'?` : ""}`);
      } else if (typeof fn !== "function") problems.push(`tools.${name}: expected a function, got ${fn === null ? "null" : typeof fn}`);
      else {
        this.impls.set(name, fn as Fn);
        problems.push(...signatureProblems(name, fn as Fn, declared.get(name)!));
      }
    }
    if (problems.length === 1) throw new ConfigError(problems[0]!);
    if (problems.length) throw new ConfigError(`tools: ${problems.length} problems with the tool implementations:\n` + problems.map((p) => `  - ${p}`).join("\n"));
  }
  has(name: string): boolean {
    return this.impls.has(name);
  }
  async call(name: string, args: Record<string, any>): Promise<unknown> {
    return this.impls.get(name)!(args);
  }
}

/** Every declaration of every tool of the document, by name. */
function declaredTools(doc: Document): Map<string, Tool[]> {
  const found = new Map<string, Tool[]>();
  const add = (t: Tool) => found.set(t.name, [...(found.get(t.name) ?? []), t]);
  for (const agent of Object.values(doc.agents)) {
    for (const t of agent.tools) add(t);
    for (const w of agent.workflows) for (const t of w.tools) add(t);
  }
  return found;
}

/** What keeps `fn` from reading the declared parameters from its args object. */
function signatureProblems(name: string, fn: Fn, declarations: Tool[]): string[] {
  if (fn.length > 1) return [`tools.${name}: the implementation takes ${fn.length} parameters; a tool takes one args object ({ ${declarations[0]!.params.map((p: any) => p.name).join(", ")} })`];
  const takes = destructured(fn);
  if (takes === null) return []; // (args) => ..., a rest element, or source it cannot read
  const problems: string[] = [];
  const shapes = new Set(declarations.map((d) => JSON.stringify(d.params.map((p: any) => p.name))));
  for (const shape of shapes) {
    const params: string[] = JSON.parse(shape);
    const parts = params.filter((p) => !takes.has(p)).map((p) => `missing parameter '${p}'`);
    parts.push(...[...takes].filter(([key, required]) => required && !params.includes(key)).map(([key]) => key).sort().map((p) => `unknown parameter '${p}'`));
    if (parts.length) problems.push(`tools.${name}: the implementation does not match the declaration ${name}(${params.join(", ") || "no parameters"}): ` + parts.join("; "));
  }
  return problems;
}

/**
 * The keys a function's first parameter destructures (`({ a, b = 1 }) => ...`), each with
 * whether it is required (has no default); null when it takes its args object whole, has a
 * rest element or a computed key, or its source cannot be read.
 */
function destructured(fn: Fn): Map<string, boolean> | null {
  let source: string;
  try {
    source = Function.prototype.toString.call(fn);
  } catch {
    return null;
  }
  const open = source.indexOf("(");
  // `args => ...` takes its object whole: a "(" after an arrow or a brace is the body's.
  if (open < 0 || /=>|\{/.test(source.slice(0, open))) return null;
  let i = open + 1;
  while (/\s/.test(source[i] ?? "")) i++;
  if (source[i] !== "{") return null;
  // Split the pattern's top level by commas, skipping nested brackets and strings.
  const entries: string[] = [];
  let depth = 0;
  let start = i + 1;
  for (i = i + 1; i < source.length; i++) {
    const ch = source[i]!;
    if (ch === '"' || ch === "'" || ch === "`") {
      for (i++; i < source.length && source[i] !== ch; i++) if (source[i] === "\\") i++;
    } else if ("([{".includes(ch)) depth++;
    else if (")]}".includes(ch)) {
      if (depth === 0) {
        entries.push(source.slice(start, i));
        break;
      }
      depth--;
    } else if (ch === "," && depth === 0) {
      entries.push(source.slice(start, i));
      start = i + 1;
    }
  }
  if (i >= source.length) return null;
  const keys = new Map<string, boolean>();
  for (const raw of entries) {
    const entry = raw.trim();
    if (!entry) continue;
    const m = /^([A-Za-z_$][\w$]*)\s*([:=]?)/.exec(entry);
    if (entry.startsWith("...") || !m) return null;
    // `key = default` or `key: target = default` (a default at the top level of the entry).
    keys.set(m[1]!, !topLevelDefault(entry));
  }
  return keys;
}

function topLevelDefault(entry: string): boolean {
  let depth = 0;
  for (let i = 0; i < entry.length; i++) {
    const ch = entry[i]!;
    if ("([{".includes(ch)) depth++;
    else if (")]}".includes(ch)) depth--;
    else if (ch === "=" && depth === 0 && entry[i + 1] !== ">" && entry[i + 1] !== "=" && entry[i - 1] !== "=") return true;
  }
  return false;
}

/**
 * The date line that ends every system prompt, in `zone` (an IANA name; default: the
 * machine's local zone), as the Python runtime writes it: `Current date and time:
 * 2026-12-01T10:30:00+00:00 (Tuesday, 01 December 2026 10:30 UTC)`.
 */
export function nowLine(now = new Date(), zone: string | null = null): string {
  const second = Math.floor(now.getTime() / 1000);
  if (second === lastNow[0] && zone === lastNow[2]) return lastNow[1];
  const fields: Record<string, string> = {};
  const key = zone ?? "";
  let format = FORMATS.get(key);
  if (!format) FORMATS.set(key, (format = dateFormat(zone)));
  for (const part of format.formatToParts(now)) fields[part.type] = part.value;
  const [y, mo, d, h, mi, se] = [fields.year, fields.month, fields.day, fields.hour, fields.minute, fields.second].map(Number) as number[];
  const p = (n: number) => String(n).padStart(2, "0");
  const offset = Math.round((Date.UTC(y!, mo! - 1, d!, h!, mi!, se!) - second * 1000) / 60000);
  const sign = offset < 0 ? "-" : "+";
  const iso = `${y}-${p(mo!)}-${p(d!)}T${p(h!)}:${p(mi!)}:${p(se!)}${sign}${p(Math.floor(Math.abs(offset) / 60))}:${p(Math.abs(offset) % 60)}`;
  const line = `Current date and time: ${iso} (${fields.weekday}, ${p(d!)} ${MONTHS[mo! - 1]} ${y} ${p(h!)}:${p(mi!)} ${fields.timeZoneName})`;
  lastNow = [second, line, zone];
  return line;
}

// Making a formatter costs far more than using one (a quarter of a millisecond): one per zone.
const FORMATS = new Map<string, Intl.DateTimeFormat>();

function dateFormat(zone: string | null): Intl.DateTimeFormat {
  return new Intl.DateTimeFormat("en-US", {
    timeZone: zone ?? undefined,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    weekday: "long",
    timeZoneName: "short",
  });
}
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
// Formatting costs more than reading the clock: the line is made once per second (and zone).
let lastNow: [number, string, string | null] = [-1, "", null];

// The keys of IR version 1 (src/auwgent/ir/schema.json). A key this runtime does not know is
// a feature it cannot honour (a newer compiler's): it refuses the IR rather than run the
// agent without it.
const KNOWN_KEYS: Record<string, string[]> = {
  document: ["ir_version", "compiler_version", "hash", "source", "root", "agents", "types", "prompts", "personas", "mcp"],
  agent: ["configs", "context", "description", "dropped_examples", "examples", "helpers", "input", "intents", "kind", "name", "output", "personas", "quarantine", "tools", "workflows"],
  config: ["codeMode", "embedding", "fallback", "history", "maxToolOutput", "max_tool_loops", "model", "prompt", "protocol", "taint"],
  model: ["base_url", "contextWindow", "id", "maxOutputTokens", "model", "name", "options", "provider"],
  tool: ["approval", "description", "examples", "maxOutput", "mcp", "mcpTool", "name", "params", "repeatable", "returns", "sensitive", "untrusted"],
  workflow: ["approval", "body", "description", "examples", "loc", "name", "params", "returns", "source", "tools"],
  helper: ["approval", "handoff", "name", "tools"],
  intent: ["description", "fields", "name"],
};
function checkKnown(kind: string, value: Record<string, any>, path: string): void {
  for (const key of Object.keys(value ?? {})) {
    if (KNOWN_KEYS[kind]!.includes(key)) continue;
    throw new UnsupportedError(`ir: ${path} has '${key}': a key this TypeScript runtime does not know (a newer compiler?); see ts/README.md`);
  }
}

function checkUnsupported(doc: Record<string, any>): void {
  checkKnown("document", doc, "the document");
  for (const [name, agent] of Object.entries<any>(doc.agents)) {
    const at = `agents.${name}`;
    checkKnown("agent", agent, at);
    for (const [cname, cfg] of Object.entries<any>(agent.configs)) {
      checkKnown("config", cfg, `${at}.configs.${cname}`);
      checkKnown("model", cfg.model, `${at}.configs.${cname}.model`);
      if (cfg.embedding) checkKnown("model", cfg.embedding, `${at}.configs.${cname}.embedding`);
      if (cfg.history?.summarizeWith) checkKnown("model", cfg.history.summarizeWith, `${at}.configs.${cname}.history.summarizeWith`);
    }
    agent.tools.forEach((t: any, i: number) => checkKnown("tool", t, `${at}.tools[${i}] (${t.name})`));
    agent.workflows.forEach((w: any, i: number) => {
      checkKnown("workflow", w, `${at}.workflows[${i}] (${w.name})`);
      w.tools.forEach((t: any, j: number) => checkKnown("tool", t, `${at}.workflows[${i}].tools[${j}] (${t.name})`));
    });
    agent.helpers.forEach((h: any, i: number) => checkKnown("helper", h, `${at}.helpers[${i}] (${h.name})`));
    agent.intents.forEach((n: any, i: number) => checkKnown("intent", n, `${at}.intents[${i}] (${n.name})`));
  }
}

export class AgentCore {
  root: string;
  options: RuntimeOptions;
  providerOverride: Provider | null;
  apiKeys: Record<string, string> = {};
  /** Per model, reported over estimated input tokens (src/budget.ts), for the agent's life. */
  calibration = new Calibration();
  contextSchema: ContextSchema;
  registry: ToolRegistry;
  /** The document's MCP servers (src/mcp.ts); null when it declares none. */
  mcp: McpServers | null = null;
  middleware: MiddlewareChain;
  handlers: Handler[] = [];
  partialHandlers: Handler[] = [];
  wantsPartials: boolean;
  intentNames: string[];
  /** OpenTelemetry (`tracing`, `tracerProvider`); null: off (src/tracing.ts). */
  tracing: Tracing | null;
  /** Background memory ingestion (src/memory.ts); null: memory is off. */
  ingestion: Ingestion | null;
  /** The config's `approver` (or agent.onApproval's) and `approvals` mode (src/approvals.ts). */
  approvals: ApprovalOptions;
  /** The middleware list as the config gave it (a resume finds its session store there). */
  middlewareList: readonly unknown[];
  private contracts = new Map<string, Contract>();
  private providers = new Map<string, Provider>();
  private codecs = new Map<string, Codec>();
  // Contracts are immutable and kept for the agent's lifetime: their protocol sections and
  // request parts are built once per codec, not for every model call.
  private sections = new WeakMap<Contract, Map<string, string>>();
  private parts = new WeakMap<Contract, Map<string, [FunctionSpec[], Record<string, any> | null]>>();
  // Per agent and config: the context keys its prompt reads, and the prompt itself when it
  // reads none (then it is the same for every run).
  private prompts = new Map<string, { referenced: Set<string>; fixed: string | null }>();

  constructor(
    public doc: Document,
    config: Record<string, any>,
  ) {
    this.root = doc.root;
    if (!(this.root in doc.agents)) throw new ConfigError(`root: agent '${this.root}' is missing from the IR`);
    checkUnsupported(doc);
    this.options = parseOptions(config);
    this.tracing = Tracing.of(config, RUNTIME_VERSION);
    this.ingestion = this.options.memory === null ? null : new Ingestion(this.options.memory);
    if (codeModeWanted(this.options.codeMode, doc.agents)) requireSandbox(); // @pydantic/monty is an optional peer
    this.providerOverride = providerOverride(config.provider);
    if (this.providerOverride === null) this.apiKeys = resolveApiKeys(doc, config.apiKeys);
    this.contextSchema = new ContextSchema(doc);
    if ((doc.mcp && Object.keys(doc.mcp).length > 0) || config.mcp != null || mcpTools(doc).size > 0) this.mcp = new McpServers(doc, config.mcp);
    this.registry = new ToolRegistry(config.tools, declaredTools(doc), this.mcp?.implementations() as Map<string, Fn> | undefined);
    this.middleware = new MiddlewareChain(config.middleware);
    this.middlewareList = Array.isArray(config.middleware) ? [...config.middleware] : [];
    this.approvals = approvalOptions(config);
    this.wantsPartials = this.middleware.hasPartial;
    this.intentNames = [...BUILTIN_INTENTS, ...Object.values<any>(doc.agents).flatMap((a) => a.intents.map((i: any) => i.name))];
  }

  configFor(agent: IRAgent, selected: string | null): string {
    return selected !== null && selected in agent.configs ? selected : "default";
  }

  maxLoops(agent: IRAgent, configName: string): number {
    if (this.options.maxToolLoops !== null) return this.options.maxToolLoops;
    const value = agent.configs[configName].max_tool_loops;
    return value ? Number(value) : DEFAULT_MAX_TOOL_LOOPS;
  }

  codec(agent: IRAgent, selected: string | null): Codec {
    const cfg = agent.configs[this.configFor(agent, selected)];
    const name = this.options.protocol ?? cfg.protocol ?? "blocks";
    let codec = this.codecs.get(name);
    if (!codec) {
      codec = name === "native" ? new NativeCodec() : new BlocksCodec();
      this.codecs.set(name, codec);
    }
    return codec;
  }

  provider(model: Model): Provider {
    if (this.providerOverride !== null) return this.providerOverride;
    const key = `${model.provider}\u0000${model.id ?? ""}\u0000${model.base_url ?? ""}`;
    let found = this.providers.get(key);
    if (!found) {
      const name = providerKey(model);
      const apiKey = this.apiKeys[name] ?? null;
      const base = resolveBaseUrl(model, this.options.baseUrls);
      const http = { retry: this.options.retry, timeouts: this.options.timeouts, limits: this.options.limits, fetch: this.options.fetch };
      if (model.provider === "gemini") found = new GeminiProvider(name, base ?? DEFAULT_GEMINI_BASE_URL, apiKey, http);
      else if (model.provider === "openai") found = new OpenAIProvider(name, base ?? DEFAULT_OPENAI_BASE_URL, apiKey, http, this.options.strict);
      else if (model.provider === "anthropic") found = new AnthropicProvider(name, base ?? DEFAULT_ANTHROPIC_BASE_URL, apiKey, http);
      else if (model.provider === "custom") {
        const url = base ?? model.base_url;
        if (!url) throw new ConfigError(`model.base_url: custom provider '${name}' needs a base URL`);
        found = new OpenAIProvider(name, url, apiKey, http, this.options.strict);
      } else throw new ConfigError(`model.provider: unknown provider '${model.provider}' (expected 'gemini', 'openai', 'anthropic' or 'custom')`);
      this.providers.set(key, found);
    }
    return found;
  }

  contract(inv: Invocation): Contract {
    const key = [inv.name, inv.configName, ...inv.tools.map((t) => t.name), String(inv.handoff === "user")].join("\u0000");
    let found = this.contracts.get(key);
    if (!found) {
      found = this.buildContract(inv);
      this.contracts.set(key, found);
    }
    return found;
  }

  private buildContract(inv: Invocation): Contract {
    const agent = inv.agent;
    const types = this.doc.types;
    const specs: CallableSpec[] = inv.tools.map((t) => ({
      kind: "tool",
      name: t.name,
      description: t.description ?? "",
      params: t.params,
      returns: t.returns,
      configured: this.registry.has(t.name) || (t as Tool & { builtin?: boolean }).builtin === true, // the built-in `recall` (budget.ts)
      examples: t.examples ?? [],
      approval: t.approval ?? null,
    }));
    for (const w of agent.workflows)
      specs.push({ kind: "workflow", name: w.name, description: w.description ?? "", params: w.params, returns: w.returns, configured: true, examples: [], approval: w.approval ?? null });
    for (const use of agent.helpers) {
      const helper = this.doc.agents[use.name];
      specs.push({ kind: "helper", name: helper.name, description: helper.description ?? "", params: helperParams(helper, types), returns: helper.output, configured: true, examples: [], approval: use.approval ?? null });
    }
    const intents = [...agent.intents];
    if (inv.handoff === "user") intents.push(COMPLETE_SPEC);
    const examples = (agent.examples ?? []).map((e: any) => declaredOrder(e, specs));
    const contract: Contract = { agent: agent.name, callables: specs, intents, output: agent.output, types, examples };
    return codeModeEnabled(this.options.codeMode, agent.configs[inv.configName]) ? codeContract(contract) : contract; // one callable: execute_code
  }

  requestParts(codec: Codec, contract: Contract): [FunctionSpec[], Record<string, any> | null] {
    return cached(this.parts, contract, codec.name, () => [codec.functions(contract), codec.responseSchema(contract)]);
  }

  /** The "Active persona" section, or "" when none is active or the agent does not list it. */
  personaSection(agent: IRAgent, persona: string | null, context: Record<string, any>): string {
    if (persona === null || !(agent.personas ?? []).includes(persona)) return "";
    const body = renderBody(this.doc.personas[persona].body, {}, context, schemaTextFor(this.doc, agent));
    return body.trim() ? `Active persona: ${persona}\n${body}` : "";
  }

  checkPersona(name: unknown, where: string): string | null {
    if (name === null || name === undefined) return null;
    const valid = Object.keys(this.doc.personas ?? {});
    if (typeof name !== "string" || !valid.includes(name))
      throw new ConfigError(`${where}: unknown persona ${JSON.stringify(name)}; valid personas: ${valid.length ? valid.join(", ") : "none (this agent lists no personas)"}`);
    return name;
  }

  systemPrompt(inv: Invocation, codec: Codec, contract: Contract, context: Record<string, any>, persona: string | null = null, memory = ""): string {
    const cfg = inv.agent.configs[inv.configName];
    const key = `${inv.name}\u0000${inv.configName}`;
    let found = this.prompts.get(key);
    if (!found) {
      const referenced = referencedContextKeys(this.doc, cfg);
      // A prompt that reads no context renders the same for every run: rendered once.
      this.prompts.set(key, (found = { referenced, fixed: referenced.size ? null : renderPrompt(this.doc, inv.agent, cfg, {}) }));
    }
    const section = cached(this.sections, contract, codec.name, () => codec.systemSection(contract));
    const parts = [
      found.fixed ?? renderPrompt(this.doc, inv.agent, cfg, context),
      section,
      persona === null ? "" : this.personaSection(inv.agent, persona, context),
      memory,
      this.contextSchema.section(context, found.referenced),
      nowLine(this.options.clock ? this.options.clock() : new Date(), this.options.timezone),
    ];
    let system = "";
    for (const part of parts) if (part) system = system ? `${system}\n\n${part}` : part;
    return system;
  }
}

function cached<T>(table: WeakMap<Contract, Map<string, T>>, contract: Contract, key: string, make: () => T): T {
  let byCodec = table.get(contract);
  if (!byCodec) table.set(contract, (byCodec = new Map()));
  let found = byCodec.get(key);
  if (found === undefined) byCodec.set(key, (found = make()));
  return found;
}

function declaredOrder(example: Example, specs: CallableSpec[]): Example {
  const args = example.args;
  const kind = example.kind === "workflow" ? "workflow" : "tool";
  const spec = specs.find((s) => s.kind === kind && s.name === example.target);
  if (!args || typeof args !== "object" || !spec) return example;
  const order = new Map(spec.params.map((f, i) => [f.name, i] as const));
  const ordered = Object.fromEntries(Object.entries(args).sort(([a], [b]) => (order.get(a) ?? order.size) - (order.get(b) ?? order.size)));
  return { ...example, args: ordered };
}

/** One intent as `agent.stream()` yields it: final (`partial: false`) or a streaming update. */
export interface IntentEvent {
  name: string;
  value: any;
  agentName: string;
  partial: boolean;
}

export interface RunOptions {
  session?: SessionState | Record<string, any> | null;
  config?: string;
  /** Handed to middleware as `ctx.conversationId` (e.g. a session store's key). */
  conversationId?: string;
  /** The persona this run takes on (default: the agent's, see usePersona). */
  persona?: string;
}

/** A runnable agent; create it with the generated auwgent(config) factory. */
export class Agent {
  /** The session of the last finished run. */
  lastSession: SessionState | null = null;

  private personaName: string | null;
  private memoryScope: string | null = null;

  constructor(
    private core: AgentCore,
    private contextValues: Record<string, any>,
    private configName: string | null,
  ) {
    this.personaName = core.checkPersona(core.options.persona, "persona");
  }

  /** The persona runs take on unless run({ persona }) says otherwise. */
  get persona(): string | null {
    return this.personaName;
  }

  /** Make `name` the persona runs take on (null: none). */
  usePersona(name: string | null): void {
    this.personaName = this.core.checkPersona(name, "usePersona");
  }

  get name(): string {
    return this.core.root;
  }

  /** Keep memory in `scope` (a non-empty string; null: the unscoped pool): runs recall only the
   * facts learned in the same scope and learn into it (docs/memory.md, Scopes). */
  useMemoryScope(scope: string | null): void {
    if (scope !== null && (typeof scope !== "string" || !scope)) throw new ConfigError(`useMemoryScope: expected a non-empty string, got ${typeof scope === "string" ? pyRepr(scope) : JSON.stringify(scope)}`);
    this.memoryScope = scope;
  }

  /** Wait until background memory ingestion has finished (returns at once without it). */
  async drain(): Promise<void> {
    if (this.core.ingestion !== null) await this.core.ingestion.drain();
  }

  /** Close what the agent holds open: its MCP connections (launched servers are stopped). The
   * agent stays usable: a later call to an `@mcp` tool connects again. */
  async close(): Promise<void> {
    await this.core.mcp?.close();
  }
  get context(): Readonly<Record<string, any>> {
    return { ...this.contextValues };
  }

  onIntent(handler: (name: any, value: any, agentName: any) => unknown): void {
    if (typeof handler !== "function") throw new ConfigError("onIntent: expected a function (name, value, agentName) => ...");
    this.core.handlers.push({ label: handlerLabel(handler), call: async (n, v, a) => handler(n, v, a) });
  }

  onIntentPartial(handler: (name: any, value: any, agentName: any) => unknown): void {
    if (typeof handler !== "function") throw new ConfigError("onIntentPartial: expected a function (name, value, agentName) => ...");
    this.core.partialHandlers.push({ label: handlerLabel(handler), call: async (n, v, a) => handler(n, v, a) });
    this.core.wantsPartials = true;
  }

  /** Set the approver of calls marked `@approval`: `fn(request)`, sync or async, returning
   * true, false, `{approved, reason, args}` or "defer" (docs/approvals.md). It replaces the
   * config's `approver`. */
  onApproval(approver: Approver): void {
    this.core.approvals.approver = checkApprover(approver);
  }

  /** Continue a run paused for approvals (session `status: "awaiting_approval"`): `decisions`
   * maps every pending request id to true, false or `{approved, reason, args}`. With
   * `conversationId` and a SessionStoreMiddleware the stored conversation is resumed
   * (`session` may be null) and claimed first (ConflictError for a second resumer). */
  async resume(session: SessionState | Record<string, any> | null, decisions: Record<string, unknown>, options: ResumeOptions = {}): Promise<SessionState> {
    return this.resumeWith(session, decisions, options, null);
  }

  /** resume(), yielding every intent as it happens (like stream()). */
  resumeStream(session: SessionState | Record<string, any> | null, decisions: Record<string, unknown>, options: ResumeOptions = {}): AsyncGenerator<IntentEvent> {
    return new IntentChannel((sink) => this.resumeWith(session, decisions, options, sink));
  }

  private async resumeWith(session: SessionState | Record<string, any> | null, decisions: Record<string, unknown>, options: ResumeOptions, sink: IntentSink | null): Promise<SessionState> {
    const selected = options.config !== undefined ? checkConfigName(this.core.doc, options.config, "resume({config})") : this.configName;
    const run = new Run(this.core, { ...this.contextValues }, selected, sink, this.personaName);
    run.ctx.conversationId = run.ctx.conversation_id = options.conversationId ?? null;
    const result = await resumeAgent(run, session, decisions, options);
    this.lastSession = result;
    return result;
  }

  useConfig(name: string): void {
    this.configName = checkConfigName(this.core.doc, name, "useConfig");
  }

  setContext(data: Record<string, any>): void {
    Object.assign(this.contextValues, this.core.contextSchema.check(data, "setContext"));
  }

  /** `text`: a string or a list of parts (text, images, files: docs/parts.md), checked first. */
  async run(text: Input, options: RunOptions = {}): Promise<SessionState> {
    return this.execute(text, options, null);
  }

  /**
   * Run one input, yielding every intent (partials included) as it happens; the session is in
   * `lastSession` once the iteration ends.
   */
  stream(text: Input, options: RunOptions = {}): AsyncGenerator<IntentEvent> {
    return new IntentChannel((sink) => this.execute(text, options, sink));
  }

  private async execute(text: Input, options: RunOptions, sink: IntentSink | null): Promise<SessionState> {
    const given = checkInput(text, "run()");
    const selected = options.config !== undefined ? checkConfigName(this.core.doc, options.config, "run({config})") : this.configName;
    const persona = options.persona !== undefined ? this.core.checkPersona(options.persona, "run({persona})") : this.personaName;
    const run = new Run(this.core, { ...this.contextValues }, selected, sink, persona);
    run.ctx.conversationId = run.ctx.conversation_id = options.conversationId ?? null;
    run.memory.scope = this.memoryScope;
    const session = await run.execute(given, options.session ?? null);
    this.lastSession = session;
    if (session.status !== "awaiting_approval") run.memory.ingest(run.turn, run.ctx.conversation_id); // learn from the turn once, when whole
    return session;
  }
}

/**
 * The intents of one run as an async iterator (what `agent.stream()` returns): the run starts
 * at the first `next()`; an intent already there is handed out at once, otherwise `next()`
 * waits for the next one or the run's end (whose error, if any, it throws). Lighter than an
 * async generator over a queue: no generator resumption and no wake-up promise per intent.
 */
class IntentChannel implements AsyncGenerator<IntentEvent> {
  private queue: IntentEvent[] = [];
  private at = 0;
  private started = false;
  /** The run has ended: with `failure` when it threw. */
  private ended = false;
  private failure: { error: unknown } | null = null;
  /** Nothing more is handed out (the end was handed out, or the consumer stopped). */
  private closed = false;
  private waiting: { resolve: (step: IteratorResult<IntentEvent>) => void; reject: (error: unknown) => void } | null = null;

  constructor(private start: (sink: IntentSink) => Promise<unknown>) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  private readonly sink: IntentSink = (name, value, agentName, partial) => {
    if (this.closed) return;
    const event = { name, value, agentName, partial };
    const waiting = this.waiting;
    if (waiting === null) this.queue.push(event);
    else {
      this.waiting = null;
      waiting.resolve({ value: event, done: false });
    }
  };

  private finish(failure: { error: unknown } | null): void {
    this.ended = true;
    this.failure = failure;
    const waiting = this.waiting;
    if (waiting === null) return;
    this.waiting = null;
    this.closed = true;
    if (failure) waiting.reject(failure.error);
    else waiting.resolve({ value: undefined, done: true });
  }

  next(): Promise<IteratorResult<IntentEvent>> {
    if (!this.started) {
      this.started = true;
      this.start(this.sink).then(
        () => this.finish(null),
        (error: unknown) => this.finish({ error }),
      );
    }
    if (this.at < this.queue.length) {
      const value = this.queue[this.at++]!;
      if (this.at === this.queue.length) this.queue.length = this.at = 0;
      return Promise.resolve({ value, done: false });
    }
    if (this.closed) return Promise.resolve({ value: undefined, done: true });
    if (this.ended) {
      this.closed = true;
      return this.failure ? Promise.reject(this.failure.error) : Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }

  /** The consumer stopped early (a `break` out of `for await`): nothing more is handed out;
   * the run itself goes on to its end, as with any run. */
  return(): Promise<IteratorResult<IntentEvent>> {
    this.closed = true;
    this.queue.length = this.at = 0;
    return Promise.resolve({ value: undefined, done: true });
  }

  /** As a generator's `throw()`: the iteration ends with `error`. */
  throw(error: unknown): Promise<IteratorResult<IntentEvent>> {
    void this.return();
    return Promise.reject(error);
  }
}

/** The `provider` config (or AUWGENT_PROVIDER=offline): a provider replacing every model. */
function providerOverride(value: unknown): Provider | null {
  if (value == null && (process.env.AUWGENT_PROVIDER ?? "").trim().toLowerCase() === "offline") value = "offline";
  if (value == null) return null;
  if (value === "offline") return new OfflineModel();
  if (typeof value === "string") throw new ConfigError(`provider: unknown provider ${pyRepr(value)} (use 'offline' or a Provider)`);
  if (typeof value !== "object" || typeof (value as Provider).stream !== "function")
    throw new ConfigError(`provider: expected a Provider (with stream() and embed()) or 'offline', got ${Array.isArray(value) ? "array" : typeof value}`);
  return value as Provider;
}

function handlerLabel(handler: Function): string {
  return handler.name || "handler";
}

function checkConfigName(doc: Document, name: unknown, where: string): string {
  const valid = configNames(doc);
  if (typeof name !== "string" || !valid.includes(name))
    throw new ConfigError(`${where}: unknown config ${typeof name === "string" ? pyRepr(name) : JSON.stringify(name)}; valid configs: ${valid.join(", ")}`);
  return name;
}

export interface IRMeta {
  irHash: string;
  compilerVersion: string;
  irVersion: number;
  /** JSON pointers of the IR's whole-number floats (`1.0`), which a JavaScript value cannot
   * tell from integers: the hash is taken over the IR as the compiler wrote it. */
  floats?: readonly string[];
}

/** The IR's hash as the compiler computes it: SHA-256 over its canonical JSON (sorted keys,
 * no spaces, Python's number forms) without the `hash` key. */
export function irHash(doc: Record<string, any>, floats: readonly string[] = []): string {
  const body = { ...doc };
  delete body.hash;
  return "sha256:" + createHash("sha256").update(canonicalJson(body, new Set(floats), "")).digest("hex");
}

function canonicalJson(value: unknown, floats: Set<string>, path: string): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "number") return floats.has(path) || !Number.isInteger(value) ? pyFloat(value) : BigInt(value).toString();
  if (Array.isArray(value)) return "[" + value.map((v, i) => canonicalJson(v, floats, `${path}/${i}`)).join(",") + "]";
  const object = value as Record<string, unknown>;
  return (
    "{" +
    Object.keys(object)
      .sort(byCodePoint)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(object[k], floats, `${path}/${k.replace(/~/g, "~0").replace(/\//g, "~1")}`)}`)
      .join(",") +
    "}"
  );
}

function byCodePoint(a: string, b: string): number {
  const x = [...a].map((c) => c.codePointAt(0)!);
  const y = [...b].map((c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

/** Python's repr of a float: the shortest digits that read back, positional from 1e-4 to
 * 1e16, else `d.dddde+XX`; whole numbers end in `.0`. */
function pyFloat(value: number): string {
  if (!Number.isFinite(value)) throw new ConfigError(`ir: ${value} is not a JSON number`);
  const [mantissa, exp] = value.toExponential().split("e") as [string, string];
  const exponent = Number(exp);
  const negative = mantissa.startsWith("-");
  const digits = mantissa.replace("-", "").replace(".", "");
  let text: string;
  if (exponent >= -5 + 1 && exponent < 16) {
    if (exponent >= 0) {
      const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, "0");
      const fraction = digits.slice(exponent + 1);
      text = `${whole}.${fraction || "0"}`;
    } else text = `0.${"0".repeat(-exponent - 1)}${digits}`;
  } else {
    const rest = digits.slice(1);
    text = `${digits[0]}${rest ? `.${rest}` : ""}e${exponent < 0 ? "-" : "+"}${String(Math.abs(exponent)).padStart(2, "0")}`;
  }
  return negative ? `-${text}` : text;
}

function versionTuple(text: string): number[] {
  return text
    .split(".")
    .slice(0, 3)
    .map((p) => Number(p.replace(/\D/g, "") || 0));
}

/** Build an agent from its IR and the runtime config; throws ConfigError naming the key path. */
export function createAgent(ir: string | Record<string, any>, config: Record<string, any> | undefined, meta: IRMeta): Agent {
  let doc: Document;
  if (typeof ir === "string") {
    try {
      doc = JSON.parse(ir);
    } catch (error) {
      throw new ConfigError(`ir: the embedded IR is not valid JSON (${String(error)})`);
    }
  } else doc = ir as Document; // the generated module's irDocument: checked by its hash below
  const cfg = config ?? {};
  if (typeof cfg !== "object" || Array.isArray(cfg)) throw new ConfigError(`config: expected an object, got ${typeof cfg}`);
  const regen = "regenerate the bindings with `auwgent generate`";
  if (meta.irVersion !== IR_VERSION || doc.ir_version !== IR_VERSION)
    throw new ConfigError(`ir_version: the generated module holds IR version ${doc.ir_version ?? meta.irVersion}, but this runtime reads version ${IR_VERSION}; ${regen}`);
  if (doc.hash !== meta.irHash || irHash(doc, meta.floats) !== meta.irHash)
    throw new ConfigError(`ir_hash: the embedded IR does not match its hash (it was edited after it was generated, or the module was changed by hand); ${regen}`);
  const compiled = versionTuple(meta.compilerVersion);
  const runtime = versionTuple(RUNTIME_VERSION);
  if (compiled[0] !== runtime[0] || compiled[1]! > runtime[1]!)
    throw new ConfigError(`compiler_version: the bindings were generated by auwgent ${meta.compilerVersion}, which this runtime (${RUNTIME_VERSION}) cannot run; ${regen} or upgrade the runtime`);
  const core = new AgentCore(doc, cfg);
  const context = core.contextSchema.check(cfg.context ?? {}, "context");
  const name = cfg.config != null ? checkConfigName(doc, cfg.config, "config") : null;
  return new Agent(core, context, name);
}
