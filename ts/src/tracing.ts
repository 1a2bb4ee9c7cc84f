// OpenTelemetry traces of runs, off unless configured (the Python runtime's
// src/auwgent/runtime/tracing.py, span for span; docs/observability.md).
//
// `tracing: true` in the runtime config uses the global tracer provider of
// `@opentelemetry/api`; `tracerProvider: provider` uses that one. Spans follow the
// OpenTelemetry semantic conventions for generative AI:
//
// - `invoke_agent <Agent>`: the run (the root agent), and each helper call nested in the span
//   of the agent that called it;
// - `chat <model>`: one per model call, with the provider, model, token usage and finish reason;
// - `execute_tool <name>`: one per tool and workflow call (`gen_ai.tool.type` says which),
//   ending when its result (or error) is out.
//
// Every span carries `auwgent.helper_stack`; the run span lists the intents emitted
// (`auwgent.intents`). When tracing is off the run holds no trace and every hook is one `if`.
// `@opentelemetry/api` is an optional peer: it is loaded only when tracing is asked for.

import { createRequire } from "node:module";
import { ConfigError } from "./errors.js";

/** The part of an OpenTelemetry span the trace uses. */
export interface SpanLike {
  setAttribute(key: string, value: AttributeValue): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  end(): void;
}

/** The part of an OpenTelemetry tracer the trace uses. */
export interface TracerLike {
  startSpan(name: string, options?: { attributes?: Record<string, AttributeValue> }, context?: unknown): SpanLike;
}

/** An OpenTelemetry `TracerProvider`: anything with `getTracer`. */
export interface TracerProviderLike {
  getTracer(name: string, version?: string): unknown;
}

type AttributeValue = string | number | boolean | string[];

/** The part of `@opentelemetry/api` the trace uses. */
interface OtelApi {
  trace: {
    getTracerProvider(): TracerProviderLike;
    setSpan(context: unknown, span: SpanLike): unknown;
  };
  context: { active(): unknown };
}

/** `SpanStatusCode.ERROR` of `@opentelemetry/api`. */
const STATUS_ERROR = 2;
const API_PACKAGE = "@opentelemetry/api";
const TOOL_TYPES: Record<string, string> = { tool_call: "function", workflow_call: "workflow" };
const ENDS: Record<string, string> = { tool_result: "tool_call", tool_error: "tool_call", workflow_result: "workflow_call" };

const require = createRequire(import.meta.url);

function loadApi(): OtelApi {
  try {
    return require(API_PACKAGE) as OtelApi;
  } catch (error) {
    if ((error as { code?: string }).code !== "MODULE_NOT_FOUND") throw error;
    throw new ConfigError(`tracing: OpenTelemetry is not installed; npm install ${API_PACKAGE}`);
  }
}

/** The tracer the config asks for (`tracing`, `tracerProvider`), or null: tracing is off. */
export class Tracing {
  private constructor(
    readonly api: OtelApi,
    readonly tracer: TracerLike,
  ) {}

  /** `version`: the runtime's, for the instrumentation scope (`auwgent`, as in Python). */
  static of(config: Record<string, unknown>, version: string): Tracing | null {
    const provider = config.tracerProvider ?? null;
    const on = config.tracing ?? false;
    if (typeof on !== "boolean") throw new ConfigError(`tracing: expected true or false, got ${JSON.stringify(on)}`);
    if (provider === null && !on) return null;
    const api = loadApi();
    if (provider !== null && typeof (provider as { getTracer?: unknown }).getTracer !== "function")
      throw new ConfigError(`tracerProvider: expected an OpenTelemetry TracerProvider, got ${describe(provider)}`);
    const chosen = (provider as TracerProviderLike | null) ?? api.trace.getTracerProvider();
    const tracer = chosen.getTracer("auwgent", version) as TracerLike;
    if (!tracer || typeof tracer.startSpan !== "function")
      throw new ConfigError("tracerProvider: its getTracer() did not return an OpenTelemetry Tracer");
    return new Tracing(api, tracer);
  }
}

