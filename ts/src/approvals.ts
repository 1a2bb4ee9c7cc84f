// The approval gate: calls marked `@approval` run only once the application approves them.
// It follows the Python runtime's approvals.py and decisions.py; the journal a paused run
// leaves in its session is the same in both runtimes, so a run paused by one resumes in the
// other (docs/approvals.md).
//
// Every caller goes through ApprovalGate.check at the moment a call is about to execute (after
// the call intent, handler controls and argument validation): the model in either protocol, a
// workflow step, a helper using a tool it inherited. The gate emits `approval_request` `{id,
// kind, name, args, agent}`, asks the approver (`agent.onApproval` or config `approver`, sync
// or async, within the annotation's `timeout`), emits `approval_result` `{id, approved,
// reason}` and records the decision in the session's `approvals` audit list. Anything but a
// clear yes is a no.

import { randomBytes } from "node:crypto";
import { ApprovalError, ConfigError, ConflictError, ToolError, WorkflowError } from "./errors.js";
import { validate, type IRField, type Types } from "./schema.js";
import { findCallable, type CallKind, type CallOutcome } from "./section.js";
import { checkSession, type SessionState, type Turn } from "./session.js";
import { SessionStoreMiddleware, type SessionStore } from "./stores.js";
import { pyRepr, pyTypeName, pyValueRepr } from "./values.js";
import { describeError } from "./workflows.js";
import type { Approval, Tool } from "./ir.js";
import type { Invocation, Run } from "./engine.js";
import type { TaintRecord } from "./taint.js";

/** Seconds an approver may take when `@approval` gives no `timeout`. */
export const DEFAULT_TIMEOUT = 300;
/** The session's top-level status while approvals are pending. */
export const AWAITING = "awaiting_approval";
/** The stored session's status while one `agent.resume` holds it. */
export const RESUMING = "resuming";
const ANSWERS = 'True, False or {"approved": bool, "reason": str, "args": {...}}';
const UNDERSTOOD = 'expected True, False, "defer" or {"approved": bool, "reason": str, "args": {...}}';
const INTERRUPTED = (name: string) =>
  `${name} was interrupted: the run executing it stopped before its result was saved, so whether it took effect is unknown; it is not run again`;

/** What an approver is given: the `approval_request` intent's payload. */
export interface ApprovalRequest {
  id: string;
  kind: CallKind;
  name: string;
  args: Record<string, any>;
  agent: string;
  /** Only when the taint policy sent the call here: why, and the findings. */
  taint?: { reason: unknown; findings: unknown };
  [key: string]: unknown;
}

/** What an approver returns (or a promise of it). */
export type ApprovalDecision = boolean | "defer" | { approved: boolean; reason?: string | null; args?: Record<string, unknown> };
export type Approver = (request: ApprovalRequest) => ApprovalDecision | Promise<ApprovalDecision>;

/** The gate's answer for one call. */
export class Verdict {
  constructor(
    readonly approved: boolean,
    readonly args: Record<string, any>,
    readonly reason: string | null = null,
    readonly deferred = false,
    readonly requestId = "",
  ) {}

  /** What the caller (the model, a workflow) is told about a denied call. */
  denial(name: string): string {
    const text = `${name} was not approved, so it did not run`;
    return this.reason ? `${text}: ${this.reason}` : text;
  }
}

/** A workflow step's approval was deferred: it unwinds the workflow to its caller. A
 * WorkflowError, so that the interpreter (which wraps other failures of a step) lets it
 * through unchanged; the engine tells it from a failure first. */
export class StepPaused extends WorkflowError {
  constructor(readonly requestId: string) {
    super(`a step is waiting for approval (${requestId})`);
  }
}

export interface Step {
  name: string;
  args: Record<string, any>;
  result: unknown;
}

/** The tool calls of one workflow run, so that a resumed run replays those it made before the
 * pause instead of running them again. */
export class Journal {
  /** This run's steps, in order. */
  steps: Step[] = [];
  constructor(
    /** Recorded before the pause. */
    readonly done: Step[] = [],
    /** The paused step's request and its verdict. */
    private decided: [ApprovalRequest, Verdict] | null = null,
  ) {}

