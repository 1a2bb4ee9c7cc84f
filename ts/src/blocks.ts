// The block protocol (the default codec): the model answers in `[kind: Name]` ... `[/kind]`
// blocks (docs/protocol.md). The decoder is a state machine over the characters of the
// stream: outside a block it watches line starts for a header, inside a block only the
// closer; results are the same however the stream is chunked.

import {
  BLOCK_KIND,
  blocksSection,
  findCallable,
  outputVariants,
  renderOutcome,
  runtimeNote,
  type CallableSpec,
  type CallKind,
  type CallOutcome,
  type Contract,
} from "./section.js";
import type { IRField, IRType } from "./schema.js";
import { BodyError, JsonPrefix, MAX_BODY_CHARS, embeddedObject, looksStructured, parseBody, parseValue, repair, type Repair } from "./values.js";
import type { Message, StreamEvent } from "./providers/base.js";

export type IntentKind = "response_text" | "response_schema" | "tool_call" | "workflow_call" | "helper_call" | "custom";

export interface PartialEvent {
  type: "partial";
  kind: IntentKind;
  name: string | null;
  segment: number;
  snapshot: Record<string, any>;
  raw: string;
  delta?: string;
}
export interface FinalEvent {
  type: "final";
  kind: IntentKind;
  name: string | null;
  segment: number;
  payload: Record<string, any>;
  raw: string;
  callId?: string | null;
  /** What the decoder repaired to read it (middleware sees them as ctx.repairs). */
  repairs?: Repair[];
}
export interface RejectedEvent {
  type: "rejected";
  kind: IntentKind | null;
  name: string | null;
  segment: number;
  message: string;
  raw: string;
  callId?: string | null;
}
export type DecodeEvent = PartialEvent | FinalEvent | RejectedEvent;

export interface Decoder {
  feed(event: StreamEvent): DecodeEvent[];
  close(): DecodeEvent[];
}

export interface AssistantTurn {
  text: string;
  calls: FinalEvent[];
}

export interface Codec {
  name: "blocks" | "native";
  systemSection(contract: Contract): string;
  functions(contract: Contract): { name: string; description: string; parameters: Record<string, any> }[];
  responseSchema(contract: Contract): Record<string, any> | null;
  decoder(contract: Contract, partials: boolean): Decoder;
  assistantMessage(turn: AssistantTurn): Message;
  resultsMessages(outcomes: CallOutcome[]): Message[];
  feedbackMessage(text: string): Message;
}

const NO_EVENTS: DecodeEvent[] = [];

