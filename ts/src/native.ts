// Native function calling: the alternative codec (docs/protocol.md). Tools, workflows and
// helpers become provider functions named by kind prefix (tool__get_weather), custom intents
// intent__Planning functions, a single structured output the provider's response schema and
// a union output one output__<Type> function per variant.

import { Cadence, TextStream, type AssistantTurn, type Codec, type DecodeEvent, type Decoder, type FinalEvent, type IntentKind } from "./blocks.js";
import type { FunctionSpec, Message, StreamEvent, ToolCall } from "./providers/base.js";
import { toJsonSchema, type IRField, type IRType } from "./schema.js";
import { BLOCK_KIND, callableDescription, outputVariants, resultText, type CallOutcome, type Contract } from "./section.js";
import { BodyError, JsonPrefix, embeddedObject, objectType, parseBody, parseValue, pyJson, type Repair } from "./values.js";

const PREFIXES: Record<string, IntentKind> = {
  tool: "tool_call",
  workflow: "workflow_call",
  helper: "helper_call",
  intent: "custom",
  output: "response_schema",
};
const PREFIX_OF = Object.fromEntries(Object.entries(PREFIXES).map(([p, k]) => [k, p])) as Record<IntentKind, string>;
const CALL_KINDS = new Set(["tool_call", "workflow_call", "helper_call"]);
const NOT_FOUND: Record<string, string> = { tool_call: "Tool", workflow_call: "Workflow", helper_call: "Helper", custom: "Intent", response_schema: "Output" };

export function functionName(kind: IntentKind, name: string): string {
  return `${PREFIX_OF[kind]}__${name}`;
}

export function parseFunctionName(fn: string): [IntentKind | null, string] {
  const at = fn.indexOf("__");
  if (at >= 0) {
    const prefix = fn.slice(0, at);
    const name = fn.slice(at + 2);
    if (prefix in PREFIXES && name) return [PREFIXES[prefix]!, name];
  }
  return [null, fn];
}

interface Target {
  kind: IntentKind;
  name: string;
  fields: IRField[];
  type?: IRType;
}

function targets(contract: Contract): Map<string, Target> {
  const out = new Map<string, Target>();
  for (const spec of contract.callables) {
    const kind = BLOCK_KIND[spec.kind] as IntentKind;
    out.set(functionName(kind, spec.name), { kind, name: spec.name, fields: spec.params });
  }
  for (const intent of contract.intents) out.set(functionName("custom", intent.name), { kind: "custom", name: intent.name, fields: intent.fields });
  const variants = outputVariants(contract);
  if (variants.length > 1)
    for (const [name, type] of variants) out.set(functionName("response_schema", name), { kind: "response_schema", name, fields: [], type });
  return out;
}

function parameters(target: Target, contract: Contract): Record<string, any> {
  const schema = toJsonSchema(target.type ?? objectType(target.fields), contract.types);
  if (schema.type !== "object") return { type: "object", properties: { value: schema }, required: ["value"], additionalProperties: false };
  return schema;
}

interface Call {
  index: number;
  segment: number;
  id: string | null;
  fn: string | null;
  /** The argument text so far (grown by `+=`). */
  source: string;
  cadence: Cadence;
  dirty: boolean;
  snapshot: Record<string, any>;
  /** For partial snapshots. */
  json: JsonPrefix;
}

function argumentsOf(call: Call): string {
  return call.source;
}

export class NativeDecoder implements Decoder {
  private targets: Map<string, Target>;
  private variants: [string, IRType][];
  private calls = new Map<number, Call>();
  private segment = 0;
  private text = new TextStream();
  private textSegment: number | null = null;
  private textSource = "";
  private schemaCadence = new Cadence();
  private schemaSnapshot: Record<string, any> | null = null;
  private events: DecodeEvent[] = [];

  constructor(
    private contract: Contract,
    private partials = true,
  ) {
    this.targets = targets(contract);
    this.variants = outputVariants(contract);
  }

  feed(event: StreamEvent): DecodeEvent[] {
    if (event.type === "tool_call_delta") this.callDelta(event);
    else if (event.type === "text" && event.text) this.textDelta(event.text);
    return this.take();
  }

  close(): DecodeEvent[] {
    for (const index of [...this.calls.keys()].sort((a, b) => a - b)) this.finish(this.calls.get(index)!);
    this.finishText();
    return this.take();
  }

  private take(): DecodeEvent[] {
    const events = this.events;
    this.events = [];
    return events;
  }