  /** `[true, result]` for a step made before the pause, else `[false, null]`. */
  replayed(name: string, args: Record<string, any>): [boolean, unknown] {
    if (this.steps.length >= this.done.length) return [false, null];
    const step = this.done[this.steps.length]!;
    same(step, name, args);
    this.steps.push(step);
    return [true, step.result];
  }

  /** The decision for the step that paused, when this is that step. */
  decision(name: string, args: Record<string, any>): Verdict | null {
    if (this.decided === null) return null;
    const [request, verdict] = this.decided;
    this.decided = null;
    same(request, name, args);
    return verdict;
  }

  add(name: string, args: Record<string, any>, result: unknown): void {
    this.steps.push({ name, args: { ...args }, result: jsonValue(result) });
  }
}

function same(recorded: { name: string; args: Record<string, any> }, name: string, args: Record<string, any>): void {
  if (recorded.name !== name || !jsonEqual(recorded.args, args))
    throw new ToolError(
      `on resume the workflow asked for ${name} where it had asked for ${recorded.name} before the pause (its context or tools changed); nothing more of it runs`,
    );
}

/** Equal as JSON values (object key order aside), as Python compares dicts. */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((x, i) => jsonEqual(x, (b as unknown[])[i]));
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keys = Object.keys(x);
  return keys.length === Object.keys(y).length && keys.every((k) => Object.hasOwn(y, k) && jsonEqual(x[k], y[k]));
}

/** `value` as JSON reads it back (what is not JSON as a string). */
export function jsonValue(value: unknown): unknown {
  if (value === undefined) return null;
  try {
    return JSON.parse(JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? String(v) : v)) ?? "null");
  } catch {
    return String(value);
  }
}

/** A denial decided by the runtime itself (no approver, a timeout, a failure). */
class Denied {
  constructor(readonly reason: string) {}
}

function newId(): string {
  return randomBytes(16).toString("hex");
}

function isObject(value: unknown): value is Record<string, any> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// -- the runtime config ------------------------------------------------------------------------

export interface ApprovalOptions {
  approver: Approver | null;
  /** "ask" (the approver decides) or "defer" (every gated call pauses the run). */
  mode: "ask" | "defer";
}

/** The config's `approver` and `approvals` keys, checked (a ConfigError names the key). */
export function approvalOptions(config: Record<string, any>): ApprovalOptions {
  const approver = config.approver ?? null;
  if (approver !== null && typeof approver !== "function")
    throw new ConfigError(`approver: expected a function of the approval request, got ${pyTypeName(approver)}`);
  const mode = config.approvals ?? "ask";
  if (mode !== "ask" && mode !== "defer") throw new ConfigError(`approvals: expected 'ask' or 'defer', got ${pyValueRepr(mode)}`);
  return { approver, mode };
}

/** `agent.onApproval(fn)`'s check. */
export function checkApprover(approver: unknown): Approver {
  if (typeof approver !== "function") throw new ConfigError(`onApproval: expected a function of the approval request, got ${pyTypeName(approver)}`);
  return approver as Approver;
}

// -- the gate ------------------------------------------------------------------------------------

export class ApprovalGate {
  /** The steps a workflow had made when one of its steps was deferred, by request id. */
  journals = new Map<string, Step[]>();

  constructor(private run: Run) {}

  /** Ask for approval of a gated call; null when the call is not gated. `taint` is the taint
   * guard's record of a tainted call (its reason and findings), added to the request. */
  async check(
    inv: Invocation,
    kind: CallKind,
    name: string,
    args: Record<string, any>,
    approval: Approval | null | undefined,
    params: readonly IRField[],
    deferrable: boolean,
    taint: TaintRecord | null = null,
  ): Promise<Verdict | null> {
    if (approval == null) return null;
    const request: ApprovalRequest = { id: newId(), kind, name, args: { ...args }, agent: inv.name };
    if (taint !== null) request.taint = { reason: taint.reason, findings: taint.findings };
    await this.run.emit("approval_request", structuredClone(request), inv.name);
    let answer = await this.ask(request, approval.timeout || DEFAULT_TIMEOUT);
    if (answer === "defer") {
      if (deferrable) {
        (this.run.session.pending_approvals ??= []).push(request);
        return new Verdict(false, args, null, true, request.id);
      }
      answer = new Denied("its approval cannot wait for agent.resume() inside a helper call or running code; decide on it in the approver");
    }
    const verdict = judge(answer, args, params, this.run.core.doc.types);
    await this.decided(request, verdict);
    return verdict;
  }

