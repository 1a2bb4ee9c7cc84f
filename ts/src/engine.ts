// The engine loop: one agent.run() from the new input to the returned session, and the call
// path every tool, workflow and helper call goes through. It follows the Python runtime's
// engine.py and calls.py; the shared behaviour is pinned by conformance/engine.json.

import { BlocksCodec, type Codec, type DecodeEvent, type FinalEvent, type RejectedEvent } from "./blocks.js";
import { parseBody, pyJson, type Repair } from "./values.js";
import { ApprovalError, AuwgentError, ConfigError, ContextError, FallbackError, NotAControl, ProviderError, ToolError, UnsupportedError, WorkflowError } from "./errors.js";
import { providerKey } from "./config.js";
import type { AgentCore, HookFailure } from "./agent.js";
import { REASONING_KINDS, type FinishEvent, type Message, type ModelRequest, type StreamEvent } from "./providers/base.js";
import { describe, resolve, validate, type IRField, type IRType, type Types } from "./schema.js";
import type { Config, Agent as IRAgent, Intent, Model, Tool, Workflow } from "./ir.js";
import { findCallable, resultText, type CallKind, type CallOutcome, type Contract } from "./section.js";
import { AWAITING_APPROVAL, checkSession, messageFromJson, messageToJson, newSession, newTurn, type Frame, type SessionState, type Turn, type Usage } from "./session.js";
import { describeError, runWorkflow } from "./workflows.js";
import { LoopDetector, type Step } from "./loops.js";
import { RECALL, RunBudget } from "./budget.js";
import { inputText, ToolParts, type Input } from "./parts.js";
import { RunMemory } from "./memory.js";
import { RunTrace } from "./tracing.js";
import { TaintGuard } from "./taint.js";
import { ApprovalGate, AWAITING, checkDecisions, Journal, pause, resumeOutcomes, StepPaused, type ResumeJournal, type Verdict } from "./approvals.js";
import { executeCode, markVia, outsideCode } from "./code_mode.js";

export const CALL_KINDS: Record<string, CallKind> = { tool_call: "tool", workflow_call: "workflow", helper_call: "helper" };
const RESULT_INTENT: Record<CallKind, string> = { tool: "tool_result", workflow: "workflow_result", helper: "helper_result" };
export const COMPLETE_INTENT = "handoff_complete";
export const COMPLETE_SPEC: Intent = {
  name: COMPLETE_INTENT,
  description:
    "Emit when the conversation you were handed is finished and control should return to " +
    "the agent that called you (together with your final answer).",
  fields: [{ name: "summary", type: { kind: "string" }, optional: true, description: "what was settled with the user" }],
};
const TEXT_INPUT_PARAM: IRField = { name: "input", type: { kind: "string" }, optional: false, description: "the request for the helper" };

export interface Control {
  skip: boolean;
  result?: unknown;
}

/** Read an intent control from a guard's return value on a call intent: nothing (`undefined`,
 * `null`), `{}` and `{skip: false}` are no control, `{skip: true}` skips (it wins over a
 * `result`), `{result}` overrides; anything else throws NotAControl. */
export function controlOf(value: unknown): Control | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "object" || Array.isArray(value)) throw new NotAControl(value);
  const proto = Object.getPrototypeOf(value);
  const v = value as Record<string, unknown>;
  if ((proto !== Object.prototype && proto !== null) || !Object.keys(v).every((k) => k === "skip" || k === "result")) throw new NotAControl(value);
  const skip = "skip" in v ? v.skip : false;
  if (typeof skip !== "boolean") throw new NotAControl(value);
  if (skip) return { skip: true };
  if ("result" in v) return { skip: false, result: v.result };
  return null;
}

export class Invocation {
  completed = false;
  summary: string | null = null;
  constructor(
    public agent: IRAgent,
    public configName: string,
    public history: Message[],
    public tools: Tool[],
    public handoff = "none",
    public grant: unknown = "none",
    public record: Record<string, any>[] | null = null,
  ) {}
  get name(): string {
    return this.agent.name;
  }
  add(message: Message): void {
    this.history.push(message);
    if (this.record !== null) this.record.push(messageToJson(message));
  }
}

interface AgentResult {
  status: "complete" | "handoff" | "error" | typeof AWAITING;
  output?: unknown;
  error?: string;
}

interface Round {
  /** The answer streams on the wire (someone reads partials) rather than coming whole. */
  streamed: boolean;
  chunks: string[];
  /** The calls of the answer, in order: started as each call closes when the answer streams;
   * in an answer that came whole, started once it is read (as the Python runtime). */
  calls: (Promise<CallOutcome> | (() => Promise<CallOutcome>))[];
  outcomes: CallOutcome[];
  nativeCalls: FinalEvent[];
  texts: string[];
  output: Record<string, any> | null;
  problems: string[];
  customs: number;
  error: unknown;
  /** "<provider>:<model>" that answered. */
  model: string;
  usage: Usage | null;
  /** Why the model stopped, as the provider said. */
  finish: FinishEvent | null;
  /** The text answer was cut by the output limit. */
  truncated: boolean;
  /** Partial handlers that failed, by handler and segment (reported once). */
  partialFailures: Set<string>;
  /** Thinking blocks, sent back with the answer in history. */
  reasoning: { kind: string; data: unknown }[];
}

/** A call of the answer, started if it was not yet (see Round.calls). */
function started(call: Promise<CallOutcome> | (() => Promise<CallOutcome>)): Promise<CallOutcome> {
  return typeof call === "function" ? call() : call;
}

/** Start a decoded call now (streamed answer) or once the answer is read (whole). */
function start(rnd: Round, call: () => Promise<CallOutcome>): void {
  rnd.calls.push(rnd.streamed ? call() : call);
}

export type IntentSink = (name: string, value: unknown, agentName: string, partial: boolean) => void;

export function effectiveTools(agent: IRAgent, grant: unknown, parentTools: Tool[]): Tool[] {
  const own = [...agent.tools];
  const names = new Set(own.map((t) => t.name));
  let granted: Tool[] = [];
  if (grant === "all") granted = [...parentTools];
  else if (Array.isArray(grant)) granted = parentTools.filter((t) => grant.includes(t.name));
  return [...own, ...granted.filter((t) => !names.has(t.name))];
}

export function helperParams(helper: IRAgent, types: Types): IRField[] {
  if (helper.input.kind === "text") return [TEXT_INPUT_PARAM];
  const resolved = resolve(helper.input, types);
  return resolved.kind === "object" ? resolved.fields : [];
}

/** The arguments the model sent with a call refused before its body was read (a name out of
 * reach), for the `tool_error` sent back: a native call's JSON object, or a block's body read
 * against the parameters of the workflow-scoped tool of that name (untyped for any other
 * name); `{}` when they do not read as an object. */
function refusedArgs(inv: Invocation, name: string, event: RejectedEvent, types: Types): Record<string, any> {
  const raw = event.raw;
  try {
    if (event.callId != null) {
      const text = raw.slice(raw.indexOf("(") + 1, -1);
      const value = JSON.parse(text || "{}");
      return value && typeof value === "object" && !Array.isArray(value) ? value : {};
    }
    const open = raw.indexOf("]");
    if (open < 0) return {};
    const body = raw.slice(open + 1).replace(/\[\/[^\]\n]*\]\s*$/, "");
    let spec: Tool | undefined;
    for (const w of inv.agent.workflows ?? []) spec ??= (w.tools ?? []).find((t) => t.name === name);
    return parseBody(body, spec ? spec.params : [], types);
  } catch {
    return {};
  }
}

/** The warning for an `error` intent that no handler or middleware takes. */
export function unheardError(agentName: string, message: string): string {
  return `error intent of ${agentName} (no handler or middleware takes it): ${message}`;
}

