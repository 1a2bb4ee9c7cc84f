// The offline model (providers/offline.py): deterministic answers from the agent's own
// contract, no network, no API key. `provider: "offline"` in the runtime config (or the
// environment variable AUWGENT_PROVIDER=offline) runs any compiled agent on it.
//
// On the first model call of a turn it calls every configured tool the model may use, once
// each, with the arguments of the tool's first `@example` that gives every required one, else
// arguments built from the parameter types (`exampleValue`). Once the history holds those
// results (or with no tool to call) it answers: a sample of the first output variant for a
// structured output, else a short text quoting the user's last input. It writes blocks with the
// block codec and answers natively (`tool__<name>` calls, JSON, `output__<Type>`) when the
// request offers functions or a response schema, as the Python model does, byte for byte.

import { functionName, parseFunctionName } from "../native.js";
import { exampleValue } from "../schema.js";
import { outputVariants, type CallableSpec, type Contract } from "../section.js";
import { pyJson } from "../values.js";
import type { FunctionSpec, Message, ModelRequest, Provider, StreamEvent } from "./base.js";
import { blockText, hashedEmbedding, NativeCall, Reply, replyEvents } from "./scripted.js";
import { EXECUTE_CODE, pyValue } from "../code_mode.js";

const CALL_HEADER = /\[(?:tool_call|workflow_call|helper_call)\s*:/;
const CALL_NAMES = /\[(?:tool_call|workflow_call|helper_call)\s*:\s*([^\]\s]+)/g;
const QUOTE_LIMIT = 120;

export class OfflineModel implements Provider {
  readonly name = "offline";
  readonly requests: ModelRequest[] = [];
  /** Characters per streamed text piece (small, so that partials happen). */
  readonly chunkSize: number;
  /** The length of the vectors `embed` returns. */
  readonly dimensions: number;

  constructor(options: { chunkSize?: number; dimensions?: number } = {}) {
    this.chunkSize = options.chunkSize ?? 6;
    this.dimensions = options.dimensions ?? 8;
    if (!Number.isInteger(this.chunkSize) || this.chunkSize < 1) throw new RangeError("chunkSize must be at least 1");
    if (!Number.isInteger(this.dimensions) || this.dimensions < 1) throw new RangeError("dimensions must be at least 1");
  }

  async *stream(request: ModelRequest): AsyncGenerator<StreamEvent> {
    this.requests.push(request);
    const reply = respond(request);
    // Ids only need to be unique within a conversation: number them by the model's turn.
    const number = 1 + request.messages.filter((m) => m.role === "assistant").length;
    for (const event of replyEvents(reply, number, this.chunkSize)) {
      await new Promise((resolve) => setImmediate(resolve)); // let other tasks run, as a network would
      yield event;
    }
  }

  async embed(texts: string[]): Promise<number[][]> {
    return texts.map((text) => hashedEmbedding(text, this.dimensions));
  }
}

/** The offline model's whole answer to `request`, before streaming. */
export function respond(request: ModelRequest): Reply {
  const contract = (request.contract ?? null) as Contract | null;
  // The native codec offers functions or a response schema whenever the contract has anything
  // to call or a structured output; without either, plain text suits both codecs.
  const native = request.functions.length > 0 || request.responseSchema !== null;
  if (contract !== null && !answersOwnCalls(request.messages)) {
    const calls = toolCalls(contract, request.functions, native);
    if (calls.length) return new Reply(native ? calls : [calls.map(callBlock).join("\n\n")]);
  }
  if (contract !== null && contract.output.kind !== "text") {
    const [, type] = outputVariants(contract)[0]!;
    return structuredReply(request, contract, exampleValue(type, contract.types), native);
  }
  return textReply(request, native);
}

function madeCalls(message: Message): boolean {
  return message.role === "assistant" && ((message.tool_calls?.length ?? 0) > 0 || CALL_HEADER.test(message.content));
}

/** Whether the last messages are the results of the calls the previous response made. */
function answersOwnCalls(messages: Message[]): boolean {
  const last = messages[messages.length - 1];
  if (last === undefined) return false;
  if (last.role === "tool") return true;
  return last.role === "user" && messages.length > 1 && madeCalls(messages[messages.length - 2]!);
}

function ownInput(messages: Message[], i: number): boolean {
  return messages[i]!.role === "user" && !(i > 0 && madeCalls(messages[i - 1]!));
}

function turnInput(messages: Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) if (ownInput(messages, i)) return messages[i]!.content;
  return "";
}