  /** Emit `approval_result` and add the decision to the session's audit list. */
  async decided(request: ApprovalRequest, verdict: Verdict): Promise<void> {
    await this.run.emit("approval_result", { id: request.id, approved: verdict.approved, reason: verdict.reason }, String(request.agent));
    (this.run.session.approvals ??= []).push({
      id: request.id,
      kind: request.kind,
      name: request.name,
      agent: request.agent,
      args: { ...(verdict.approved ? verdict.args : request.args) },
      approved: verdict.approved,
      reason: verdict.reason,
      decided_at: decidedAt(),
    });
  }

  private async ask(request: ApprovalRequest, timeout: number): Promise<unknown> {
    if (this.run.core.approvals.mode === "defer") return "defer";
    const approver = this.run.core.approvals.approver;
    if (approver === null) return new Denied("no approver is configured (agent.on_approval or config 'approver')") // Python's words: the model sees them;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<Denied>((resolve) => {
      timer = setTimeout(() => resolve(new Denied(`the approver did not answer within ${seconds(timeout)} s`)), timeout * 1000);
    });
    try {
      const answer = Promise.resolve().then(() => approver(structuredClone(request)));
      return await Promise.race([answer, late]);
    } catch (error) {
      await this.approverFailed(request, error);
      return new Denied("the approver failed");
    } finally {
      clearTimeout(timer);
    }
  }

  /** The application hears of its approver's exception (onError and, unless a middleware
   * handled it, an `error` intent with the stack); the model is only told that it failed. */
  private async approverFailed(request: ApprovalRequest, error: unknown): Promise<void> {
    const message = `the approver failed on ${request.kind} ${request.name}: ${describeError(error)} (the call was not run)`;
    const traceback = error instanceof Error && error.stack ? error.stack : String(error);
    await this.run.fail(error, String(request.agent), "", false, message, { approval_id: request.id, traceback });
  }
}

/** Seconds as Python's `:g` writes them (300, 0.5). */
function seconds(value: number): string {
  return String(Number(value.toPrecision(6)));
}

/** The decision time as Python's `isoformat(timespec="seconds")` in UTC. */
function decidedAt(): string {
  return new Date().toISOString().slice(0, 19) + "+00:00";
}

/** An approver's (or `agent.resume`'s) answer as a verdict; anything unclear is a denial. */
export function judge(answer: unknown, args: Record<string, any>, params: readonly IRField[], types: Types): Verdict {
  if (answer instanceof Denied) return new Verdict(false, args, answer.reason);
  if (answer === true || answer === false) answer = { approved: answer };
  if (!isObject(answer) || typeof answer.approved !== "boolean") return new Verdict(false, args, `the approver's answer was not understood (${UNDERSTOOD})`);
  const reason = typeof answer.reason === "string" && answer.reason ? answer.reason : null;
  if (!answer.approved) return new Verdict(false, args, reason);
  const editedGiven = "args" in answer;
  const edited: unknown = editedGiven ? answer.args : args;
  if (!isObject(edited)) return new Verdict(false, args, "the edited arguments are not an object");
  // Checked even when unedited: a resumed call meets the declaration of the agent now.
  const errors = validate({ ...edited }, { kind: "object", fields: [...params] }, types, "$");
  if (errors.length) return new Verdict(false, args, `the ${editedGiven ? "edited arguments" : "arguments"} are invalid: ` + errors.join("; "));
  return new Verdict(true, { ...edited }, reason);
}

// -- pausing and resuming --------------------------------------------------------------------------