export function notConfigured(name: string): string {
  return `Tool not configured: ${name} has no implementation`;
}

export class Run {
  handedOff = false;
  /** Set when the run's time is up: nothing more runs, nothing more reaches the session. */
  cancelled = false;
  private loops: LoopDetector | null;
  /** This run's model calls (budgets). */
  private spent = { requests: 0, tokens: 0 };
  /** The conversation's model calls before this run. */
  private earlier = { requests: 0, tokens: 0 };
  turn: Turn | null = null;
  session: SessionState;
  ctx: Record<string, any>;
  /** Context windows, tool caps, `recall`, compaction (src/budget.ts). */
  budget: RunBudget;
  /** The run's spans (src/tracing.ts); null: tracing is off. */
  trace: RunTrace | null;
  /** Provenance, the taint policy, spotlighting (src/taint.ts). */
  taint: TaintGuard;
  /** The Memory section, recall and background ingestion (src/memory.ts). */
  memory: RunMemory;
  /** The approval gate (src/approvals.ts). */
  approvals: ApprovalGate = new ApprovalGate(this);
  /** Where a resume journals its approved calls (null: not journaled). */
  journal: ResumeJournal | null = null;

  constructor(
    public core: AgentCore,
    public context: Record<string, any>,
    public config: string | null,
    public sink: IntentSink | null,
    public persona: string | null = null,
  ) {
    this.session = newSession(core.root);
    this.trace = core.tracing === null ? null : new RunTrace(core.tracing, core.root);
    this.budget = new RunBudget(this, core.calibration);
    this.taint = new TaintGuard(this);
    this.memory = new RunMemory({
      options: core.options.memory,
      ingestion: core.ingestion,
      rootConfig: () => core.doc.agents[core.root].configs[core.configFor(core.doc.agents[core.root], this.config)],
      provider: (model) => core.provider(model),
      onError: async (error) => core.middleware.has("onError") && core.middleware.error(error, this.session, this.ctx),
    });
    this.loops = core.options.loopRepeats === null ? null : new LoopDetector(core.options.loopRepeats);
    this.ctx = {
      activeAgent: core.root,
      rootAgent: core.root,
      systemPrompt: "",
      rawBlock: null,
      repairs: [],
      setContext: (data: Record<string, any>) => this.setContext(data),
      set_context: (data: Record<string, any>) => this.setContext(data),
      embed: (text: unknown) => this.embed(text),
      embedBatch: (texts: unknown[]) => this.embedBatch(texts),
      embed_batch: (texts: unknown[]) => this.embedBatch(texts),
    };
  }

  /** Count a model call made outside a round (a summary: src/summarize.ts) toward the budget. */
  spend(requests: number, tokens: number): void {
    this.spent.requests += requests;
    this.spent.tokens += tokens;
  }

  setContext(data: Record<string, any>): void {
    Object.assign(this.context, this.core.contextSchema.check(data, "set_context"));
  }

  async embed(text: unknown): Promise<number[]> {
    return (await this.embedBatch([text]))[0]!;
  }

  async embedBatch(texts: unknown[]): Promise<number[][]> {
    const plain = texts.map((t) => {
      if (typeof t === "string") return t;
      if (t && typeof t === "object" && typeof (t as any).text === "string") return (t as any).text as string;
      throw new TypeError(`embed: expected a string (or a turn input {text: ...}), got ${JSON.stringify(t)}`);
    });
    const agent = this.core.doc.agents[this.ctx.activeAgent];
    const cfgName = this.core.configFor(agent, this.config);
    const model = agent.configs[cfgName].embedding;
    if (!model)
      throw new ConfigError(`embed: the '${cfgName}' config of ${agent.name} has no embedding model; add one, e.g. \`embedding: gemini("gemini-embedding-001")\``);
    return this.core.provider(model).embed(plain, String(model.model), model.options ?? {});
  }

  // -- a whole run

  async execute(text: Input, session: unknown): Promise<SessionState> {
    const root = this.core.root;
    this.session = session == null ? newSession(root) : checkSession(session, root, this.core.doc.agents);
    let start = this.startAgent(this.session);
    this.turn = newTurn(text, start);
    if (this.session.status === AWAITING_APPROVAL) throw pausedError();
    this.session.turns.push(this.turn);
    this.ctx.activeAgent = start;
    try {
      try {
        const returned = this.core.middleware.has("onRunStart") ? await this.core.middleware.runStart(this.session, this.ctx) : this.session;
        if (returned !== this.session) {
          const loaded = checkSession(returned, root, this.core.doc.agents);
          start = this.startAgent(loaded);
          this.session = loaded;
          this.turn.agent = start;
          if (loaded.status === AWAITING_APPROVAL) throw pausedError(); // the stored session stays as it is
          this.session.turns.push(this.turn);
        }
      } catch (error) {
        await this.fail(error, start, "onRunStart failed: ");
        return this.session;
      }
      this.earlier = spentIn(this.session.turns.slice(0, -1));
      await this.memory.recall(inputText(text));
      await this.driveWithTimeout(start);
    } finally {
      await this.finish(start);
    }
    return this.session;
  }

  /** Continue a run paused for approvals with `decisions` (src/approvals.ts); the caller
   * checked the decisions against `session` (and claimed a stored one). */
  async continueRun(session: unknown, decisions: Record<string, unknown>): Promise<SessionState> {
    const root = this.core.root;
    this.session = checkSession(session, root, this.core.doc.agents);
    const start = this.startAgent(this.session);
    this.turn = this.session.turns[this.session.turns.length - 1]!;
    this.ctx.activeAgent = start;
    try {
      try {
        const returned = this.core.middleware.has("onRunStart") ? await this.core.middleware.runStart(this.session, this.ctx) : this.session;
        if (returned !== this.session) {
          const loaded = checkSession(returned, root, this.core.doc.agents);
          checkDecisions(loaded, decisions, true);
          this.session = loaded;
          this.turn = loaded.turns[loaded.turns.length - 1]!;
        } else checkDecisions(this.session, decisions, true);
      } catch (error) {
        await this.fail(error, start, "resume failed: ", false);
        return this.session;
      }
      this.turn.status = "running";
      await this.driveWithTimeout(start, decisions);
    } finally {
      await this.finish(start);
    }
    return this.session;
  }

  private startAgent(session: SessionState): string {
    const name = session.stack[session.stack.length - 1]!.agent;
    if (!(name in this.core.doc.agents)) throw new ConfigError(`session.stack: agent '${name}' is not part of this agent's IR`);
    return name;
  }

