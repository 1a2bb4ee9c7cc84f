// Input parts: text, images and files (PDF) given to `agent.run` instead of a string, with the
// same shape, checks and error messages as the Python runtime's auwgent.runtime.parts.

import { readFileSync } from "node:fs";
import { basename, extname } from "node:path";
import { InputError, ProviderError } from "./errors.js";

export interface TextPart {
  type: "text";
  text: string;
}
interface BinaryPart {
  /** Base64 (standard alphabet, padded); needs `media_type`. */
  data?: string;
  /** An http(s):// or gs:// URL. */
  url?: string;
  media_type?: string;
}
export interface ImagePart extends BinaryPart {
  type: "image";
}
export interface FilePart extends BinaryPart {
  type: "file";
  filename?: string;
}
export type Part = TextPart | ImagePart | FilePart;
export type Input = string | Part[];

/** The largest binary one part may carry (decoded bytes): 20 MiB. */
export const MAX_PART_BYTES = 20 * 1024 * 1024;
export const IMAGE_MEDIA_TYPES = ["image/gif", "image/jpeg", "image/png", "image/webp"];
export const FILE_MEDIA_TYPES = ["application/pdf"];
const MEDIA_TYPES: Record<string, string[]> = { image: IMAGE_MEDIA_TYPES, file: FILE_MEDIA_TYPES };
const BY_SUFFIX: Record<string, string> = {
  ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
  ".webp": "image/webp", ".pdf": "application/pdf",
};
/** The URL schemes every provider fetches; Gemini also reads gs:// (Cloud Storage). */
export const WEB_SCHEMES = ["http://", "https://"];
const URL_SCHEMES = [...WEB_SCHEMES, "gs://"];
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A provider's API cannot take a part (raised while building the request, before sending). */
export class UnsupportedPart extends InputError {}

export function text(value: string): TextPart {
  return { type: "text", text: value };
}

/** An image part from bytes, a file path or a URL (media type guessed from the suffix). */
export function image(source: Uint8Array | string, mediaType?: string): ImagePart {
  return binary("image", source, mediaType, undefined) as ImagePart;
}

/** A file part (a PDF) from bytes, a file path or a URL; `filename` defaults to the path's name. */
export function file(source: Uint8Array | string, mediaType?: string, filename?: string): FilePart {
  return binary("file", source, mediaType, filename) as FilePart;
}

function binary(kind: string, source: Uint8Array | string, mediaType: string | undefined, filename: string | undefined): Part {
  const part: Record<string, any> = { type: kind };
  if (source instanceof Uint8Array) part.data = Buffer.from(source).toString("base64");
  else if (typeof source === "string" && URL_SCHEMES.some((s) => source.startsWith(s))) {
    part.url = source;
    mediaType ??= BY_SUFFIX[extname(source.split("?")[0]!).toLowerCase()];
  } else if (typeof source === "string") {
    let raw: Buffer;
    try {
      raw = readFileSync(source);
    } catch (error) {
      throw new InputError(`${kind}(${JSON.stringify(source)}): cannot read the file: ${(error as Error).message}`);
    }
    part.data = raw.toString("base64");
    mediaType ??= BY_SUFFIX[extname(source).toLowerCase()];
    if (kind === "file") filename ??= basename(source);
  } else throw new InputError(`${kind}(): expected bytes, a path or a URL, got ${typeof source}`);
  if (mediaType !== undefined) part.media_type = mediaType;
  if (filename !== undefined) part.filename = filename;
  return checkPart(part, `${kind}()`) as Part;
}

/** `value` checked: a string as it is, a list of parts as a fresh list of valid parts. */
export function checkInput(value: unknown, where = "run()"): Input {
  if (typeof value === "string") return value;
  if (!Array.isArray(value))
    throw new InputError(`${where}: the input must be a string or a list of parts, got ${kindOf(value)}`);
  if (!value.length) throw new InputError(`${where}: the list of parts is empty`);
  return value.map((part, i) => checkPart(part, `${where}: part ${i + 1}`) as Part);
}

export function checkPart(part: unknown, where: string): Record<string, any> {
  if (!part || typeof part !== "object" || Array.isArray(part))
    throw new InputError(`${where}: expected a part (a dict with 'type'), got ${kindOf(part)}`);
  const p = part as Record<string, any>;
  if (p.type === "text") {
    if (typeof p.text !== "string") throw new InputError(`${where} (text): 'text' must be a string`);
    noExtra(p, ["type", "text"], `${where} (text)`);
    return { type: "text", text: p.text };
  }
  if (p.type === "image" || p.type === "file") return checkBinary(p, p.type, `${where} (${p.type})`);
  throw new InputError(`${where}: unknown part type ${pyRepr(p.type)} (expected 'text', 'image' or 'file')`);
}

