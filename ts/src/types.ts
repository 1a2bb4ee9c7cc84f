// The public types that generated bindings specialise.

import type { SessionState } from "./session.js";
import type { Repair } from "./values.js";

/** What a handler of a call intent may return: skip the call, or supply its result. */
export type IntentControl = { skip: true } | { result: unknown };

/** The context every middleware hook receives; applications may store their own keys in it. */
export interface MiddlewareContext<Target extends string = string> {
  activeAgent: Target;
  rootAgent: string;
  systemPrompt: string;
  rawBlock: string | null;
  /** What the decoder repaired to read the intent's block (onIntent only; else empty). */
  repairs: Repair[];
  conversationId: string | null;
  workflow?: string;
  setContext(data: Record<string, unknown>): void;
  embed(text: string | { text: string }): Promise<number[]>;
  embedBatch(texts: (string | { text: string })[]): Promise<number[][]>;
  [key: string]: any;
}

type Awaitable<T> = T | Promise<T>;

/**
 * A middleware: any of the seven hooks, scoped by `target` to agents or helpers by name.
 * The type parameters are (IR, context, tools, intents, target); generated bindings fill them.
 */
export interface Middleware<_IR = unknown, _Context = unknown, _Tools = any, Intents = any, Target extends string = string> {
  name: string;
  target?: Target | Target[];
  onRunStart?: (session: SessionState, ctx: MiddlewareContext<Target>) => Awaitable<SessionState | void | null | undefined>;
  onLLMStart?: (prompt: string, ctx: MiddlewareContext<Target>) => Awaitable<void | string>;
  onIntent?: (name: IntentNameOf<Intents>, value: any, ctx: MiddlewareContext<Target>) => Awaitable<IntentControl | void | undefined>;
  onIntentPartial?: (name: IntentNameOf<Intents>, value: any, ctx: MiddlewareContext<Target>) => Awaitable<void>;
  onLLMEnd?: (response: any, ctx: MiddlewareContext<Target>) => Awaitable<void>;
  onRunComplete?: (finalSession: SessionState, ctx: MiddlewareContext<Target>) => Awaitable<void>;
  onError?: (error: unknown, session: SessionState, ctx: MiddlewareContext<Target>) => Awaitable<boolean | void>;
}

type IntentNameOf<Intents> = [keyof Intents] extends [never] ? string : keyof Intents extends string ? keyof Intents | (string & {}) : string;