  private async driveWithTimeout(start: string, decisions: Record<string, unknown> | null = null): Promise<void> {
    const timeout = this.core.options.runTimeout;
    try {
      if (timeout === null) await this.drive(start, decisions);
      else {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const limit = new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), timeout * 1000)));
        const outcome = await Promise.race([this.drive(start, decisions), limit]);
        clearTimeout(timer);
        if (outcome === "timeout") {
          await this.fail(new AuwgentError(`the run took longer than ${timeout} s`), start);
          this.cancelled = true;
        }
      }
    } catch (error) {
      await this.fail(error, this.ctx.activeAgent);
    }
  }

  private async finish(start: string): Promise<void> {
    const turn = this.turn!;
    if (turn.status === "running") turn.status = this.session.stack.length > 1 ? "handoff" : "complete";
    this.session.usage = totalUsage(this.session.turns);
    turn.intents = jsonable(turn.intents);
    turn.output = jsonable(turn.output);
    this.ctx.activeAgent = start;
    this.ctx.rawBlock = null;
    this.ctx.repairs = [];
    try {
      if (this.core.middleware.has("onRunComplete")) await this.core.middleware.runComplete(this.session, this.ctx);
    } catch (error) {
      await this.fail(error, start, "onRunComplete failed: ", false);
    }
    if (this.trace !== null) this.trace.runEnd(turn.status);
  }

  private async drive(start: string, decisions: Record<string, unknown> | null): Promise<void> {
    const agent = this.core.doc.agents[start];
    const missing = this.core.contextSchema.missing(agent, this.context);
    if (missing.length) {
      const keys = missing.map((k) => `'${k}'`).join(", ");
      await this.fail(
        new ContextError(
          `missing required context ${keys} for ${start}: give it in the config's 'context', with agent.setContext, or from middleware with setContext`,
        ),
        start,
      );
      return;
    }
    const stack = this.session.stack;
    if (stack.length > 1) {
      await this.resume(stack, decisions);
      return;
    }
    const rootIr = this.core.doc.agents[this.core.root];
    const history: Message[] = [];
    for (const turn of this.session.turns.slice(0, -1)) {
      if ((turn.agent ?? this.core.root) === this.core.root) history.push(userMessage(turn.input));
      for (const m of turn.messages ?? []) history.push(messageFromJson(m));
    }
    history.push(userMessage(this.turn!.input));
    for (const m of this.turn!.messages ?? []) history.push(messageFromJson(m)); // a resumed turn's so far
    const inv = new Invocation(rootIr, this.core.configFor(rootIr, this.config), history, [...rootIr.tools], "none", "none", this.turn!.messages);
    if (decisions !== null && (await this.pausedAgain(inv, decisions))) return;
    this.settle(await this.invoke(inv, true));
  }

  /** Complete the round that paused for approvals and give its outcomes to the model; true
   * when a resumed workflow deferred another step (the run pauses again). */
  private async pausedAgain(inv: Invocation, decisions: Record<string, unknown>): Promise<boolean> {
    const outcomes = await resumeOutcomes(this, inv, decisions);
    if (outcomes === null) return true;
    for (const m of this.core.codec(inv.agent, this.config).resultsMessages(this.taint.spotlight(inv, outcomes))) inv.add(m);
    return false;
  }

  private settle(result: AgentResult): void {
    const turn = this.turn!;
    turn.output = result.output ?? null;
    if (result.status === "error") {
      turn.status = "error";
      turn.error = result.error ?? null;
    } else if (result.status === "handoff" || result.status === AWAITING) turn.status = result.status;
  }

  private async resume(stack: Frame[], decisions: Record<string, unknown> | null = null): Promise<void> {
    const top = stack[stack.length - 1]!;
    const agent = this.core.doc.agents[top.agent];
    const [tools, grant] = this.stackTools(stack);
    const record = [...(top.messages ?? [])];
    top.messages = record;
    const inv = new Invocation(agent, this.core.configFor(agent, this.config), record.map(messageFromJson), tools, "user", grant, record);
    if (decisions === null) inv.add(userMessage(this.turn!.input));
    else if (await this.pausedAgain(inv, decisions)) return;
    this.settle(await this.invoke(inv, true));
    if (inv.completed) {
      stack.pop();
      this.noteCompletion(stack, inv);
      this.turn!.status = stack.length > 1 ? "handoff" : "complete";
    }
  }

  /** The top frame's tools and grant, recomputed from the IR: a session only says which
   * helper is answering, never what it may call (a stored grant is not trusted). */
  private stackTools(stack: Frame[]): [Tool[], unknown] {
    const agents = this.core.doc.agents;
    let tools: Tool[] = [...agents[stack[0]!.agent].tools];
    let grant: unknown = "none";
    for (let i = 1; i < stack.length; i++) {
      const below = stack[i - 1]!.agent;
      const name = stack[i]!.agent;
      // A helper called by a nested helper (handoff none) hands the conversation over from
      // there: the IR path from the frame below to that parent gives its tools.
      const parent = String(stack[i]!.parent || below);
      const choices: [Tool[], unknown][] = [];
      for (const via of pathsTools(agents, below, parent, tools, new Set()))
        for (const use of agents[parent].helpers)
          if (use.name === name && use.handoff === "user") choices.push([effectiveTools(agents[name], use.tools, via), use.tools]);
      if (!choices.length)
        throw new ConfigError(`session.stack[${i}]: ${parent} does not hand the conversation to ${name} in this agent's IR; the session does not belong to these bindings`);
      // Several IR paths: only what every one of them grants (never the union).
      const common = choices.map((c) => new Set(c[0].map((t) => t.name))).reduce((a, b) => new Set([...a].filter((n) => b.has(n))));
      tools = choices[0]![0].filter((t) => common.has(t.name));
      grant = choices.length === 1 ? choices[0]![1] : tools.map((t) => t.name);
    }
    return [tools, grant];
  }

  private noteCompletion(stack: Frame[], inv: Invocation): void {
    const below = stack[stack.length - 1]!;
    const agent = this.core.doc.agents[below.agent];
    const note = `[${inv.name} finished the conversation it was handed` + (inv.summary ? `: ${inv.summary}]` : "]");
    const message = this.core.codec(agent, this.config).feedbackMessage(note);
    if (stack.length === 1) this.turn!.messages.push(messageToJson(message));
    else below.messages = [...(below.messages ?? []), messageToJson(message)];
  }

  // -- failures

  /** Report a failure: onError, then an `error` intent unless a middleware handled it. The
   * intent's message is `message` when given, else `prefix` and the error's own text;
   * `details` join its payload. An intent that reaches nobody (no handler, no onError or
   * onIntent middleware, no stream consumer) is written to `console.warn`. */
  async fail(error: unknown, agentName: string, prefix = "", mark = true, given: string | null = null, details: Record<string, unknown> = {}): Promise<string> {
    const message = given ?? prefix + describeError(error);
    if (mark && this.turn !== null && agentName === this.turn.agent) {
      this.turn.status = "error";
      this.turn.error = message;
    }
    this.ctx.activeAgent = agentName;
    let handled = false;
    try {
      handled = this.core.middleware.has("onError") && (await this.core.middleware.error(error, this.session, this.ctx));
    } catch {
      handled = false;
    }
    if (!handled) {
      await this.emit("error", { message, ...details }, agentName);
      const heard = this.sink !== null || this.core.handlers.length > 0 || this.core.middleware.hearsErrors(agentName);
      if (!heard) console.warn(unheardError(agentName, message));
    }
    return message;
  }

  // -- dispatching intents

  /** `repairs` are the decoder's repairs of the intent's block (ctx.repairs for middleware). */
  async emit(name: string, value: unknown, agentName: string, raw: string | null = null, active: string | null = null, repairs: readonly Repair[] = []): Promise<Control | null> {
    if (this.cancelled) return { skip: true };
    value = markVia(value); // "via": "execute_code" for the calls of code mode
    const core = this.core;
    if (this.turn !== null) this.turn.intents.push({ name, value, agent: agentName });
    if (this.trace !== null) this.trace.intent(name, value, agentName, active);
    if (this.sink) this.sink(name, value, agentName, false);
    const returned: [string, unknown][] = [];
    const failures: HookFailure[] = [];
    // Every middleware and handler sees the intent whatever the others do; the first control wins.
    if (core.middleware.hasIntent) {
      this.ctx.activeAgent = active ?? agentName;
      this.ctx.rawBlock = raw;
      this.ctx.repairs = repairs.map((r) => ({ ...r }));
      returned.push(...(await core.middleware.each("onIntent", name, value, this.ctx, failures)));
    }
    for (const handler of core.handlers) {
      const who = `intent handler '${handler.label}'`;
      try {
        returned.push([who, await handler.call(name, value, agentName)]);
      } catch (error) {
        failures.push([who, error]);
      }
    }
    // Only a call is controlled: other return values are not read.
    const call = name in CALL_KINDS;
    let control: Control | null = null;
    let refused = false;
    if (call) [control, refused] = await this.control(returned, name, value, agentName);
    // Fail closed: a call whose handler failed while deciding on it does not run.
    for (const [who, error] of failures) await this.hookFailed(who, error, name, value, agentName, call);
    return call && (failures.length || refused) ? { skip: true } : control;
  }

  /** The first control among the guards' return values on call intent `name`, and whether
   * any of them was not a control (each reported by an `error` intent: the call is refused). */
  private async control(returned: [string, unknown][], name: string, value: any, agentName: string): Promise<[Control | null, boolean]> {
    let control: Control | null = null;
    let refused = false;
    for (const [who, answer] of returned) {
      try {
        control = control ?? controlOf(answer);
      } catch (error) {
        if (!(error instanceof NotAControl)) throw error;
        refused = true;
        const what = value && typeof value === "object" ? `${name} ${value.type ?? "None"}` : name;
        const named = error.naming(who, what);
        await this.fail(named, agentName, "", false, named.message, { handler: who, intent: name });
      }
    }
    return [control, refused];
  }

  /** Report a handler or middleware that threw on `name`: an `error` intent naming it, the
   * intent and (for a call) that the call was not run, with the stack trace. */
  private async hookFailed(who: string, error: unknown, name: string, value: any, agentName: string, skipped: boolean): Promise<void> {
    if (name === "error") return; // an error intent about an error intent would loop
    let what = name;
    if (skipped && value && typeof value === "object") what += ` ${value.type ?? "None"}`;
    const message = `${who} failed on ${what}: ${describeError(error)}` + (skipped ? " (the call was not run)" : "");
    const traceback = error instanceof Error && error.stack ? error.stack : String(error);
    await this.fail(error, agentName, "", false, message, { handler: who, intent: name, traceback });
  }

  /** A partial intent to the sink, then to partial handlers and middleware; returns a promise
   * only when some of those are there to wait for (a promise per streamed chunk costs). */
  emitPartial(event: Extract<DecodeEvent, { type: "partial" }>, agentName: string, rnd: Round): Promise<void> | void {
    if (this.cancelled) return;
    const name = event.kind === "custom" && event.name ? event.name : event.kind;
    const value: Record<string, any> = {
      partial: true,
      complete: false,
      mode: event.kind === "response_text" ? "text" : "structured",
      segment: event.segment,
      snapshot: event.snapshot,
      raw: event.raw,
    };
    if (event.delta !== undefined) value.delta = event.delta;
    if (this.sink) this.sink(name, value, agentName, true);
    if (this.core.middleware.hasPartial || this.core.partialHandlers.length) return this.partialHooks(event, name, value, agentName, rnd);
  }

  private async partialHooks(event: Extract<DecodeEvent, { type: "partial" }>, name: string, value: Record<string, any>, agentName: string, rnd: Round): Promise<void> {
    const failures: HookFailure[] = [];
    if (this.core.middleware.hasPartial) {
      this.ctx.activeAgent = agentName;
      await this.core.middleware.each("onIntentPartial", name, value, this.ctx, failures);
    }
    for (const handler of this.core.partialHandlers) {
      try {
        await handler.call(name, value, agentName);
      } catch (error) {
        failures.push([`intent handler '${handler.label}'`, error]);
      }
    }
    for (const [who, error] of failures) {
      // One report per handler and segment, not one per streamed chunk.
      const key = `${who}\u0000${event.segment}`;
      if (rnd.partialFailures.has(key)) continue;
      rnd.partialFailures.add(key);
      await this.hookFailed(who, error, name, value, agentName, false);
    }
  }

  // -- one agent's loop

  async invoke(inv: Invocation, top = false): Promise<AgentResult> {
    const core = this.core;
    const missing = core.contextSchema.missing(inv.agent, this.context);
    if (missing.length) {
      const msg = await this.fail(new ContextError(`missing required context ${missing.join(", ")} for ${inv.name}`), inv.name);
      return { status: "error", error: msg };
    }
    const codec = core.codec(inv.agent, this.config);
    const limit = core.maxLoops(inv.agent, inv.configName);
    let retries = 0;
    for (let loop = 0; loop < limit; loop++) {
      if (this.cancelled) return { status: "error", error: "the run was cancelled" };
      inv.tools = this.budget.tools(inv.tools) as Tool[]; // `recall` once a result was cut
      const contract = core.contract(inv);
      const rnd = await this.round(inv, codec, contract, top);
      const text = rnd.chunks.join("");
      if (text || rnd.nativeCalls.length || rnd.reasoning.length) {
        const message = codec.assistantMessage({ text, calls: rnd.nativeCalls });
        // The provider wants its reasoning back, unchanged, with the same answer.
        inv.add(rnd.reasoning.length ? { ...message, reasoning: rnd.reasoning } : message);
      }
      const outcomes = rnd.outcomes;
      if (rnd.error !== null) {
        const msg = await this.fail(rnd.error, inv.name);
        return { status: "error", error: msg };
      }
      if (outcomes.length) {
        if (outcomes.some((o) => o.status === "pending")) {
          pause(this, outcomes); // a deferred approval: the run stops at this round
          return { status: AWAITING };
        }
        const stop = this.progress(inv, outcomes, rnd);
        for (const m of codec.resultsMessages(this.taint.spotlight(inv, outcomes))) inv.add(m);
        if (stop !== null) {
          const msg = await this.fail(new AuwgentError(stop), inv.name);
          return { status: "error", error: msg };
        }
        if (this.handedOff) return { status: "handoff" };
        if (rnd.problems.length) inv.add(codec.feedbackMessage(rnd.problems.join("\n")));
        continue;
      }
      const problems = rnd.problems.length ? rnd.problems : this.missingOutput(inv, rnd);
      if (problems.length) {
        retries++;
        if (retries > core.options.maxOutputRetries) {
          const msg = await this.fail(
            new AuwgentError(`${inv.name}'s output was still invalid after ${core.options.maxOutputRetries} retries: ` + problems.join("; ")),
            inv.name,
          );
          return { status: "error", error: msg };
        }
        inv.add(codec.feedbackMessage("Your last response could not be used:\n- " + problems.join("\n- ")));
        continue;
      }
      return this.terminal(inv, rnd);
    }
    const msg = await this.fail(
      new AuwgentError(`tool-loop limit reached: ${inv.name} made ${limit} model calls without a final answer (maxToolLoops = ${limit})`),
      inv.name,
    );
    return { status: "error", error: msg };
  }

  /** Watch for a model going round in circles; a first warning joins the round's problems. */
  private progress(inv: Invocation, outcomes: CallOutcome[], rnd: Round): string | null {
    if (this.loops === null) return null;
    const repeatable = new Set(inv.tools.filter((t) => t.repeatable).map((t) => t.name));
    const steps: Step[] = outcomes
      .filter((o) => o.status !== "skipped" && !(o.kind === "tool" && repeatable.has(o.name)))
      .map((o) => [o.kind, o.name, o.args, o.status === "ok" ? o.result : o.error]);
    const verdict = this.loops.observe(inv.name, steps);
    if (verdict === null) return null;
    if (verdict[0] === "stop") return LoopDetector.failure(verdict[1]);
    rnd.problems.push(LoopDetector.note(verdict[1]));
    return null;
  }

  private missingOutput(inv: Invocation, rnd: Round): string[] {
    const structured = inv.agent.output.kind !== "text";
    if (structured && rnd.output === null)
      return [`No output was given: answer with your structured output (${outputNames(inv.agent, this.core.doc.types).join(" or ")}).`];
    if (!structured && !rnd.texts.length && !rnd.customs && !inv.completed) return ["The response was empty: answer the user."];
    return [];
  }

  private async terminal(inv: Invocation, rnd: Round): Promise<AgentResult> {
    let response: Record<string, unknown>;
    let output: unknown;
    if (rnd.output !== null) {
      response = { ...rnd.output };
      output = rnd.output.response;
    } else {
      output = rnd.texts.join("\n\n");
      response = { text: output };
    }
    if (rnd.truncated) response.truncated = true;
    response.finish_reason = rnd.finish?.reason ?? null;
    response.usage = rnd.usage;
    this.ctx.activeAgent = inv.name;
    try {
      if (this.core.middleware.has("onLLMEnd")) await this.core.middleware.llmEnd(response, this.ctx);
    } catch (error) {
      await this.fail(error, inv.name, "onLLMEnd failed: ", false);
    }
    return { status: "complete", output };
  }

  private async round(inv: Invocation, codec: Codec, contract: Contract, top: boolean): Promise<Round> {
    const core = this.core;
    const cfg = inv.agent.configs[inv.configName];
    let system = this.taint.notice(inv, core.systemPrompt(inv, codec, contract, this.context, this.persona, this.memory.section));
    this.ctx.activeAgent = inv.name;
    this.ctx.systemPrompt = system;
    // Streamed on the wire only for someone to see the partials (as the Python runtime).
    const partials = core.wantsPartials || this.sink !== null;
    const rnd: Round = { streamed: partials, chunks: [], calls: [], outcomes: [], nativeCalls: [], texts: [], output: null, problems: [], customs: 0, error: null, model: "", usage: null, finish: null, truncated: false, partialFailures: new Set(), reasoning: [] };
    try {
      if (core.middleware.has("onLLMStart")) system = await core.middleware.llmStart(system, this.ctx);
    } catch (error) {
      rnd.error = error;
      return rnd;
    }
    this.ctx.systemPrompt = system;
    if (top) this.session.system_prompt = system;
    const [functions, responseSchema] = core.requestParts(codec, contract);
    let request: ModelRequest = {
      model: String(cfg.model.model),
      system,
      messages: [...inv.history],
      functions,
      responseSchema,
      options: cfg.model.options ?? {},
      stream: partials,
      contract,
    };
    try {
      request = await this.budget.fit(inv, request); // compaction, the window check
    } catch (error) {
      rnd.error = error;
      return rnd;
    }
    const over = this.overBudget();
    if (over !== null) {
      rnd.error = new AuwgentError(over);
      return rnd;
    }
    this.spent.requests++; // counted before it starts: concurrent helpers see it
    const span = this.trace === null ? null : this.trace.chatStart(inv.name, providerKey(cfg.model), String(cfg.model.model));
    const decoder = codec.decoder(contract, partials);
    try {
      // Without fallback models the provider's stream is read directly (one generator less
      // per event). The fallback generator names the model that answers when it starts.
      rnd.model = this.answering(cfg.model);
      const events = cfg.fallback?.length ? this.stream(cfg, request, rnd) : this.core.provider(cfg.model).stream(request);
      // The events a network read brought come out of `take()` (modelStream) without an
      // await each; a `for await` otherwise, with its `return()` when the loop is left early.
      const it: AsyncIterator<StreamEvent> & { take?(): StreamEvent | undefined } = events[Symbol.asyncIterator]();
      for (let step = await it.next(); !step.done; step = await it.next()) {
        let event: StreamEvent | undefined = step.value;
        try {
          for (; event !== undefined; event = it.take?.()) {
            if (event.type === "text") rnd.chunks.push(event.text);
            else if (event.type === "finish") rnd.finish = event;
            else if (event.type === "usage") rnd.usage = usageOf(event);
            else if (event.type === "part") {
              this.contentPart(inv, event);
              if (REASONING_KINDS.has(event.kind)) rnd.reasoning.push({ kind: event.kind, data: event.data });
              continue;
            }
            for (const decoded of decoder.feed(event)) {
              const pending = this.decoded(inv, contract, rnd, decoded);
              if (pending) await pending;
            }
          }
        } catch (error) {
          await it.return?.();
          throw error;
        }
      }
      await this.close(inv, contract, rnd, decoder.close());
    } catch (error) {
      rnd.error = error;
    }
    if (span !== null) this.trace!.chatEnd(span, rnd.model, rnd.usage, rnd.finish?.reason ?? null, rnd.error);
    this.count(rnd);
    this.budget.observe(request, rnd.usage?.input_tokens);
    // Most rounds have no call or one: no Promise.all for those.
    const calls = rnd.calls;
    if (calls.length === 1) rnd.outcomes = [await started(calls[0]!)];
    else if (calls.length) rnd.outcomes = await Promise.all(calls.map(started));
    return rnd;
  }

  /** Keep a non-text part of the answer (an image, code the model ran) in the turn. */
  private contentPart(inv: Invocation, part: Extract<StreamEvent, { type: "part" }>): void {
    // An optional key of the turn (docs/sessions.md), present only when there are parts.
    if (this.turn !== null) (this.turn.parts ??= []).push({ agent: inv.name, kind: part.kind, data: part.data });
  }

  /**
   * What the decoder finishes at the end of the stream, read with the finish reason. After an
   * output limit or a refusal, whatever the stream left open was cut off: it never runs and
   * the round ends with an error. A cut text answer is delivered as `truncated`; a refusal is
   * an error even when nothing was left open.
   */
  private async close(inv: Invocation, contract: Contract, rnd: Round, events: DecodeEvent[]): Promise<void> {
    const stop = abnormal(rnd.finish);
    for (const decoded of events) {
      if (stop === null || decoded.type === "partial") await this.decoded(inv, contract, rnd, decoded);
      else if (stop === "length" && decoded.type === "final" && decoded.kind === "response_text" && contract.output.kind === "text") {
        rnd.truncated = true;
        await this.decoded(inv, contract, rnd, decoded);
      } else if (rnd.error === null) rnd.error = new AuwgentError(stopped(rnd.finish!, decoded));
    }
    if (stop === null || rnd.error !== null) return;
    const produced = rnd.texts.length || rnd.calls.length || rnd.customs || rnd.output !== null;
    if (stop !== "length" || !produced) rnd.error = new AuwgentError(stopped(rnd.finish!, null));
  }

  // -- budgets

  /** Record one model call in the turn and in the run's totals. */
  private count(rnd: Round): void {
    this.spent.tokens += rnd.usage?.total_tokens ?? 0;
    if (this.turn !== null && !this.cancelled)
      this.turn.model_calls.push({ model: rnd.model, finish_reason: rnd.finish?.reason ?? null, usage: rnd.usage });
  }

  /** Why the next model call must not be made, or null (the config's `budget`). */
  private overBudget(): string | null {
    const budget = this.core.options.budget;
    if (budget === null) return null;
    const limits: [string, number | null, number, string][] = [
      ["requests", budget.requests, this.spent.requests, "run"],
      ["tokens", budget.tokens, this.spent.tokens, "run"],
      ["conversationRequests", budget.conversationRequests, this.earlier.requests + this.spent.requests, "conversation"],
      ["conversationTokens", budget.conversationTokens, this.earlier.tokens + this.spent.tokens, "conversation"],
    ];
    for (const [key, limit, used, scope] of limits)
      if (limit !== null && used >= limit) {
        const what = key.includes("equests") ? "model requests" : "tokens";
        return `budget exceeded: this ${scope} has used ${used} ${what} of its ${limit} (budget.${key}); no further model request is made`;
      }
    return null;
  }

  /**
   * The events of one model call, with the config's `fallback` models behind it: a model
   * that fails with a retryable error (after its own retries) before producing any event
   * hands the same request to the next one. Once an event is out, a failure passes through.
   */
  private async *stream(cfg: Config, request: ModelRequest, answered: Round): AsyncGenerator<StreamEvent> {
    const models = [cfg.model, ...(cfg.fallback ?? [])];
    const failed: [string, ProviderError][] = [];
    for (let index = 0; index < models.length; index++) {
      const model = models[index];
      const req = index ? { ...request, model: String(model.model), options: model.options ?? {} } : request;
      answered.model = this.answering(model);
      let started = false;
      try {
        for await (const event of this.core.provider(model).stream(req)) {
          started = true;
          yield event;
        }
        return;
      } catch (error) {
        if (started || !(error instanceof ProviderError)) throw error;
        failed.push([answered.model, error]);
        if (error.retryable && index < models.length - 1) continue;
        throw failed.length > 1 ? new FallbackError(failed) : error;
      }
    }
  }

  /** How `model_calls` names who answers for `model`: `provider:model`, or the name of the
   * provider that replaces every model. */
  private answering(model: Model): string {
    const override = this.core.providerOverride;
    if (override !== null) return String(override.name || override.constructor?.name || "provider");
    return `${providerKey(model)}:${model.model}`;
  }

  /** One decoded event; a promise only when there is something to wait for (see emitPartial). */
  private decoded(inv: Invocation, contract: Contract, rnd: Round, event: DecodeEvent): Promise<void> | void {
    if (event.type === "partial") {
      if (contract.output.kind !== "text" && event.kind === "response_text") return;
      if (this.core.wantsPartials || this.sink !== null) return this.emitPartial(event, inv.name, rnd);
      return;
    }
    return this.finalEvent(inv, contract, rnd, event);
  }

  private async finalEvent(inv: Invocation, contract: Contract, rnd: Round, event: Exclude<DecodeEvent, { type: "partial" }>): Promise<void> {
    const structured = contract.output.kind !== "text";
    if (event.type === "rejected") return this.rejected(inv, rnd, event);
    const kind = event.kind;
    if (kind in CALL_KINDS) {
      if (event.callId != null) rnd.nativeCalls.push(event);
      start(rnd, () => this.call(inv, contract, event));
    } else if (kind === "response_text") {
      if (!structured) {
        const text = String(event.payload.text ?? "");
        rnd.texts.push(text);
        const value: Record<string, unknown> = { text };
        if (rnd.truncated) value.truncated = true;
        await this.emit("response_text", value, inv.name, event.raw, null, event.repairs);
      }
    } else if (kind === "response_schema") {
      if (event.callId != null) rnd.nativeCalls.push(event);
      await this.schemaOutput(inv, contract, rnd, event);
    } else {
      if (event.callId != null) rnd.nativeCalls.push(event);
      await this.custom(inv, contract, rnd, event);
    }
  }

  private async rejected(inv: Invocation, rnd: Round, event: RejectedEvent): Promise<void> {
    if ((event.kind !== null && event.kind in CALL_KINDS) || (event.kind === null && event.callId != null)) {
      const kind = CALL_KINDS[event.kind ?? "tool_call"]!;
      const name = event.name ?? "unknown";
      const args = refusedArgs(inv, name, event, this.core.doc.types);
      if (event.callId != null)
        rnd.nativeCalls.push({ type: "final", kind: event.kind ?? "tool_call", name, segment: event.segment, payload: { type: name, args }, raw: event.raw, callId: event.callId });
      start(rnd, () => this.refuse(inv, kind, name, args, event.message, event.callId ?? null));
      return;
    }
    rnd.problems.push(event.message);
  }

  private async schemaOutput(inv: Invocation, contract: Contract, rnd: Round, event: FinalEvent): Promise<void> {
    const types = this.core.doc.types;
    const name = String(event.payload.type || event.name || "");
    const allowed = outputNames(inv.agent, types);
    if (!allowed.includes(name)) {
      rnd.problems.push(`[schema: ${name}] is not an output of ${inv.name}; use one of: ${allowed.join(", ")}`);
      return;
    }
    const type = name in types ? types[name] : contract.output;
    const response = event.payload.response;
    const errors = validate(response, type, types);
    if (errors.length) {
      rnd.problems.push(`Your ${name} output is invalid: ` + errors.join("; "));
      return;
    }
    const value = { type: name, response };
    rnd.output = value;
    await this.emit("response_schema", value, inv.name, event.raw, null, event.repairs);
  }

  private async custom(inv: Invocation, contract: Contract, rnd: Round, event: FinalEvent): Promise<void> {
    const name = String(event.name);
    const spec = contract.intents.find((i) => i.name === name);
    if (!spec) {
      rnd.problems.push(`${name} is not an intent you can emit`);
      return;
    }
    const payload = { ...event.payload };
    const errors = validate(payload, { kind: "object", fields: spec.fields }, this.core.doc.types);
    if (errors.length) {
      rnd.problems.push(`Your ${name} intent is invalid: ` + errors.join("; "));
      return;
    }
    rnd.customs++;
    if (name === COMPLETE_INTENT && inv.handoff === "user") {
      inv.completed = true;
      inv.summary = typeof payload.summary === "string" ? payload.summary : null;
    }
    await this.emit(name, payload, inv.name, event.raw, null, event.repairs);
  }

  // -- the call path (calls.py)

  async refuse(inv: Invocation, kind: CallKind, name: string, args: Record<string, any>, message: string, callId: string | null): Promise<CallOutcome> {
    await this.emit("tool_error", { tool: name, message }, inv.name);
    return { kind, name, args, status: "error", error: message, callId };
  }

  async call(inv: Invocation, contract: Contract, event: FinalEvent): Promise<CallOutcome> {
    const kind = CALL_KINDS[event.kind]!;
    const name = String(event.name);
    const args = { ...(event.payload.args ?? {}) };
    try {
      return await this.callChecked(inv, contract, event, kind, name, args);
    } catch (error) {
      return this.refuse(inv, kind, name, args, describeError(error), event.callId ?? null);
    }
  }

  private async callChecked(inv: Invocation, contract: Contract, event: FinalEvent, kind: CallKind, name: string, args: Record<string, any>): Promise<CallOutcome> {
    const callId = event.callId ?? null;
    const spec = findCallable(contract, kind, name);
    if (!spec) {
      const label = { tool: "Tool", workflow: "Workflow", helper: "Helper" }[kind];
      return this.refuse(inv, kind, name, args, `${label} not found: ${name}`, callId);
    }
    const control = await this.emit(event.kind, { type: name, args }, speaker(inv, kind, name), event.raw, inv.name, event.repairs);
    const outcome = await this.controlled(inv, kind, name, args, control, callId);
    if (outcome) return outcome;
    const errors = validate(args, { kind: "object", fields: spec.params }, this.core.doc.types, "$");
    if (errors.length) return this.refuse(inv, kind, name, args, `invalid arguments for ${name}: ` + errors.join("; "), callId);
    // The taint guard first: it refuses, or hands the approval gate its record (src/taint.ts).
    const gate = await this.taint.gate(inv, kind, name, args, spec.params, spec.approval ?? null);
    if (gate.refusal !== null) return this.refuse(inv, kind, name, args, gate.refusal, callId);
    // Only the answering agent's own model calls can wait for agent.resume() (inv.record).
    const verdict = await this.approvals.check(inv, kind, name, args, gate.approval, spec.params, inv.record !== null, gate.taint);
    if (verdict !== null) return this.decidedCall(inv, kind, name, verdict, callId);
    if (contract.codeApi) return executeCode(this, inv, contract, String(args.code), callId); // code mode: execute_code
    return this.runCall(inv, kind, name, args, callId);
  }

  /** A gated call after its decision: pending, denied (the caller is told), or run. */
  async decidedCall(inv: Invocation, kind: CallKind, name: string, verdict: Verdict, callId: string | null): Promise<CallOutcome> {
    const args = verdict.args;
    if (verdict.approved) return this.runCall(inv, kind, name, args, callId);
    if (verdict.deferred) return { kind, name, args, status: "pending", callId, requestId: verdict.requestId || null };
    return { kind, name, args, status: "error", error: verdict.denial(name), callId };
  }

  /** The call itself, once it is decided, checked and approved. */
  private async runCall(inv: Invocation, kind: CallKind, name: string, args: Record<string, any>, callId: string | null): Promise<CallOutcome> {
    // An approver may answer after timeouts.run is up (the race does not stop it): then nothing runs.
    if (this.cancelled) return { kind, name, args, status: "error", error: "the run was cancelled", callId };
    if (kind === "tool" && name === RECALL && this.budget.offersRecall(inv)) return this.recall(inv, args, callId);
    if (kind === "tool") return this.tool(inv, name, args, callId);
    if (kind === "workflow") return this.workflow(inv, name, args, callId);
    return this.helper(inv, name, args, callId);
  }

  /** The built-in `recall` (src/budget.ts): the next slice of a kept result. */
  private async recall(inv: Invocation, args: Record<string, any>, callId: string | null): Promise<CallOutcome> {
    const [ok, text] = this.budget.recallText(inv, args);
    if (!ok) return this.refuse(inv, "tool", RECALL, args, text, callId);
    await this.emit("tool_result", { name: RECALL, args, result: text, overridden: false }, inv.name);
    return { kind: "tool", name: RECALL, args, status: "ok", result: text, callId };
  }

  private async controlled(inv: Invocation, kind: CallKind, name: string, args: Record<string, any>, control: Control | null, callId: string | null): Promise<CallOutcome | null> {
    if (control === null) return null;
    if (control.skip) {
      await this.emit("tool_skipped", { type: name, args }, speaker(inv, kind, name), null, inv.name);
      return { kind, name, args, status: "skipped", callId };
    }
    await this.emit(RESULT_INTENT[kind], { name, args, result: control.result, overridden: true }, speaker(inv, kind, name), null, inv.name);
    return { kind, name, args, status: "ok", result: resultText(control.result), callId };
  }

  private async tool(inv: Invocation, name: string, args: Record<string, any>, callId: string | null): Promise<CallOutcome> {
    const registry = this.core.registry;
    if (!registry.has(name)) return this.refuse(inv, "tool", name, args, notConfigured(name), callId);
    let result: unknown;
    let images: Record<string, any>[] = [];
    const returns = inv.tools.find((t) => t.name === name)?.returns;
    try {
      result = await registry.call(name, args);
      if (result instanceof ToolParts) [result, images] = [result.result, result.parts];
      if (returns !== undefined) this.checkResult(name, result, returns);
    } catch (error) {
      const message = describeError(error);
      await this.toolFailed(inv, name, message);
      return { kind: "tool", name, args, status: "error", error: message, callId };
    }
    await this.emit("tool_result", { name, args, result, overridden: false }, inv.name);
    const whole = resultText(result);
    this.taint.result(inv, name, args, whole); // the whole result: what recall may show
    const text = this.budget.cap(inv, name, whole); // @maxOutput
    return { kind: "tool", name, args, status: "ok", result: text, callId, ...(images.length ? { parts: images } : {}) };
  }

  private async toolFailed(inv: Invocation, name: string, message: string): Promise<void> {
    this.ctx.activeAgent = inv.name;
    let handled = false;
    try {
      handled = this.core.middleware.has("onError") && (await this.core.middleware.error(new ToolError(`${name}: ${message}`), this.session, this.ctx));
    } catch {
      handled = false;
    }
    if (!handled) await this.emit("tool_error", { tool: name, message }, inv.name);
  }

  /** Run a workflow; `journal` replays the steps of a run resumed after a pause. */
  async workflow(inv: Invocation, name: string, args: Record<string, any>, callId: string | null, journal: Journal = new Journal()): Promise<CallOutcome> {
    const workflow = inv.agent.workflows.find((w) => w.name === name)!; // a name the contract offered
    this.ctx.workflow = name;
    let result: unknown;
    const step = async (tool: string, toolArgs: Record<string, any>): Promise<unknown> => {
      const [done, replayed] = journal.replayed(tool, toolArgs);
      if (done) return replayed;
      const value = await this.workflowTool(inv, workflow, tool, toolArgs, journal);
      journal.add(tool, toolArgs, value);
      return value;
    };
    try {
      result = await runWorkflow(workflow, args, this.context, step);
    } catch (error) {
      if (error instanceof StepPaused) {
        // A step waits for agent.resume(): so does the workflow.
        this.approvals.journals.set(error.requestId, journal.steps);
        return { kind: "workflow", name, args, status: "pending", callId, requestId: error.requestId };
      }
      const wf = error instanceof WorkflowError ? error : new WorkflowError(describeError(error));
      const failure = { error: wf.message, file: wf.file, line: wf.line };
      await this.emit("workflow_result", { name, args, result: failure }, inv.name);
      await this.toolFailed(inv, name, wf.message);
      // The model learns only that the workflow failed: the scoped tool, the .agent location
      // and the error's text are the application's (intents), as in the Python runtime.
      return { kind: "workflow", name, args, status: "error", error: `workflow ${name} failed: it could not be completed`, callId };
    } finally {
      delete this.ctx.workflow;
    }
    await this.emit("workflow_result", { name, args, result }, inv.name);
    return { kind: "workflow", name, args, status: "ok", result: resultText(result), callId };
  }

  private async workflowTool(inv: Invocation, workflow: Workflow, name: string, args: Record<string, any>, journal: Journal): Promise<unknown> {
    const tool = workflow.tools.find((t: any) => t.name === name) ?? inv.tools.find((t) => t.name === name);
    if (!tool) throw new ToolError(`workflow ${workflow.name} cannot call ${name}: no such tool`);
    // The step that paused was asked, checked and decided before: only its decision is left.
    let verdict = journal.decision(name, args);
    if (verdict === null) {
      const control = await this.emit("tool_call", { type: name, args }, inv.name);
      if (control !== null) {
        await this.controlled(inv, "tool", name, args, control, null);
        return control.skip ? null : control.result;
      }
      const errors = validate(args, { kind: "object", fields: tool.params }, this.core.doc.types, "$");
      if (errors.length) {
        const message = `invalid arguments for ${name}: ` + errors.join("; ");
        await this.emit("tool_error", { tool: name, message }, inv.name);
        throw new ToolError(message);
      }
    }
    if (!this.core.registry.has(name)) {
      const message = notConfigured(name);
      await this.emit("tool_error", { tool: name, message }, inv.name);
      throw new ToolError(message);
    }
    if (verdict === null) {
      verdict = await this.approvals.check(inv, "tool", name, args, tool.approval, tool.params, inv.record !== null);
      if (verdict !== null && verdict.deferred) throw new StepPaused(verdict.requestId);
    }
    if (this.cancelled) throw new ToolError("the run was cancelled"); // an approval that came too late
    if (verdict !== null) {
      if (!verdict.approved) {
        // A failed step: the workflow ends with this error.
        const message = verdict.denial(name);
        await this.emit("tool_error", { tool: name, message }, inv.name);
        throw new ToolError(message);
      }
      args = { ...verdict.args };
    }
    let result: unknown;
    let value: unknown;
    try {
      result = await this.core.registry.call(name, args);
      value = this.checkResult(name, result, tool.returns);
    } catch (error) {
      await this.toolFailed(inv, name, describeError(error));
      throw error;
    }
    await this.emit("tool_result", { name, args, result, overridden: false }, inv.name);
    this.taint.result(inv, name, args, resultText(result), workflow.name);
    return value;
  }

  /** `result` as a workflow reads it; a ToolError when it breaks the declared return type (a
   * JSON string from a tool declared to return structured data is decoded first). */
  private checkResult(name: string, result: unknown, returns: IRType): unknown {
    const types = this.core.doc.types;
    const value = parsedResult(result, returns, types);
    const errors = validate(value, returns, types);
    if (errors.length) throw new ToolError(`tool ${name} returned a value that breaks its declared return type (${describe(returns, types)}): ` + errors.join("; "));
    return value;
  }

  private async helper(inv: Invocation, name: string, args: Record<string, any>, callId: string | null): Promise<CallOutcome> {
    const core = this.core;
    const use = inv.agent.helpers.find((h) => h.name === name)!; // a name the contract offered
    const helper = core.doc.agents[name];
    const text = helper.input.kind === "text" ? String(args.input ?? "") : pyJson(args); // as Python's json.dumps
    const child = new Invocation(
      helper,
      core.configFor(helper, this.config),
      [{ role: "user", content: text }],
      effectiveTools(helper, use.tools, inv.tools),
      use.handoff,
      use.tools,
    );
    this.taint.enter(child, inv, name);
    const result = await outsideCode(() => this.invoke(child)); // the helper's own calls are not the code's
    this.ctx.activeAgent = inv.name;
    this.taint.helperResult(inv, child, name, result.output);
    if (result.status === "error") {
      const message = `helper ${name} failed: ${result.error}`;
      await this.emit("tool_error", { tool: name, message }, inv.name);
      return { kind: "helper", name, args, status: "error", error: message, callId };
    }
    if (use.handoff === "user" || result.status === "handoff") {
      if (use.handoff === "user" && !child.completed && result.status !== "handoff")
        this.session.stack.push({
          agent: child.name,
          config: child.configName,
          handoff: "user",
          parent: inv.name,
          tools: child.grant,
          messages: child.history.map(messageToJson),
        });
      this.handedOff = true;
      return { kind: "helper", name, args, status: "ok", result: `${name} is now answering the user directly; you will be told when it is done.`, callId };
    }
    await this.emit("helper_result", { name, args, result: result.output }, name, null, inv.name);
    if (use.handoff === "user_then_continue")
      return {
        kind: "helper",
        name,
        args,
        status: "ok",
        result: `${name} answered the user directly and has finished; its answer was: ${resultText(result.output)}. Continue without repeating it.`,
        callId,
      };
    return { kind: "helper", name, args, status: "ok", result: resultText(result.output), callId };
  }
}