// Maps, not objects: a header's word is the model's text (`[constructor: x]` names no kind),
// and a lookup by a string made at run time costs no interning.
const KINDS = new Map<string, IntentKind>([
  ["response_text", "response_text"],
  ["tool_call", "tool_call"],
  ["workflow_call", "workflow_call"],
  ["helper_call", "helper_call"],
  ["custom", "custom"],
  ["schema", "response_schema"],
]);
const CALL_KINDS = new Map<string, CallKind>([
  ["tool_call", "tool"],
  ["workflow_call", "workflow"],
  ["helper_call", "helper"],
]);
const PROTOCOLISH = /^[a-z_]*(?:call|tool|function|intent|schema|response|result|output)/;
const MAX_HEADER = 200;
const MAX_CLOSER = 40;
// Block kinds are ASCII words; names may hold any letter (NAME below).
const HEADER = /^\[[ \t]*(?<kind>[A-Za-z_][\w-]*)[ \t]*(?::[ \t]*(?<name>[^\]\n]*?))?[ \t]*\]?[ \t\r]*$/;
const NAME = /^[A-Za-z_][\p{L}\p{N}_.\-]*$/u;
const HEADER_STOP = /[^A-Za-z0-9_\-.: \t`"'\r]/g;
const CLOSER = /\[\/[ \t]*(?<kind>[A-Za-z_][\w-]*)[ \t]*\]/y;
const CLOSER_PREFIX = /^\[(?:\/[ \t]*[\w-]*[ \t]*)?$/;
const KNOWN = "(?:tool_call|workflow_call|helper_call|custom|schema|response_text)";
const NEXT_HEADER = new RegExp(String.raw`\[[ \t]*${KNOWN}[ \t]*(?::[^\]\n]*)?\]`, "iy");
const NEXT_HEADER_PREFIX = /^\[[ \t]*[A-Za-z_]*[ \t]*(?::[^\]\n]*)?$/;
// A line indented by this many columns (a tab reaching the next multiple of 4) is a Markdown
// code line: a quoted example, so nothing on it is a header.
const CODE_INDENT = 4;

/** The column reached from `start` after `spaces` (spaces, tabs, `\r`). */
function columns(start: number, spaces: string): number {
  for (const char of spaces) {
    if (char === " ") start += 1;
    else if (char === "\t") start += 4 - (start % 4);
  }
  return start;
}

/**
 * When a structured partial comes (docs/protocol.md, "When partials come"): a read of the whole
 * body after every piece while the reads cost at most twice the body plus 64 KB, then at least
 * every 4 KB a partial showing the last snapshot again; past MAX_BODY_CHARS (a body the final
 * read refuses) nothing is read. So the partials of a body cost time linear in it.
 */
export class Cadence {
  private spent = 0;
  private last = 0;
  /** "read": read the body for a new snapshot; "show": the last snapshot again; null: no partial now. */
  next(size: number): "read" | "show" | null {
    if (size <= MAX_BODY_CHARS && this.spent + size <= 2 * size + (1 << 16)) {
      this.spent += size;
      this.last = size;
      return "read";
    }
    if (size - this.last < 4096) return null;
    this.last = size;
    return "show";
  }
}

/**
 * Streaming text with leading and trailing whitespace trimmed; deltas concatenate to the text.
 * The text grows by `+=` (a rope in V8: no copy), so a partial carrying it costs its delta.
 */
export class TextStream {
  started = false;
  private held: string[] = [];
  private acc = "";
  private pending: string[] = [];

  push(piece: string): void {
    if (!this.started) {
      piece = piece.replace(/^\s+/, "");
      if (!piece) return;
      this.started = true;
    }
    const stripped = piece.replace(/\s+$/, "");
    if (!stripped) {
      this.held.push(piece);
      return;
    }
    const delta = this.held.join("") + stripped;
    this.held = [piece.slice(stripped.length)];
    this.acc += delta;
    this.pending.push(delta);
  }
  hasDelta(): boolean {
    return this.pending.length > 0;
  }
  takeDelta(): string {
    const d = this.pending.join("");
    this.pending = [];
    return d;
  }
  text(): string {
    return this.acc;
  }
}

interface Target {
  kind: IntentKind;
  name: string | null;
  fields: IRField[];
  type?: IRType;
  single?: string | null;
  /** The body is the single parameter's value as it is (code mode). */
  rawBody?: boolean;
}

interface Block {
  segment: number;
  header: string;
  closers: Set<string>;
  target: Target | null;
  error: string | null;
  kind: IntentKind | null;
  name: string | null;
  /** The body so far (grown by `+=`). */
  source: string;
  cadence: Cadence;
  pending: string;
  /** The indentation of the body's last line while it holds only spaces and tabs (null once it holds text). */
  column: number | null;
  text: TextStream | null;
  dirty: boolean;
  snapshot: Record<string, any>;
  /** Framing recovered, then the body's. */
  repairs: Repair[];
  /** For partials of JSON bodies. */
  json: JsonPrefix;
}

function body(block: Block): string {
  return block.source;
}

export class BlocksDecoder implements Decoder {
  private textOutput: boolean;
  private segment = 0;
  private lineStart = true;
  private column = 0; // outside blocks: the indentation of the line so far
  private codeLine = false; // this line is indented as code: nothing on it is a header
  private header: string | null = null;
  private midline = false;
  private fence = ""; // outside blocks: the fence character of an open code fence
  private probe = ""; // a run of fence characters starting the line so far
  private last = ""; // the last character of text outside blocks
  private block: Block | null = null;
  private blocksSeen = false;
  private pre = "";
  private preText = new TextStream();
  private preSegment: number | null = null;
  private events: DecodeEvent[] = [];

  constructor(
    private contract: Contract,
    private wantPartials = true,
  ) {
    this.textOutput = contract.output.kind === "text";
  }

  feed(event: StreamEvent): DecodeEvent[] {
    if (event.type === "text" && event.text) {
      this.consume(event.text);
      if (this.wantPartials) this.partials();
    }
    return this.take();
  }

  close(): DecodeEvent[] {
    if (this.probe) {
      this.outsideText(this.probe);
      this.probe = "";
    }
    if (this.header !== null) {
      const header = this.header;
      this.header = null;
      if (this.midline || !this.open(header, header)) this.outsideText(header);
    }
    if (this.block !== null) {
      const block = this.block;
      this.flushBody(block, block.pending);
      block.pending = "";
      this.finish(block, "");
    }
    if (!this.blocksSeen) this.finishUnframed();
    return this.take();
  }

  private take(): DecodeEvent[] {
    const events = this.events;
    if (events.length === 0) return NO_EVENTS;
    this.events = [];
    return events;
  }

  private consume(chunk: string): void {
    if (this.block !== null && this.block.pending) {
      chunk = this.block.pending + chunk;
      this.block.pending = "";
    }
    let i = 0;
    while (i < chunk.length) i = this.block !== null ? this.inside(chunk, i) : this.outside(chunk, i);
  }

  // -- outside blocks

  private outside(s: string, i: number): number {
    const n = s.length;
    while (i < n && this.block === null) {
      if (this.header !== null) {
        i = this.growHeader(s, i);
        continue;
      }
      if (this.probe) {
        i = this.growProbe(s, i);
        continue;
      }
      if (this.lineStart) {
        let j = i;
        while (j < n && " \t\r".includes(s[j]!)) j++;
        this.column = columns(this.column, s.slice(i, j));
        if (j === n) {
          this.outsideText(s.slice(i));
          return n;
        }
        this.lineStart = false;
        if (this.column >= CODE_INDENT) {
          this.codeLine = true; // a Markdown code line: text to its end
        } else if (s[j] === "[" && !this.fence) {
          this.outsideText(s.slice(i, j));
          this.header = "[";
          this.midline = false;
          i = j + 1;
          continue;
        } else if (s[j] === "`" || s[j] === "~") {
          // perhaps a code fence: headers inside one are text
          this.outsideText(s.slice(i, j));
          this.probe = s[j]!;
          i = this.growProbe(s, j + 1);
          continue;
        }
      }
      let k = i;
      if (this.fence || this.codeLine) while (k < n && s[k] !== "\n") k++;
      else while (k < n && s[k] !== "[" && s[k] !== "\n") k++;
      if (k === n) {
        this.outsideText(s.slice(i));
        return n;
      }
      if (s[k] === "\n") {
        this.outsideText(s.slice(i, k + 1));
        this.newLine();
      } else if ((k > i ? s[k - 1] : this.last) === "`") {
        this.outsideText(s.slice(i, k + 1)); // `[tool_call: x]` in inline code is text
      } else {
        // a header may also follow text on its line (`Sure. [tool_call: x]`)
        this.outsideText(s.slice(i, k));
        this.header = "[";
        this.midline = true;
      }
      i = k + 1;
    }
    return i;
  }

  private newLine(): void {
    this.lineStart = true;
    this.column = 0;
    this.codeLine = false;
  }

  /** Count the fence characters opening a line; three open (or close) a code fence. */
  private growProbe(s: string, i: number): number {
    const char = this.probe[0]!;
    let j = i;
    while (j < s.length && s[j] === char && this.probe.length + j - i < 3) j++;
    this.probe += s.slice(i, j);
    if (this.probe.length === 3) {
      if (!this.fence) this.fence = char;
      else if (this.fence === char) this.fence = "";
      this.outsideText(this.probe);
      this.probe = "";
    } else if (j < s.length) {
      // another character: not a fence
      this.outsideText(this.probe);
      this.probe = "";
    }
    return j;
  }

  private growHeader(s: string, i: number): number {
    HEADER_STOP.lastIndex = i;
    const stop = HEADER_STOP.exec(s);
    if (stop === null) {
      this.header += s.slice(i);
      if (this.header!.length > MAX_HEADER) this.releaseHeader("");
      return s.length;
    }
    const k = stop.index;
    const ch = s[k]!;
    const candidate = this.header + s.slice(i, k);
    if (ch === "]" && this.open(candidate + "]", candidate + "]")) {
      this.header = null;
      return k + 1;
    }
    if (ch === "\n" && !this.midline && this.open(candidate, candidate + "\n")) {
      this.header = null;
      return k + 1;
    }
    this.header = candidate;
    this.releaseHeader(ch === "]" || ch === "\n" ? ch : "");
    return ch === "]" || ch === "\n" ? k + 1 : k;
  }

  private releaseHeader(tail: string): void {
    this.outsideText(this.header + tail);
    this.header = null;
    if (tail === "\n") this.newLine();
    else this.lineStart = false;
  }

  private outsideText(piece: string): void {
    if (piece) this.last = piece[piece.length - 1]!;
    if (!piece || this.blocksSeen) return;
    this.pre += piece;
    if (this.textOutput) {
      this.preText.push(piece);
      if (this.preSegment === null && this.preText.started) this.preSegment = this.nextSegment();
    }
  }

  // -- opening and closing

  private open(candidate: string, headerRaw: string): boolean {
    const m = HEADER.exec(candidate);
    if (m === null) return false;
    const word = m.groups!.kind!.toLowerCase();
    const kind = KINDS.get(word) ?? null;
    if (this.midline && kind === null) return false;
    const [ok, name] = cleanName(m.groups!.name);
    if (!ok || (kind === null && !(name && PROTOCOLISH.test(m.groups!.kind!)))) return false;
    this.blocksSeen = true;
    const [target, error] = this.resolveTarget(word, kind, name);
    const block: Block = {
      segment: this.nextSegment(),
      header: headerRaw,
      closers: closers(word),
      target,
      error,
      kind: target ? target.kind : kind,
      name: target ? target.name : name,
      source: "",
      cadence: new Cadence(),
      pending: "",
      column: headerRaw.endsWith("\n") ? 0 : null,
      text: kind === "response_text" ? new TextStream() : null,
      dirty: true,
      snapshot: {},
      repairs: [],
      json: new JsonPrefix(),
    };
    if (!candidate.replace(/[ \t\r]+$/, "").endsWith("]")) block.repairs.push(repair("header_bracket", "", "a header without its `]`"));
    this.block = block;
    this.lineStart = false;
    return true;
  }

  private resolveTarget(word: string, kind: IntentKind | null, name: string | null): [Target | null, string | null] {
    if (kind === null) return [null, `unknown block [${word}: ${name ?? "None"}]; ${this.allowed()}`];
    if (kind === "response_text") {
      if (this.textOutput) return [{ kind: "response_text", name: null, fields: [] }, null];
      return [null, `this agent answers with ${this.schemaHint()}, not [response_text]`];
    }
    if (kind === "response_schema") return this.resolveSchema(name);
    if (name === null) return [null, `[${word}] needs a name: [${word}: name]`];
    if (kind === "custom") {
      for (const intent of this.contract.intents)
        if (intent.name === name) return [{ kind: "custom", name, fields: intent.fields }, null];
      return [null, `unknown intent '${name}'; ${this.allowed()}`];
    }
    const callKind = CALL_KINDS.get(word)!;
    let spec: CallableSpec | undefined = findCallable(this.contract, callKind, name);
    if (spec === undefined) {
      const same = this.contract.callables.filter((c) => c.name === name);
      spec = same.length === 1 ? same[0] : undefined;
    }
    if (spec === undefined) {
      return [null, `${callKind[0]!.toUpperCase() + callKind.slice(1)} not found: ${name} (not available here; ${this.allowed()})`];
    }
    return [{ kind: KINDS.get(BLOCK_KIND[spec.kind])!, name: spec.name, fields: spec.params, single: singleString(spec), rawBody: spec.rawBody === true }, null];
  }

  private resolveSchema(name: string | null): [Target | null, string | null] {
    const variants = outputVariants(this.contract);
    if (!variants.length) return [null, "this agent answers with [response_text], not [schema]"];
    if (name === null && variants.length === 1) name = variants[0]![0];
    for (const [variantName, type] of variants)
      if (variantName === name) return [{ kind: "response_schema", name, fields: [], type }, null];
    const what = name ? `unknown output shape '${name}'` : "[schema] needs the shape's name";
    return [null, `${what}; answer with ${this.schemaHint()}`];
  }

  private allowed(): string {
    const names = [
      ...this.contract.callables.map((c) => `${c.kind} ${c.name}`),
      ...this.contract.intents.map((i) => `intent ${i.name}`),
    ];
    return "available: " + (names.length ? names.join(", ") : "no tools");
  }

  private schemaHint(): string {
    return outputVariants(this.contract)
      .map(([n]) => `[schema: ${n}]`)
      .join(" or ");
  }

  private nextSegment(): number {
    return this.segment++;
  }

  // -- inside a block

  private inside(s: string, i: number): number {
    const block = this.block!;
    let pos = i;
    let k: number;
    while ((k = s.indexOf("[", pos)) >= 0) {
      CLOSER.lastIndex = k;
      const m = CLOSER.exec(s);
      if (m && block.closers.has(m.groups!.kind!.toLowerCase())) {
        this.flushBody(block, s.slice(i, k));
        this.finish(block, m[0]);
        return k + m[0].length;
      }
      if (block.text === null && this.atLineStart(block, s, i, k)) {
        NEXT_HEADER.lastIndex = k;
        if (NEXT_HEADER.test(s)) return this.reopen(block, s, i, k);
        if (s.length - k <= MAX_HEADER && NEXT_HEADER_PREFIX.test(s.slice(k))) return this.hold(block, s, i, k);
      }
      if (s.length - k < MAX_CLOSER && CLOSER_PREFIX.test(s.slice(k))) return this.hold(block, s, i, k);
      pos = k + 1;
    }
    this.flushBody(block, s.slice(i));
    return s.length;
  }

  private hold(block: Block, s: string, i: number, k: number): number {
    this.flushBody(block, s.slice(i, k));
    block.pending = s.slice(k);
    return s.length;
  }

  private reopen(block: Block, s: string, i: number, k: number): number {
    this.flushBody(block, s.slice(i, k));
    this.finish(block, "");
    this.newLine(); // the header's indentation was read in the block: under CODE_INDENT
    return k;
  }

  /** Whether the `[` at `k` starts a line, indented less than code. */
  private atLineStart(block: Block, s: string, i: number, k: number): boolean {
    let j = k - 1;
    while (j >= i && (s[j] === " " || s[j] === "\t")) j--;
    const start = j >= i ? (s[j] === "\n" ? 0 : null) : block.column;
    return start !== null && columns(start, s.slice(j + 1, k)) < CODE_INDENT;
  }

  private flushBody(block: Block, piece: string): void {
    if (!piece) return;
    block.source += piece;
    const line = piece.lastIndexOf("\n");
    const tail = piece.slice(line + 1);
    if (/[^ \t]/.test(tail)) block.column = null;
    else if (line >= 0) block.column = columns(0, tail);
    else if (block.column !== null) block.column = columns(block.column, tail);
    block.dirty = true;
    if (block.text !== null) block.text.push(piece);
    else if (this.wantPartials) block.json.feed(piece); // the JSON tracker only serves partial snapshots
  }

  // An empty `closer` means it never came (end of stream, or the next header).

  private finish(block: Block, closer: string): void {
    this.block = null;
    const text = body(block);
    const raw = block.header + text + closer;
    if (block.target === null) {
      this.events.push({ type: "rejected", kind: block.kind, name: block.name, segment: block.segment, message: block.error ?? "", raw });
      return;
    }
    const repairs = block.repairs;
    if (!closer) repairs.push(repair("missing_closer", "", "a block without its closer"));
    let payload: Record<string, any>;
    try {
      payload = blockPayload(block.target, text, this.contract, null, repairs);
    } catch (error) {
      if (!(error instanceof BodyError)) throw error;
      const message = `${label(block.target)}: ${error.message}`;
      this.events.push({ type: "rejected", kind: block.target.kind, name: block.name, segment: block.segment, message, raw });
      return;
    }
    this.events.push({ type: "final", kind: block.target.kind, name: block.name, segment: block.segment, payload, raw, repairs });
  }

  // -- partials

  private partials(): void {
    const block = this.block;
    if (block !== null && block.target !== null && block.dirty) {
      if (block.text !== null) {
        if (!block.text.hasDelta()) return;
        const delta = block.text.takeDelta();
        this.events.push({
          type: "partial",
          kind: "response_text",
          name: null,
          segment: block.segment,
          snapshot: { text: block.text.text() },
          raw: body(block),
          delta,
        });
      } else {
        const text = body(block);
        const step = block.cadence.next(text.length);
        if (step === null) return;
        if (step === "read") {
          try {
            block.snapshot = blockPayload(block.target, text, this.contract, block.json);
          } catch {
            // keep the previous snapshot; the final says what is wrong
          }
        }
        this.events.push({ type: "partial", kind: block.target.kind, name: block.target.name, segment: block.segment, snapshot: block.snapshot, raw: text });
      }
      block.dirty = false;
    } else if (block === null && !this.blocksSeen && this.preSegment !== null && this.preText.hasDelta()) {
      const delta = this.preText.takeDelta();
      const text = this.preText.text();
      this.events.push({ type: "partial", kind: "response_text", name: null, segment: this.preSegment, snapshot: { text }, raw: text, delta });
    }
  }

  // -- a response without blocks

  private finishUnframed(): void {
    const raw = this.pre;
    if (this.textOutput) {
      const text = this.preText.text();
      if (this.preSegment !== null && text)
        this.events.push({ type: "final", kind: "response_text", name: null, segment: this.preSegment, payload: { text }, raw });
      return;
    }
    if (!raw.trim()) return;
    const segment = this.nextSegment();
    const variants = outputVariants(this.contract);
    if (variants.length !== 1) {
      this.events.push({ type: "rejected", kind: "response_schema", name: null, segment, message: `the answer must be one block: ${this.schemaHint()}`, raw });
      return;
    }
    const [name, type] = variants[0]!;
    let response: any;
    const repairs: Repair[] = [];
    try {
      response = parseValue(embeddedObject(raw), type, this.contract.types, false, repairs);
    } catch (error) {
      if (!(error instanceof BodyError)) throw error;
      this.events.push({ type: "rejected", kind: "response_schema", name, segment, message: `the answer must be a [schema: ${name}] block (${error.message})`, raw });
      return;
    }
    this.events.push({ type: "final", kind: "response_schema", name, segment, payload: { type: name, response }, raw, repairs });
  }
}

