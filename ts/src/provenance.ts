// Provenance: where the values of a call's arguments may have come from (docs/security.md,
// "The provenance rule"), as the Python runtime's auwgent/runtime/provenance.py states it;
// conformance/taint.json pins it. Pure: no state of a run (the run's guard is src/taint.ts).
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

export type IRType = Record<string, any> | null | undefined;

export function resolved(type: IRType, types: Record<string, any>): IRType {
  let seen = 0;
  while (type && type.kind === "ref" && seen < 32) {
    type = types[type.name];
    seen += 1;
  }
  return type;
}

export function isLiteral(type: IRType, types: Record<string, any>): boolean {
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
    const fields = new Map(((type?.fields ?? []) as { name: string; type: IRType }[]).map((f) => [f.name, f.type]));
    return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => leaves(v, fields.get(k), types, `${path}.${k}`));
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

/** The tainted leaf values of a call's `args`, walked by the declared `params`. */
export function callFindings(
  args: Record<string, unknown>,
  params: readonly { name: string; type: unknown }[],
  types: Record<string, any>,
  untrusted: TextIndex,
  trusted: TextIndex[],
  exposedBy: Label | null,
): Finding[] {
  const declared = new Map(params.map((p) => [p.name, p.type as IRType]));
  const out: Finding[] = [];
  for (const [key, value] of Object.entries(args))
    for (const [path, leaf] of leaves(value, declared.get(key), types, `args.${key}`)) {
      const found = assess(path, leaf, untrusted, trusted, exposedBy);
      if (found) out.push(found);
    }
  return out;
}

/** The leaves of a quarantine helper's output its parent trusts: numbers and values of
 * literal types (booleans are never checked, so they need no trust). */
export function trustedLeaves(value: unknown, type: IRType, types: Record<string, any>): [string, unknown][] {
  const out: [string, unknown][] = [];
  walkTrusted(value, type, types, "$", out);
  return out;
}

function walkTrusted(value: unknown, type: IRType, types: Record<string, any>, path: string, out: [string, unknown][]): void {
  type = resolved(type, types);
  if (typeof value === "boolean" || value === null || value === undefined) return;
  if (typeof value === "number" || (typeof value === "string" && isLiteral(type, types))) out.push([path, value]);
  else if (Array.isArray(value)) value.forEach((item, i) => walkTrusted(item, type?.items, types, `${path}[${i}]`, out));
  else if (typeof value === "object") {
    const fields = new Map(((type?.fields ?? []) as { name: string; type: IRType }[]).map((f) => [f.name, f.type]));
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) walkTrusted(item, fields.get(key), types, `${path}.${key}`, out);
  }
}