function describe(value: unknown): string {
  if (typeof value === "object" && value !== null) return "an object without getTracer()";
  return JSON.stringify(value) ?? String(value);
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Token usage as a model call reports it. */
export interface UsageLike {
  input_tokens?: number | null;
  output_tokens?: number | null;
}

/** The spans of one run; the run calls these where the Python runtime's engine does. */
export class RunTrace {
  readonly stack: string[];
  private intents: string[] = [];
  /** Agent name -> its open invoke_agent spans. */
  private agents = new Map<string, SpanLike[]>();
  /** `agent kind name` -> the open spans of those calls. */
  private tools = new Map<string, SpanLike[]>();
  private run: SpanLike;

  constructor(
    private tracing: Tracing,
    root: string,
  ) {
    this.stack = [root];
    this.run = this.start(`invoke_agent ${root}`, null, { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": root });
    this.agents.set(root, [this.run]);
  }

  private start(name: string, parent: SpanLike | null, attributes: Record<string, AttributeValue>): SpanLike {
    const { api, tracer } = this.tracing;
    const context = parent === null ? undefined : api.trace.setSpan(api.context.active(), parent);
    attributes["auwgent.helper_stack"] = [...this.stack];
    return tracer.startSpan(name, { attributes }, context);
  }

  private parent(agent: string): SpanLike {
    const spans = this.agents.get(agent);
    return spans?.length ? spans[spans.length - 1]! : this.run;
  }

  private failed(span: SpanLike, type: string, message?: string): void {
    span.setStatus(message === undefined ? { code: STATUS_ERROR } : { code: STATUS_ERROR, message });
    span.setAttribute("error.type", type);
  }

  // -- hooks

  /** Every final intent: call intents open spans, their results close them. */
  intent(name: string, value: unknown, agent: string, active: string | null): void {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return;
    this.intents.push(name);
    const payload = value as Record<string, unknown>;
    const caller = active || agent;
    const target = String(payload.type || payload.name || payload.tool || "");
    if (name in TOOL_TYPES) {
      const span = this.start(`execute_tool ${target}`, this.parent(caller), {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": target,
        "gen_ai.tool.type": TOOL_TYPES[name]!,
      });
      const key = `${caller} ${name} ${target}`;
      this.tools.set(key, [...(this.tools.get(key) ?? []), span]);
    } else if (name === "helper_call") this.agentStart(target, caller);
    else if (name === "helper_result" || (name === "tool_error" && this.helperOpen(target))) this.agentEnd(target);
    else if (name in ENDS) this.callEnd(name, caller, target);
    else if (name === "tool_skipped") this.skipped(caller, target);
    else if (name === "tainted_call") this.tainted(caller, target, payload);
    else if (name === "error") this.failed(this.run, "error");
  }

  private callEnd(name: string, caller: string, target: string): void {
    const span = this.tools.get(`${caller} ${ENDS[name]} ${target}`)?.shift();
    if (!span) return;
    if (name === "tool_error") this.failed(span, "tool_error");
    span.end();
  }

  /** A call the application skipped: its span ends now, marked `auwgent.skipped`. */
  private skipped(caller: string, target: string): void {
    if (this.helperOpen(target)) {
      const spans = this.agents.get(target)!;
      spans[spans.length - 1]!.setAttribute("auwgent.skipped", true);
      this.agentEnd(target);
      return;
    }
    const tools = this.tools.get(`${caller} tool_call ${target}`);
    const span = (tools?.length ? tools : this.tools.get(`${caller} workflow_call ${target}`))?.pop();
    if (!span) return;
    span.setAttribute("auwgent.skipped", true);
    span.end();
  }

  /** The taint policy's decision on the call's open span (`auwgent.taint.*`). */
  private tainted(caller: string, target: string, value: Record<string, unknown>): void {
    const kind = value.kind === "workflow" ? "workflow_call" : "tool_call";
    const spans = this.tools.get(`${caller} ${kind} ${target}`);
    const span = spans?.length ? spans[spans.length - 1]! : this.parent(caller);
    for (const key of ["action", "policy", "reason"]) span.setAttribute(`auwgent.taint.${key}`, pyStr(value[key]));
  }

  private helperOpen(name: string): boolean {
    const spans = this.agents.get(name) ?? [];
    return spans.length > 0 && spans[spans.length - 1] !== this.run;
  }

  /** A helper starts working for `caller`. */
  agentStart(name: string, caller: string): void {
    this.stack.push(name);
    const span = this.start(`invoke_agent ${name}`, this.parent(caller), { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name });
    this.agents.set(name, [...(this.agents.get(name) ?? []), span]);
  }

  agentEnd(name: string): void {
    const spans = this.agents.get(name);
    if (spans?.length && spans[spans.length - 1] !== this.run) spans.pop()!.end();
    if (this.stack.length > 1 && this.stack[this.stack.length - 1] === name) this.stack.pop();
  }

  chatStart(agent: string, provider: string, model: string): SpanLike {
    return this.start(`chat ${model}`, this.parent(agent), {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": provider,
      "gen_ai.request.model": model,
      "gen_ai.agent.name": agent,
    });
  }

  chatEnd(span: SpanLike, model: string, usage: UsageLike | null, finish: string | null, failed: unknown): void {
    span.setAttribute("gen_ai.response.model", model);
    if (usage) {
      span.setAttribute("gen_ai.usage.input_tokens", usage.input_tokens ?? 0);
      span.setAttribute("gen_ai.usage.output_tokens", usage.output_tokens ?? 0);
    }
    if (finish) span.setAttribute("gen_ai.response.finish_reasons", [finish]);
    if (failed !== null && failed !== undefined) this.failed(span, errorName(failed), errorText(failed));
    span.end();
  }

  runEnd(status: string): void {
    for (const spans of this.tools.values()) for (const span of spans) span.end(); // calls that never reported back
    for (const spans of this.agents.values()) // helpers still at work (a handoff)
      for (const span of [...spans].reverse()) if (span !== this.run) span.end();
    this.run.setAttribute("auwgent.intents", this.intents);
    this.run.setAttribute("auwgent.status", status);
    this.run.end();
  }
}

/** A value as Python's `str()` writes it (the taint attributes). */
function pyStr(value: unknown): string {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  return String(value);
}