function cleanName(text: string | undefined): [boolean, string | null] {
  const name = (text ?? "").trim().replace(/^[`"']+|[`"']+$/g, "");
  if (!name) return [true, null];
  return [NAME.test(name), name];
}

function closers(word: string): Set<string> {
  const words = new Set([word, word.endsWith("_call") ? word.slice(0, -5) : word]);
  if (word === "response_text") words.add("response");
  return words;
}

/** A raw body's value: without a surrounding code fence and common indentation. */
export function rawValue(body: string): string {
  let lines = body.replace(/^[\r\n]+|[\r\n]+$/g, "").split(/\r\n|\r|\n/);
  const head = lines[0]?.trimStart() ?? "";
  if (head.startsWith("```") || head.startsWith("~~~")) {
    const fence = head.slice(0, 3);
    lines = lines.slice(1);
    const last = lines[lines.length - 1]?.trim() ?? "";
    if (lines.length && last.startsWith(fence) && !last.split(fence[0]!).join("")) lines = lines.slice(0, -1);
  }
  return dedent(lines.join("\n")).replace(/^\n+/, "").replace(/\s+$/, "");
}

/** textwrap.dedent: the whitespace prefix common to the non-blank lines removed (blank
 * lines become empty). */
function dedent(text: string): string {
  const lines = text.split("\n").map((l) => (l.trim() ? l : ""));
  let common: string | null = null;
  for (const line of lines) {
    if (!line) continue;
    const indent = /^[ \t]*/.exec(line)![0];
    if (common === null) common = indent;
    else {
      let k = 0;
      while (k < common.length && k < indent.length && common[k] === indent[k]) k++;
      common = common.slice(0, k);
    }
  }
  return common ? lines.map((l) => l.slice(common!.length)).join("\n") : lines.join("\n");
}

function singleString(spec: CallableSpec): string | null {
  if (spec.params.length === 1 && ["string", "text"].includes(spec.params[0]!.type.kind)) return spec.params[0]!.name;
  return null;
}

function label(target: Target): string {
  const word = target.kind === "response_schema" ? "schema" : target.kind;
  return target.name ? `[${word}: ${target.name}]` : `[${word}]`;
}

/** The payload of a block; `partial` is the body's JSON tracker while it streams. */
function blockPayload(target: Target, text: string, contract: Contract, partial: JsonPrefix | null, repairs: Repair[] | null = null): Record<string, any> {
  const types = contract.types;
  const streaming = partial !== null;
  if (target.kind === "response_text") return { text: text.trim() };
  if (target.kind === "response_schema") return { type: target.name, response: parseValue(text, target.type!, types, streaming, repairs, partial) };
  if (target.kind === "custom") return parseBody(text, target.fields, types, streaming, repairs, partial);
  return { type: target.name, args: callArgs(target, text, contract, partial, repairs) };
}

/**
 * Call arguments. A lone string parameter takes the whole body as its value only when the body
 * is plain text; a body that reads as fields must name that parameter (a guess here would hand
 * the call text it never asked for).
 */
function callArgs(target: Target, text: string, contract: Contract, json: JsonPrefix | null, repairs: Repair[] | null): Record<string, any> {
  const partial = json !== null;
  const single = target.single;
  // Code arrives whole: a partial would show lines the final (unfenced) value lacks.
  if (single && target.rawBody) return partial ? {} : { [single]: rawValue(text) };
  if (single && !looksStructured(text, single)) {
    // While streaming, the first line is still being typed: it may yet read as `name: ...`.
    if (partial && !text.trimStart().includes("\n")) return {};
    return { [single]: text.trim() };
  }
  if (!single) return parseBody(text, target.fields, contract.types, partial, repairs, json);
  const hint = `write \`${single}: <value>\` (or, for text, a body whose first line is not \`name: ...\`)`;
  let args: Record<string, any>;
  try {
    args = parseBody(text, target.fields, contract.types, partial, repairs, json);
  } catch (error) {
    if (!(error instanceof BodyError)) throw error;
    throw new BodyError(`the only parameter is \`${single}\` and the body reads as fields (${error.message}); ${hint}`);
  }
  const others = Object.keys(args).filter((key) => key !== single);
  if (others.length && !partial) {
    throw new BodyError(`the only parameter is \`${single}\`, but the body reads as fields (${others.map((k) => `\`${k}\``).join(", ")}); ${hint}`);
  }
  return single in args ? { [single]: args[single] } : {};
}

export class BlocksCodec implements Codec {
  name = "blocks" as const;
  systemSection(contract: Contract): string {
    return blocksSection(contract);
  }
  functions(): [] {
    return [];
  }
  responseSchema(): null {
    return null;
  }
  decoder(contract: Contract, partials: boolean): Decoder {
    return new BlocksDecoder(contract, partials);
  }
  assistantMessage(turn: AssistantTurn): Message {
    return { role: "assistant", content: turn.text };
  }
  resultsMessages(outcomes: CallOutcome[]): Message[] {
    if (!outcomes.length) return [];
    const body = outcomes.map(renderOutcome).join("\n");
    const images = outcomes.flatMap((o) => o.parts ?? []);
    // Images a tool returned follow the result blocks in the same user message.
    return [images.length ? { role: "user", content: body, parts: [{ type: "text", text: body }, ...images] } : { role: "user", content: body }];
  }
  feedbackMessage(text: string): Message {
    return { role: "user", content: runtimeNote(text) };
  }
}