/** One call of a paused round, as the session keeps it (Python's `_record`). */
export interface CallRecord {
  id: string;
  kind: CallKind;
  name: string;
  args: Record<string, any>;
  status: CallOutcome["status"];
  result: string | null;
  error: string | null;
  call_id: string | null;
  request_id: string | null;
  steps?: Step[];
  journal?: Record<string, any>;
  [key: string]: unknown;
}

type PausedTurn = Turn & { paused_round?: CallRecord[]; calls?: CallRecord[] };

/** End the run at this round: record every call of it and mark the session paused. */
export function pause(run: Run, outcomes: readonly CallOutcome[]): void {
  const turn = run.turn as PausedTurn;
  const records = outcomes.map(record);
  for (const rec of records) {
    const steps = run.approvals.journals.get(rec.id);
    if (steps !== undefined) rec.steps = steps;
  }
  turn.paused_round = records;
  turn.status = AWAITING;
  run.session.status = AWAITING;
}

/** A call's stable record; a pending one takes its request's id as its own. */
function record(outcome: CallOutcome): CallRecord {
  return {
    id: outcome.requestId || newId(),
    kind: outcome.kind,
    name: outcome.name,
    args: { ...outcome.args },
    status: outcome.status,
    result: outcome.result ?? null,
    error: outcome.error ?? null,
    call_id: outcome.callId ?? null,
    request_id: outcome.requestId ?? null,
  };
}

function outcomeOf(rec: CallRecord): CallOutcome {
  const outcome: CallOutcome = { kind: rec.kind, name: rec.name, args: rec.args, status: rec.status, callId: rec.call_id };
  if (rec.result !== null && rec.result !== undefined) outcome.result = rec.result;
  if (rec.error !== null && rec.error !== undefined) outcome.error = rec.error;
  return outcome;
}

/** Throw unless `decisions` decide exactly the pending requests of `session`. */
export function checkDecisions(session: Record<string, any>, decisions: unknown, claimed = false): void {
  const status = session.status;
  if (status === RESUMING && !claimed)
    throw new ConflictError(
      "this session is being resumed by another run (or a resume of it stopped half way): nothing was executed; load it again later and inspect its 'approvals'",
    );
  const pending = session.pending_approvals || [];
  const turns = session.turns || [];
  const last = Array.isArray(turns) && turns.length ? turns[turns.length - 1] : null;
  const paused = isObject(last) && "paused_round" in last;
  if ((status !== AWAITING && status !== RESUMING) || !pending.length || !paused) throw new ApprovalError("resume: this session has no pending approvals; nothing to resume");
  checkPaused(pending, last.paused_round);
  if (!isObject(decisions)) throw new ApprovalError(`resume: decisions must be a dict of request id -> decision, got ${pyTypeName(decisions)}`);
  const ids = (pending as unknown[]).filter(isObject).map((p) => String(p.id));
  const unknown = Object.keys(decisions).filter((k) => !ids.includes(k));
  if (unknown.length) throw new ApprovalError(`resume: unknown request id ${unknown.map(pyRepr).join(", ")}; pending: ${ids.map(pyRepr).join(", ")}`);
  const missing = ids.filter((i) => !Object.hasOwn(decisions, i));
  if (missing.length) throw new ApprovalError(`resume: no decision for pending request ${missing.map(pyRepr).join(", ")}; decide on every pending request`);
  for (const [key, value] of Object.entries(decisions))
    if (typeof value !== "boolean" && !isObject(value)) throw new ApprovalError(`resume: decisions[${pyRepr(key)}]: expected ${ANSWERS}, got ${pyValueRepr(value)}`);
}

const RECORD_KEYS = ["id", "kind", "name", "args", "status", "result", "error", "call_id"];

/** A stored pause that was tampered with is refused, naming the field (nothing runs). */
function checkPaused(pending: unknown, records: unknown): void {
  if (!Array.isArray(pending) || !pending.every((p) => isObject(p) && typeof p.id === "string" && isObject(p.args)))
    throw new ApprovalError("resume: session.pending_approvals: expected a list of requests with an id and args");
  const where = "session.turns[-1].paused_round";
  if (!Array.isArray(records) || !records.every((r) => isObject(r) && RECORD_KEYS.every((k) => k in r))) throw new ApprovalError(`resume: ${where}: expected a list of call records`);
  const ids = new Set(pending.map((p) => p.id));
  const waiting = new Set(records.filter((r) => r.status === "pending").map((r) => r.request_id));
  if (ids.size !== waiting.size || ![...ids].every((i) => waiting.has(i))) throw new ApprovalError(`resume: ${where} does not match session.pending_approvals`);
}