function checkBinary(p: Record<string, any>, kind: string, where: string): Record<string, any> {
  noExtra(p, ["type", "data", "url", "media_type", ...(kind === "file" ? ["filename"] : [])], where);
  const hasData = "data" in p;
  if (hasData === "url" in p) throw new InputError(`${where}: give exactly one of 'data' (base64) and 'url'`);
  const out: Record<string, any> = { type: kind };
  if (hasData) out.data = checkBase64(p.data, where);
  else {
    if (typeof p.url !== "string" || !URL_SCHEMES.some((s) => p.url.startsWith(s)))
      throw new InputError(`${where}: 'url' must be an http(s):// or gs:// URL, got ${pyRepr(p.url)}`);
    out.url = p.url;
  }
  const mediaType = p.media_type;
  if (mediaType == null && hasData) throw new InputError(`${where}: 'media_type' is missing (needed with 'data')`);
  if (mediaType != null) {
    const supported = MEDIA_TYPES[kind]!;
    if (!supported.includes(mediaType))
      throw new InputError(`${where}: unsupported media type ${pyRepr(mediaType)} (supported: ${supported.join(", ")})`);
    out.media_type = mediaType;
  }
  if ("filename" in p) {
    if (typeof p.filename !== "string" || !p.filename) throw new InputError(`${where}: 'filename' must be a non-empty string`);
    out.filename = p.filename;
  }
  return out;
}

function checkBase64(data: unknown, where: string): string {
  if (typeof data !== "string") throw new InputError(`${where}: 'data' must be a base64 string, got ${kindOf(data)}`);
  const size = Math.floor(data.length / 4) * 3;
  if (size > MAX_PART_BYTES + 2) throw new InputError(`${where}: ${tooLarge(size)}`);
  if (!BASE64.test(data)) throw new InputError(`${where}: 'data' is not valid base64`);
  const decoded = size - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0);
  if (decoded > MAX_PART_BYTES) throw new InputError(`${where}: ${tooLarge(decoded)}`);
  return data;
}

const tooLarge = (size: number) => `the data is ${size} bytes, past the limit of ${MAX_PART_BYTES} bytes (MAX_PART_BYTES)`;

function noExtra(p: Record<string, any>, allowed: string[], where: string): void {
  const extra = Object.keys(p).filter((k) => !allowed.includes(k)).sort();
  if (extra.length) throw new InputError(`${where}: unknown key(s) ${extra.map(pyRepr).join(", ")}`);
}

/** A value as Python's repr writes a string (how the Python runtime's messages quote). */
const pyRepr = (value: unknown): string => (typeof value === "string" ? `'${value}'` : value == null ? "None" : String(value));

const kindOf = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "list" : typeof value === "object" ? "dict" : typeof value === "string" ? "str" : typeof value;

/** A tool's result with images for the model to see (`toolParts`). */
export class ToolParts {
  constructor(
    readonly result: unknown,
    readonly parts: Record<string, any>[],
  ) {}
}

/** What a tool returns to show the model images along with its `result` (checked against the
 * tool's declared return type as usual); `images` are image parts, checked here. */
export function toolParts(result: unknown, ...images: ImagePart[]): ToolParts {
  const checked = images.map((part, i) => {
    const where = `tool_parts(): part ${i + 1}`;
    if (!part || typeof part !== "object" || (part as any).type !== "image") throw new InputError(`${where}: a tool returns image parts only`);
    return checkPart(part, where);
  });
  if (!checked.length) throw new InputError("tool_parts(): give at least one image part");
  return new ToolParts(result, checked);
}

/** The text of an input: the string, or the text parts joined by blank lines. */
export function inputText(value: Input): string {
  if (typeof value === "string") return value;
  return value.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n\n");
}

/** How an error names a part: `part 2 (file, url https://x/a.pdf)`. */
export function describePart(index: number, part: Record<string, any>): string {
  const how = "url" in part ? `url ${part.url}` : String(part.media_type ?? "data");
  return `part ${index + 1} (${part.type}, ${how})`;
}

export function refuse(index: number, part: Record<string, any>, why: string): UnsupportedPart {
  return new UnsupportedPart(`${describePart(index, part)} cannot be sent: ${why}`);
}

/** `build()`, with a part the API cannot take reported as the provider's error (before sending). */
export function buildOrRefuse<T>(provider: string, build: () => T): T {
  try {
    return build();
  } catch (error) {
    if (error instanceof UnsupportedPart) throw new ProviderError(provider, error.message);
    throw error;
  }
}

export const dataUrl = (part: Record<string, any>): string => `data:${part.media_type};base64,${part.data}`;