function calledThisTurn(messages: Message[]): string[] {
  const names: string[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    if (ownInput(messages, i)) break;
    const message = messages[i]!;
    if (message.role !== "assistant") continue;
    const found = (message.tool_calls ?? []).map((c) => parseFunctionName(c.name)[1]);
    names.unshift(...(found.length ? found : [...message.content.matchAll(CALL_NAMES)].map((m) => m[1]!)));
  }
  return names;
}

function toolCalls(contract: Contract, functions: FunctionSpec[], native: boolean): NativeCall[] {
  const offered = new Set(functions.map((f) => f.name));
  const calls: NativeCall[] = [];
  for (const spec of contract.callables) {
    if (spec.kind !== "tool" || !spec.configured) continue;
    const name = native ? functionName("tool_call", spec.name) : spec.name;
    if (native && !offered.has(name)) continue;
    calls.push(new NativeCall(name, exampleArgs(spec, contract)));
  }
  return calls;
}

function callBlock(call: NativeCall): string {
  // Code mode's execute_code: the code as is.
  if (call.name === EXECUTE_CODE && typeof call.args === "object") return `[tool_call: ${EXECUTE_CODE}]\n${String(call.args.code)}\n[/tool_call]`;
  return blockText("tool_call", call.name, call.args);
}

/** Code mode: a program calling each configured tool of `api` once. */
function exampleCode(contract: Contract): string {
  const calls: string[] = [];
  for (const spec of contract.codeApi!.callables)
    if (spec.kind === "tool" && spec.configured)
      calls.push(
        `api.${spec.name}(${Object.entries(exampleArgs(spec, contract))
          .map(([k, v]) => `${k}=${pyValue(v)}`)
          .join(", ")})`,
      );
  return "import api\n[" + calls.join(", ") + "]";
}

function exampleArgs(spec: CallableSpec, contract: Contract): Record<string, unknown> {
  if (spec.rawBody && contract.codeApi) return { code: exampleCode(contract) }; // code mode's execute_code
  const required = spec.params.filter((p) => !p.optional).map((p) => p.name);
  // The tool's own @example, when it gives every required argument: what a real model imitates.
  for (const example of spec.examples) if (required.every((name) => name in example)) return { ...example };
  const args: Record<string, unknown> = {};
  for (const param of spec.params) if (!param.optional) args[param.name] = exampleValue(param.type, contract.types);
  return args;
}

function textReply(request: ModelRequest, native: boolean): Reply {
  // Defuse "[/" so that a quoted input cannot close a block early.
  const text = textAnswer(request.messages).replaceAll("[/", "[ /");
  if (native || !request.system.includes("[/response_text]")) return new Reply([text]);
  return new Reply([`[response_text]\n${text}\n[/response_text]`]);
}

function textAnswer(messages: Message[]): string {
  let said = turnInput(messages).split(/\s+/).filter(Boolean).join(" ");
  if (said.length > QUOTE_LIMIT) said = said.slice(0, QUOTE_LIMIT - 3) + "...";
  let text = `Offline reply to "${said}".`;
  const called = calledThisTurn(messages);
  if (called.length) text += " Called: " + called.join(", ") + ".";
  return text;
}

/** `value` as the structured output of `contract`, in the request's protocol. */
export function structuredReply(request: ModelRequest, contract: Contract, value: unknown, native: boolean): Reply {
  const [name] = outputVariants(contract)[0]!;
  if (!native) return new Reply([blockText("schema", name, value)]);
  const fn = functionName("response_schema", name);
  if (request.responseSchema === null && request.functions.some((f) => f.name === fn)) {
    // A union output: the native codec offers one output function per variant.
    const args = value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : { value };
    return new Reply([new NativeCall(fn, args)]);
  }
  return new Reply([pyJson(value)]);
}