  private callDelta(delta: Extract<StreamEvent, { type: "tool_call_delta" }>): void {
    let call = this.calls.get(delta.index);
    if (!call) {
      call = { index: delta.index, segment: this.segment++, id: null, fn: null, source: "", cadence: new Cadence(), dirty: true, snapshot: {}, json: new JsonPrefix() };
      this.calls.set(delta.index, call);
    }
    call.id = delta.id || call.id;
    call.fn = delta.name || call.fn;
    if (delta.arguments) {
      call.source += delta.arguments;
      call.dirty = true;
      if (this.partials) call.json.feed(delta.arguments); // the tracker only serves partial snapshots
    }
    // A call is final only when the stream ends (close): fragments may still follow its first
    // balanced `}` (a duplicate key, trailing text), and how the provider cut the arguments
    // into fragments must not change what runs.
    if (this.partials) this.callPartial(call);
  }

  private callPartial(call: Call): void {
    const target = this.targets.get(call.fn ?? "");
    if (!target || !call.dirty) return;
    const text = argumentsOf(call);
    const step = call.cadence.next(text.length);
    if (step === null) return;
    if (step === "read") {
      try {
        call.snapshot = payload(target, text, this.contract, call.json);
      } catch {
        // keep the previous snapshot
      }
    }
    this.events.push({ type: "partial", kind: target.kind, name: target.name, segment: call.segment, snapshot: call.snapshot, raw: text });
    call.dirty = false;
  }

  private finish(call: Call): void {
    const text = argumentsOf(call);
    const fn = call.fn ?? "";
    const raw = `${fn}(${text})`;
    const target = this.targets.get(fn);
    if (!target) {
      const [kind, name] = parseFunctionName(fn);
      const what = NOT_FOUND[kind ?? "tool_call"] ?? "Function";
      this.events.push({ type: "rejected", kind, name, segment: call.segment, message: `${what} not found: ${name || fn} (no function '${fn}' here)`, raw, callId: call.id });
      return;
    }
    const repairs: Repair[] = [];
    try {
      const value = payload(target, text, this.contract, null, repairs);
      this.events.push({ type: "final", kind: target.kind, name: target.name, segment: call.segment, payload: value, raw, callId: call.id, repairs });
    } catch (error) {
      if (!(error instanceof BodyError)) throw error;
      this.events.push({ type: "rejected", kind: target.kind, name: target.name, segment: call.segment, message: `${fn}: ${error.message}`, raw, callId: call.id });
    }
  }

  private textDelta(text: string): void {
    this.textSource += text;
    this.text.push(text);
    if (this.textSegment === null && this.text.started) this.textSegment = this.segment++;
    if (!this.partials || this.textSegment === null || !this.text.hasDelta()) {
      if (this.text.hasDelta() && !this.partials) this.text.takeDelta();
      return;
    }
    if (this.variants.length === 1) {
      this.text.takeDelta();
      const [name, type] = this.variants[0]!;
      const raw = this.textSource;
      const step = this.schemaCadence.next(raw.length);
      if (step === "read") {
        try {
          this.schemaSnapshot = { type: name, response: parseValue(raw, type, this.contract.types, true) };
        } catch {
          // not readable yet: the last snapshot, if any
        }
      }
      if (step !== null && this.schemaSnapshot !== null) {
        this.events.push({ type: "partial", kind: "response_schema", name, segment: this.textSegment, snapshot: this.schemaSnapshot, raw });
      }
      return;
    }
    if (this.variants.length) return;
    const delta = this.text.takeDelta();
    const snapshot = { text: this.text.text() };
    this.events.push({ type: "partial", kind: "response_text", name: null, segment: this.textSegment, snapshot, raw: snapshot.text, delta });
  }

  private finishText(): void {
    const text = this.text.text();
    if (this.textSegment === null || !text || this.calls.size) return;
    const raw = this.textSource;
    const segment = this.textSegment;
    if (!this.variants.length) {
      this.events.push({ type: "final", kind: "response_text", name: null, segment, payload: { text }, raw });
      return;
    }
    if (this.variants.length > 1) {
      const names = this.variants.map(([n]) => functionName("response_schema", n)).join(", ");
      this.events.push({ type: "rejected", kind: "response_schema", name: null, segment, message: `answer by calling one of: ${names}`, raw });
      return;
    }
    const [name, type] = this.variants[0]!;
    const repairs: Repair[] = [];
    try {
      const response = parseValue(embeddedObject(text), type, this.contract.types, false, repairs);
      this.events.push({ type: "final", kind: "response_schema", name, segment, payload: { type: name, response }, raw, repairs });
    } catch (error) {
      if (!(error instanceof BodyError)) throw error;
      this.events.push({ type: "rejected", kind: "response_schema", name, segment, message: `the answer must be a ${name} object: ${error.message}`, raw });
    }
  }
}