/** Mark the stored session as being resumed, comparing revisions (ConflictError when another
 * run got there first), before anything executes. */
export async function claim(store: SessionStore, key: string, session: SessionState): Promise<void> {
  session.status = RESUMING;
  await store.save(key, session);
}

/** Where one resume records its approved calls, so that none runs twice (Python's
 * ResumeJournal): before an approved call runs, the stored session (still "resuming", its
 * paused round whole) is saved with the call's record marked `journal: {state: "started"}`;
 * once it has run, `{state: "done", outcome}`. Both saves compare revisions. */
export class ResumeJournal {
  private stored: SessionState | null = null;
  constructor(
    readonly store: SessionStore,
    readonly key: string,
  ) {}

  /** Keep the claimed session, as stored, before the resume changes it. */
  begin(session: SessionState): void {
    this.stored = structuredClone(session);
  }

  /** Save `entry` as the journal of the paused call `recordId` (ConflictError, and nothing
   * runs, when another run changed the conversation meanwhile). */
  async record(run: Run, recordId: string, entry: Record<string, any>): Promise<void> {
    const stored = this.stored!;
    const turn = stored.turns[stored.turns.length - 1] as PausedTurn;
    for (const rec of turn.paused_round ?? []) if (rec.id === recordId) rec.journal = jsonValue(entry) as Record<string, any>;
    delete stored.revision;
    if ("revision" in run.session) stored.revision = run.session.revision;
    await this.store.save(this.key, stored);
    run.session.revision = stored.revision;
  }
}

/** The paused round's outcomes: recorded ones as they were, decided ones now run or denied.
 * null when a resumed workflow deferred another of its steps (the round is paused again). */
export async function resumeOutcomes(run: Run, inv: Invocation, decisions: Record<string, unknown>): Promise<CallOutcome[] | null> {
  const session = run.session;
  const turn = run.turn as PausedTurn;
  run.journal?.begin(session);
  const records = turn.paused_round!;
  delete turn.paused_round;
  const requests = new Map<string, ApprovalRequest>((session.pending_approvals ?? []).map((p: ApprovalRequest) => [String(p.id), p]));
  delete session.status;
  session.pending_approvals = [];
  const contract = run.core.contract(inv);
  const outcomes: CallOutcome[] = [];
  for (const rec of records) {
    if (rec.status === "pending") {
      const request = requests.get(String(rec.request_id))!;
      // The decision is about the call itself, or about the workflow step that paused.
      const spec = findCallable(contract, rec.kind, rec.name);
      let params: readonly IRField[] | null = spec === undefined ? null : spec.params;
      if (spec !== undefined && "steps" in rec) params = stepParams(inv, rec.name, String(request.name));
      let answer: unknown = decisions[String(rec.request_id)];
      // The agent was changed meanwhile: what is not declared never runs.
      if (params === null) answer = new Denied(`${request.name} is no longer part of ${inv.name}`);
      const entry = rec.journal;
      delete rec.journal;
      let outcome: CallOutcome;
      if (isObject(entry)) outcome = await journaled(run, inv, rec, entry); // an earlier resume started it
      else {
        const verdict = judge(answer, request.args, params ?? [], run.core.doc.types);
        await run.approvals.decided(request, verdict);
        outcome = await decidedOutcome(run, inv, rec, request, verdict);
      }
      Object.assign(rec, record(outcome), { id: rec.id });
      if (outcome.status === "pending") rec.steps = run.approvals.journals.get(String(outcome.requestId)); // another step of it was deferred
    }
    outcomes.push(outcomeOf(rec));
  }
  if (outcomes.some((o) => o.status === "pending")) {
    turn.paused_round = records;
    turn.status = AWAITING;
    session.status = AWAITING;
    return null;
  }
  (turn.calls ??= []).push(...records);
  return outcomes;
}

