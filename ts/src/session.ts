// The session: the plain, JSON-serialisable record of a conversation (version 1), the same
// shape the Python runtime writes, so a session moves between the two runtimes.

import { randomUUID } from "node:crypto";
import { ConfigError, InputError } from "./errors.js";
import { checkInput, inputText, type Input } from "./parts.js";
import type { Message } from "./providers/base.js";

export const SESSION_VERSION = 1;

export interface Frame {
  agent: string;
  config?: string | null;
  handoff?: string;
  parent?: string;
  tools?: unknown;
  messages?: Record<string, any>[];
}

/** The provider's token counts for one model call. */
export interface Usage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  /** Of input_tokens, read from / written to the provider's prompt cache (Anthropic). */
  cache_read_tokens?: number;
  cache_write_tokens?: number;
}

/** One model call of a turn: the model that answered, its finish reason and token counts. */
export interface ModelCall {
  model: string;
  finish_reason: string | null;
  usage: Usage | null;
  /** `"summarize"` for the request that wrote a history summary (docs/context.md). */
  purpose?: string;
}

export interface Turn {
  id: string;
  /** `parts`: the input as parts (src/parts.ts), when it was given so. */
  input: { text: string; parts?: Record<string, any>[] };
  agent: string;
  messages: Record<string, any>[];
  intents: { name: string; value: any; agent: string }[];
  status: "running" | "complete" | "handoff" | "error" | "conflict" | "awaiting_approval";
  error: string | null;
  output: any;
  /** One entry per model call of the turn: the model that answered, "<provider>:<model>". */
  model_calls: ModelCall[];
  /** Non-text parts of the answer (images, code the model ran), present only when there are some. */
  parts?: { agent: string; kind: string; data: unknown }[];
}

export interface SessionState {
  version: number;
  agent: string;
  system_prompt: string;
  stack: Frame[];
  turns: Turn[];
  /** Set by a session store (optimistic concurrency); kept as it is. */
  revision?: number;
  /** After a run: the token totals of every recorded model call. */
  usage?: Usage;
  /** "awaiting_approval" while approvals are pending (a Python run paused for them). */
  status?: string;
  [key: string]: any;
}

/** The session status of a run paused for approvals (the Python runtime's approvals.AWAITING). */
export const AWAITING_APPROVAL = "awaiting_approval";

export function newSession(root: string): SessionState {
  return { version: SESSION_VERSION, agent: root, system_prompt: "", stack: [{ agent: root, config: null }], turns: [] };
}

export function newTurn(given: Input, agent: string): Turn {
  const input: Turn["input"] = { text: inputText(given) };
  if (typeof given !== "string") input.parts = given.map((p) => ({ ...p }));
  // A version 4 UUID in hex, as the Python runtime writes turn ids.
  return { id: randomUUID().replace(/-/g, ""), input, agent, messages: [], intents: [], status: "running", error: null, output: null, model_calls: [] };
}

/** `value` checked as a session of agent `root`; with `agents`, every frame names one of them. */
export function checkSession(value: any, root: string, agents: Record<string, unknown> | null = null): SessionState {
  if (!value || typeof value !== "object" || Array.isArray(value))
    throw new ConfigError(`session: expected a session object, got ${value === null ? "null" : typeof value}`);
  if (value.version !== SESSION_VERSION)
    throw new ConfigError(`session.version: this runtime reads session version ${SESSION_VERSION}, got ${JSON.stringify(value.version ?? null)}`);
  const revision = value.revision;
  if (revision != null && !(Number.isInteger(revision) && revision >= 0))
    throw new ConfigError(`session.revision: expected a non-negative integer, got ${JSON.stringify(revision)}`);
  for (const key of ["stack", "turns"]) if (!Array.isArray(value[key])) throw new ConfigError(`session.${key}: expected a list`);
  const owner = value.agent ?? root;
  if (owner !== root) throw new ConfigError(`session.agent: this session belongs to agent '${owner}', not '${root}'`);
  value.stack.forEach((frame: any, i: number) => {
    if (!frame || typeof frame !== "object") throw new ConfigError(`session.stack[${i}]: expected a frame object`);
    if (typeof frame.agent !== "string") throw new ConfigError(`session.stack[${i}].agent: expected an agent name`);
    if (agents !== null && !Object.hasOwn(agents, frame.agent))
      throw new ConfigError(`session.stack[${i}].agent: agent '${frame.agent}' is not part of this agent's IR`);
  });
  value.turns.forEach((turn: any, i: number) => {
    if (!turn || typeof turn !== "object" || Array.isArray(turn)) throw new ConfigError(`session.turns[${i}]: expected a turn object`);
    if (turn.input && typeof turn.input === "object" && "parts" in turn.input) checkParts(turn.input.parts, `session.turns[${i}].input.parts`);
  });
  const stack = value.stack.length ? value.stack.map((f: Frame) => ({ ...f })) : [{ agent: root, config: null }];
  // Other top-level keys (a store's revision, the approvals audit) are kept as they are.
  return { ...value, version: SESSION_VERSION, agent: root, system_prompt: String(value.system_prompt ?? ""), stack, turns: [...value.turns] };
}

function checkParts(parts: unknown, where: string): void {
  if (!Array.isArray(parts)) throw new ConfigError(`${where}: expected a list`);
  try {
    checkInput(parts, where);
  } catch (error) {
    if (error instanceof InputError) throw new ConfigError(error.message);
    throw error;
  }
}

export function messageToJson(m: Message): Record<string, any> {
  const data: Record<string, any> = { role: m.role, content: m.content };
  if (m.tool_calls && m.tool_calls.length) data.tool_calls = m.tool_calls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments }));
  if (m.tool_call_id != null) data.tool_call_id = m.tool_call_id;
  if (m.name != null) data.name = m.name;
  if (m.reasoning && m.reasoning.length) data.reasoning = m.reasoning.map((part) => ({ ...(part.data as Record<string, any>) }));
  if (m.parts && m.parts.length) data.parts = m.parts.map((part) => ({ ...part }));
  return data;
}

export function messageFromJson(data: Record<string, any>): Message {
  return {
    role: data.role,
    content: String(data.content ?? ""),
    tool_calls: (data.tool_calls ?? []).map((c: any) => ({ id: String(c.id), name: String(c.name), arguments: String(c.arguments) })),
    tool_call_id: data.tool_call_id ?? null,
    name: data.name ?? null,
    ...(Array.isArray(data.reasoning) && data.reasoning.length
      ? { reasoning: data.reasoning.map((b: any) => ({ kind: String(b.type), data: { ...b } })) }
      : {}),
    ...(Array.isArray(data.parts) && data.parts.length ? { parts: data.parts.map((p: any) => ({ ...p })) } : {}),
  };
}