/** A call's payload; `partial` is its JSON tracker while the arguments stream. */
function payload(target: Target, text: string, contract: Contract, partial: JsonPrefix | null, repairs: Repair[] | null = null): Record<string, any> {
  const streaming = partial !== null;
  if (target.kind === "response_schema")
    return { type: target.name, response: parseValue(text || "{}", target.type!, contract.types, streaming, repairs, partial) };
  if (text.trim() === "null") text = ""; // some providers send null for a call without arguments
  const args = parseBody(text, target.fields, contract.types, streaming, repairs, partial);
  return target.kind === "custom" ? args : { type: target.name, args };
}

const RAW_CALL = /^([A-Za-z0-9_.\-]+)\(/;

export class NativeCodec implements Codec {
  name = "native" as const;

  systemSection(contract: Contract): string {
    const parts: string[] = [];
    if (contract.codeApi) parts.push(contract.codeApi.section);
    const variants = outputVariants(contract);
    if (variants.length > 1) parts.push(`Give your final answer by calling exactly one of: ${variants.map(([n]) => functionName("response_schema", n)).join(", ")}.`);
    if (contract.examples.length) {
      const lines = ["Example calls:"];
      for (const example of contract.examples) {
        const kind = BLOCK_KIND[example.kind === "workflow" ? "workflow" : "tool"] as IntentKind;
        lines.push(`- ${functionName(kind, example.target)}(${pyJson(example.args ?? {})})`);
      }
      parts.push(lines.join("\n"));
    }
    return parts.join("\n\n");
  }

  functions(contract: Contract): FunctionSpec[] {
    const described = new Map(contract.callables.map((s) => [s.name, callableDescription(s)]));
    const intents = new Map(contract.intents.map((i) => [i.name, i.description || ""]));
    return [...targets(contract)].map(([fn, target]) => {
      let description: string;
      if (CALL_KINDS.has(target.kind)) description = described.get(target.name) ?? "";
      else if (target.kind === "custom") description = intents.get(target.name) || `Emit the ${target.name} intent.`;
      else description = `Final answer as a ${target.name}.`;
      return { name: fn, description, parameters: parameters(target, contract) };
    });
  }

  responseSchema(contract: Contract): Record<string, any> | null {
    const variants = outputVariants(contract);
    if (variants.length !== 1) return null;
    const [name, type] = variants[0]!;
    return { name, schema: toJsonSchema(type, contract.types) };
  }

  decoder(contract: Contract, partials: boolean): Decoder {
    return new NativeDecoder(contract, partials);
  }

  assistantMessage(turn: AssistantTurn): Message {
    const calls: ToolCall[] = [];
    const notes: string[] = [];
    for (const event of turn.calls) {
      if (CALL_KINDS.has(event.kind) && event.name !== null) {
        calls.push({ id: event.callId || `call_${event.segment}`, name: calledName(event), arguments: pyJson(event.payload.args ?? {}) });
      } else if (event.name !== null) notes.push(`(${functionName(event.kind, event.name)}: ${pyJson(event.payload)})`);
    }
    return { role: "assistant", content: notes.length ? [turn.text, ...notes].join("\n") : turn.text, tool_calls: calls };
  }

  resultsMessages(outcomes: CallOutcome[]): Message[] {
    return outcomes.map((o) => ({
      role: "tool" as const,
      content: o.status === "ok" ? (o.result ?? "") : o.status === "error" ? `error: ${o.error || "failed"}` : "skipped: the application skipped this call",
      tool_call_id: o.callId ?? null,
      name: functionName(BLOCK_KIND[o.kind] as IntentKind, o.name),
      ...(o.parts?.length ? { parts: o.parts } : {}),
    }));
  }

  feedbackMessage(text: string): Message {
    return { role: "user", content: text.trim() };
  }
}

function calledName(event: FinalEvent): string {
  const m = event.callId != null ? RAW_CALL.exec(event.raw) : null;
  return m ? m[1]! : functionName(event.kind, event.name!);
}