function pausedError(): ApprovalError {
  return new ApprovalError("this session is awaiting approvals: continue it with agent.resume(session, decisions) before running new input");
}

/** The token usage of every recorded model call of the session. */
function totalUsage(turns: readonly Turn[]): Usage {
  const total: Usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
  for (const turn of turns)
    for (const call of turn.model_calls ?? []) {
      const usage: Partial<Record<keyof Usage, unknown>> = call?.usage ?? {};
      for (const key of ["input_tokens", "output_tokens", "total_tokens"] as const) {
        const count = usage[key];
        if (typeof count === "number" && Number.isInteger(count)) total[key] += count;
      }
    }
  return total;
}

/** The provider's token counts as a turn records them (absent counts are 0). */
function usageOf(event: Extract<StreamEvent, { type: "usage" }>): Usage {
  const given = [event.inputTokens, event.outputTokens].filter((n): n is number => n !== null);
  const usage: Usage = { input_tokens: event.inputTokens ?? 0, output_tokens: event.outputTokens ?? 0, total_tokens: given.reduce((a, b) => a + b, 0) };
  // Prompt-cache counts (part of input_tokens), only from providers that report them.
  if (event.cacheReadTokens != null) usage.cache_read_tokens = event.cacheReadTokens;
  if (event.cacheWriteTokens != null) usage.cache_write_tokens = event.cacheWriteTokens;
  return usage;
}

