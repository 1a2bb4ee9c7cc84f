// The provenance rule and the taint policy decision (docs/security.md), as the Python runtime's
// auwgent/runtime/provenance.py and taint.py state them; conformance/taint.json pins both.
// This runtime does not run taint tracking yet (it refuses an IR with taint annotations: no
// approvals, code mode or MCP here); these functions are the shared decision it will use.
//
// Differences a string may show: spans count UTF-16 code units (Python counts code points, so
// they differ after a character outside the BMP) and case folding is toUpperCase().toLowerCase()
// per character, which agrees with Python's casefold() on the letters the vectors use.

export type Label = Record<string, unknown>;

export interface Finding {
  path: string;
  value: string;
  rule: "copied" | "after_untrusted";
  source: Label;
  span?: [number, number];
}

export const POLICIES = ["approve", "refuse", "allow"] as const;

/** "run" (not a tainted call to a sink) or the policy's action; an unknown policy refuses. */
export function decide(sink: boolean, tainted: boolean, policy: string): string {
  if (!(sink && tainted)) return "run";
  return (POLICIES as readonly string[]).includes(policy) ? policy : "refuse";
}

const HEX = /^[0-9a-fA-F]{2}$/;
const isEscape = (text: string, i: number): boolean => text[i] === "%" && i + 2 < text.length && HEX.test(text.slice(i + 1, i + 3));
const SPACE = /\s/u;
const ALNUM = /[\p{L}\p{N}]/u;

function urlDecoded(text: string): [string[], number[]] {
  const chars: string[] = [];
  const origin: number[] = [];
  let i = 0;
  while (i < text.length) {
    if (isEscape(text, i)) {
      const start = i;
      const bytes: number[] = [];
      while (isEscape(text, i)) {
        bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
        i += 3;
      }
      const decoded = new TextDecoder("utf-8").decode(new Uint8Array(bytes));
      for (let j = 0; j < decoded.length; j++) {
        chars.push(decoded[j]!);
        origin.push(start);
      }
      continue;
    }
    chars.push(text[i]!);
    origin.push(i);
    i += 1;
  }
  return [chars, origin];
}

/** The text folded for matching, and for each folded character the index it came from. */
export function normalise(text: string): [string, number[]] {
  const [chars, origin] = urlDecoded(text);
  let out = "";
  const where: number[] = [];
  let space = false;
  chars.forEach((ch, k) => {
    if (SPACE.test(ch)) {
      if (!space && out) {
        out += " ";
        where.push(origin[k]!);
      }
      space = true;
      return;
    }
    space = false;
    const folded = ch.toUpperCase().toLowerCase();
    out += folded;
    for (let j = 0; j < folded.length; j++) where.push(origin[k]!);
  });
  if (out.endsWith(" ")) {
    out = out.slice(0, -1);
    where.pop();
  }
  return [out, where];
}

const charEnd = (text: string, index: number): number => {
  if (!isEscape(text, index)) return index + 1;
  let end = index;
  while (isEscape(text, end)) end += 3;
  return end;
};

/** Texts of one kind, each folded once, searched as one string. */
export class TextIndex {
  sources: { label: Label; text: string }[] = [];
  private folded: [string, number[]][] = [];
  private starts: number[] = [];
  private joined = "";

  add(label: Label, text: string): void {
    const folded = normalise(text);
    if (!folded[0]) return;
    this.sources.push({ label, text });
    this.folded.push(folded);
    this.starts.push(this.joined.length);
    this.joined += folded[0] + "\u0000";
  }

  /** The first text with a bounded occurrence of the value, and its span in the original. */
  find(value: string): [Label, [number, number]] | null {
    const needle = normalise(value)[0];
    if (!needle) return null;
    const hay = this.joined;
    for (let at = hay.indexOf(needle); at !== -1; at = hay.indexOf(needle, at + 1)) {
      const end = at + needle.length;
      const before = ALNUM.test(needle[0]!) && at > 0 && ALNUM.test(hay[at - 1]!);
      const after = ALNUM.test(needle[needle.length - 1]!) && end < hay.length && ALNUM.test(hay[end]!);
      if (!before && !after) return this.locate(at, end);
    }
    return null;
  }

  private locate(at: number, end: number): [Label, [number, number]] {
    let index = 0;
    while (index + 1 < this.starts.length && this.starts[index + 1]! <= at) index += 1;
    const start = this.starts[index]!;
    const where = this.folded[index]![1];
    const source = this.sources[index]!;
    return [source.label, [where[at - start]!, charEnd(source.text, where[end - start - 1]!)]];
  }
}

type IRType = Record<string, any> | null | undefined;

function resolved(type: IRType, types: Record<string, any>): IRType {
  let seen = 0;
  while (type && type.kind === "ref" && seen < 32) {
    type = types[type.name];
    seen += 1;
  }
  return type;
}

function isLiteral(type: IRType, types: Record<string, any>): boolean {
  if (!type) return false;
  if (type.kind === "literal") return true;
  if (type.kind === "union") return (type.variants ?? []).every((v: IRType) => isLiteral(resolved(v, types), types));
  return false;
}

/** A leaf as matching reads it: a whole number without a fraction. */
export const valueText = (value: unknown): string => String(value);

/** [path, leaf] for each checked string or number: not booleans, not literal-typed values. */
export function leaves(value: unknown, type: IRType, types: Record<string, any>, path: string): [string, unknown][] {
  type = resolved(type, types);
  if (typeof value === "boolean" || value === null || value === undefined || isLiteral(type, types)) return [];
  if (typeof value === "string" || typeof value === "number") return [[path, value]];
  if (Array.isArray(value)) {
    const items = type?.kind === "array" ? type.items : null;
    return value.flatMap((item, i) => leaves(item, items, types, `${path}[${i}]`));
  }
  if (typeof value === "object") {
    const fields = Object.fromEntries(((type?.fields ?? []) as any[]).map((f) => [f.name, f.type]));
    return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => leaves(v, fields[k], types, `${path}.${k}`));
  }
  return [];
}

/** The rule for one leaf: trusted, then copied, then after untrusted text, else clean. */
export function assess(path: string, value: unknown, untrusted: TextIndex, trusted: TextIndex[], exposedBy: Label | null): Finding | null {
  const text = valueText(value);
  if (!normalise(text)[0] || trusted.some((index) => index.find(text) !== null)) return null;
  const found = untrusted.find(text);
  if (found) return { path, value: text, rule: "copied", source: found[0], span: found[1] };
  if (exposedBy) return { path, value: text, rule: "after_untrusted", source: exposedBy };
  return null;
}

/** One call judged from plain data (the shape of conformance/taint.json's cases). */
export function evaluateTaint(c: Record<string, any>): { findings: Finding[]; action: string } {
  const untrusted = new TextIndex();
  const trusted = new TextIndex();
  for (const [label, text] of c.untrusted) untrusted.add(label, text);
  for (const [label, text] of c.trusted) trusted.add(label, text);
  const declared = Object.fromEntries((c.params as any[]).map((p) => [p.name, p.type]));
  const findings: Finding[] = [];
  for (const [key, value] of Object.entries<unknown>(c.args)) {
    for (const [path, leaf] of leaves(value, declared[key], c.types, `args.${key}`)) {
      const found = assess(path, leaf, untrusted, [trusted], c.exposed_by ?? null);
      if (found) findings.push(found);
    }
  }
  return { findings, action: decide(Boolean(c.sink), findings.length > 0, String(c.policy)) };
}