/** Run or deny one decided call of the paused round, journaled when the run has a journal
 * and the call runs. */
async function decidedOutcome(run: Run, inv: Invocation, rec: CallRecord, request: ApprovalRequest, verdict: Verdict): Promise<CallOutcome> {
  const { kind, name, args } = rec;
  const journal = verdict.approved ? run.journal : null;
  const audit = journal !== null ? run.session.approvals[run.session.approvals.length - 1] : null;
  if (journal !== null) await journal.record(run, rec.id, { state: "started", approval: audit });
  let outcome: CallOutcome;
  try {
    if ("steps" in rec) {
      const steps = new Journal(rec.steps ?? [], [request, verdict]);
      delete rec.steps;
      outcome = await run.workflow(inv, name, args, rec.call_id, steps);
    } else outcome = await run.decidedCall(inv, kind, name, verdict, rec.call_id);
  } catch (error) {
    // As on the first path: a failure is a tool_error.
    outcome = await run.refuse(inv, kind, name, args, describeError(error), rec.call_id);
  }
  if (journal !== null && outcome.status !== "pending") await journal.record(run, rec.id, { state: "done", approval: audit, outcome: record(outcome) });
  return outcome;
}

/** A call an earlier resume started: its saved outcome, or (interrupted) a refusal. */
async function journaled(run: Run, inv: Invocation, rec: CallRecord, entry: Record<string, any>): Promise<CallOutcome> {
  const audit = entry.approval;
  if (isObject(audit)) {
    await run.emit("approval_result", { id: audit.id ?? null, approved: true, reason: audit.reason ?? null }, String(audit.agent || inv.name));
    (run.session.approvals ??= []).push({ ...audit });
  }
  delete rec.steps;
  const outcome = entry.outcome;
  if (entry.state === "done" && isObject(outcome)) return outcomeOf({ ...rec, ...outcome } as CallRecord);
  return run.refuse(inv, rec.kind, rec.name, rec.args, INTERRUPTED(rec.name), rec.call_id);
}

/** The parameters of `tool` as `workflow` sees it (scoped, else the agent's). */
function stepParams(inv: Invocation, workflow: string, tool: string): readonly IRField[] | null {
  const found = inv.agent.workflows.find((w) => w.name === workflow);
  const tools: Tool[] = [...(found ? found.tools : []), ...inv.tools];
  const spec = tools.find((t) => t.name === tool);
  return spec === undefined ? null : spec.params;
}

// -- agent.resume --------------------------------------------------------------------------------

export interface ResumeOptions {
  config?: string;
  /** The stored conversation to resume (with a SessionStoreMiddleware, or `store`). */
  conversationId?: string;
  /** Where the conversation lives when no SessionStoreMiddleware says so; the caller saves
   * the final session there. */
  store?: SessionStore;
}

/** The store of the first SessionStoreMiddleware of the config's middleware, if any. */
function middlewareStore(middleware: readonly unknown[]): SessionStore | null {
  const found = middleware.find((m): m is SessionStoreMiddleware => m instanceof SessionStoreMiddleware);
  return found === undefined ? null : found.store;
}

/** `agent.resume`: load (from the store) and check the paused session and the decisions,
 * claim a stored one, then continue the run (Python's Agent._resume). */
export async function resumeAgent(run: Run, session: unknown, decisions: unknown, options: ResumeOptions): Promise<SessionState> {
  const key = options.conversationId ?? null;
  let store = options.store ?? middlewareStore(run.core.middlewareList);
  if (key === null) store = null;
  if (store !== null && session == null) session = await store.load(key!);
  if (session == null) throw new ApprovalError(`resume: no session ${store !== null ? `stored under ${pyRepr(key!)}` : "given"}; nothing to resume`);
  const base = structuredClone(checkSession(session, run.core.root));
  checkDecisions(base, decisions);
  if (store !== null) {
    await claim(store, key!, base);
    run.journal = new ResumeJournal(store, key!);
  }
  return run.continueRun(base, decisions as Record<string, unknown>);
}