/** Finish reasons that mean the provider stopped the answer: never a success, never re-asked. */
const REFUSED = new Set(["content_filter", "malformed_function_call", "safety", "recitation", "blocklist", "prohibited_content", "spii", "image_safety", "refusal", "pause_turn"]);

/** "length" for an answer cut by the output limit, the reason for a refused one, else null. */
function abnormal(finish: FinishEvent | null): string | null {
  if (finish === null) return null;
  const reason = finish.reason.toLowerCase();
  return reason === "length" || REFUSED.has(reason) ? reason : null;
}

/** Why a response could not be used, in the words the application sees. */
function stopped(finish: FinishEvent, cut: DecodeEvent | null): string {
  let reason = `finish_reason=${finish.reason}`;
  if (finish.reason.toLowerCase() === "length") {
    const what = cut !== null && cut.type !== "partial" ? `while writing ${cut.kind || "a call"} ${cut.name ?? ""}`.trimEnd() : "before it wrote an answer";
    return `the model stopped at its output limit (${reason}) ${what}`;
  }
  if (finish.raw && finish.raw !== finish.reason) reason += `, ${finish.raw}`; // the provider's own word, e.g. Gemini's SAFETY
  const said = finish.message ? `: ${finish.message}` : " (the provider gave no message)";
  return `the provider stopped the model's answer (${reason})${said}`;
}

/** Model requests and tokens recorded in `turns` (a conversation's earlier ones). */
function spentIn(turns: readonly Turn[]): { requests: number; tokens: number } {
  let requests = 0;
  let tokens = 0;
  for (const turn of turns)
    for (const call of turn.model_calls ?? []) {
      if (!call || typeof call !== "object") continue;
      requests++;
      tokens += call.usage?.total_tokens ?? 0;
    }
  return { requests, tokens };
}

/** The tools `goal` has on each helper path from `start` (`tools`) in the IR. */
function* pathsTools(agents: Record<string, IRAgent>, start: string, goal: string, tools: Tool[], seen: Set<string>): Generator<Tool[], void, undefined> {
  if (start === goal) {
    yield tools;
    return;
  }
  for (const use of agents[start].helpers)
    if (!seen.has(use.name) && use.handoff !== "user")
      yield* pathsTools(agents, use.name, goal, effectiveTools(agents[use.name], use.tools, tools), new Set([...seen, start]));
}

function speaker(inv: Invocation, kind: CallKind, name: string): string {
  return kind === "helper" ? name : inv.name;
}

function parsedResult(result: unknown, returns: IRType, types: Types): unknown {
  if (typeof result !== "string") return result;
  let kind: string;
  try {
    kind = resolve(returns, types).kind;
  } catch {
    return result;
  }
  if (["object", "array", "union", "number", "boolean"].includes(kind)) {
    try {
      return JSON.parse(result);
    } catch {
      return result;
    }
  }
  return result;
}

export function outputNames(agent: IRAgent, types: Types): string[] {
  const out = agent.output;
  if (out.kind === "ref") return [out.name];
  if (out.kind === "union") {
    const refs = out.variants.flatMap((v) => (v.kind === "ref" ? [v.name] : []));
    return refs.length ? refs : [describe(out, types)];
  }
  return [describe(out, types)];
}

/** `value` if it is plain JSON already (the usual case, checked by a walk), else its JSON copy. */
function jsonable<T>(value: T): T {
  if (value === undefined || isPlainJson(value)) return value;
  try {
    return JSON.parse(JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? String(v) : v)));
  } catch {
    return value;
  }
}

function isPlainJson(value: unknown): boolean {
  if (value === null || typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isPlainJson);
  if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    for (const key in value) if (!isPlainJson((value as Record<string, unknown>)[key])) return false;
    return true;
  }
  return false;
}

export { UnsupportedError };

/** The user message of a turn's input (its parts, when it was given as parts). */
function userMessage(given: { text: string; parts?: Record<string, any>[] }): Message {
  const message: Message = { role: "user", content: String(given.text) };
  if (given.parts && given.parts.length) message.parts = given.parts.map((p) => ({ ...p }));
  return message;
}
