// HTTP plumbing shared by the adapters: retries with backoff (429 honouring Retry-After, 5xx,
// connection errors, a body cut before its first event), timeouts (connect + first byte,
// idle stream, the whole call), size caps (one event, one response), SSE reading, provider
// error messages. Only the platform's fetch.

import { ProviderError } from "../errors.js";

export interface RetryPolicy {
  attempts: number;
  baseDelay: number; // seconds
  maxDelay: number;
}
export interface Timeouts {
  connect: number; // seconds
  firstByte: number;
  idle: number;
  /** The deadline of one model call, retries and their waits included. */
  call: number;
}
/** Size caps, in bytes, on what a provider may send back: one server-sent event (or one line
 * still arriving), one response body. */
export interface Limits {
  eventBytes: number;
  responseBytes: number;
}
export const DEFAULT_RETRY: RetryPolicy = { attempts: 4, baseDelay: 0.5, maxDelay: 20 };
export const DEFAULT_TIMEOUTS: Timeouts = { connect: 10, firstByte: 25, idle: 30, call: 300 };
export const DEFAULT_LIMITS: Limits = { eventBytes: 16 * 1024 * 1024, responseBytes: 64 * 1024 * 1024 };

/** One provider call across all its attempts: who answers, how to retry, its bounds. */
export interface HttpSettings {
  provider: string;
  retry: RetryPolicy;
  timeouts: Timeouts;
  limits: Limits;
  secret: string | null;
  /** When the call must be over (performance.now() milliseconds). */
  deadline: number;
  /** A model call answered in one piece (not streamed): the server sends its headers only
   * once the whole answer is written, so `firstByte` does not bound that wait; the call's
   * deadline does (as the Python runtime). */
  whole: boolean;
}

/** The settings of a new call (its deadline starts now). */
export function callSettings(http: Omit<HttpSettings, "provider" | "secret" | "deadline" | "whole">, provider: string, secret: string | null, whole = false): HttpSettings {
  return { retry: http.retry, timeouts: http.timeouts, limits: http.limits, provider, secret, whole, deadline: performance.now() + http.timeouts.call * 1000 };
}

function pastDeadline(s: HttpSettings): ProviderError {
  return new ProviderError(s.provider, `the call took longer than ${s.timeouts.call}s (timeouts.call)`);
}

function tooLarge(s: HttpSettings, what: string, limit: number, key: string): ProviderError {
  return new ProviderError(s.provider, `${what} is larger than the limit of ${limit} bytes (${key})`);
}

/** The UTF-8 size of `text` when it may pass `cap` (a string's length bounds its size within
 * a factor of three, so most checks need no counting). */
function overCap(text: string, cap: number): boolean {
  if (text.length > cap) return true;
  if (!text.length) return false;
  return text.length * 3 > cap && Buffer.byteLength(text) > cap;
}

function redact(text: string, secret: string | null): string {
  return secret ? text.split(secret).join("[redacted]") : text;
}

export function messageIn(payload: any, fallback: string): string {
  if (Array.isArray(payload) && payload.length) payload = payload[0];
  const error = payload && typeof payload === "object" ? payload.error : undefined;
  if (error && typeof error === "object") {
    const { message, status } = error;
    if (typeof message === "string" && message) return typeof status === "string" && status ? `${message} [${status}]` : message;
  }
  if (typeof error === "string" && error) return error;
  for (const key of ["message", "detail"]) {
    const value = payload && typeof payload === "object" ? payload[key] : undefined;
    if (typeof value === "string" && value) return value;
  }
  return fallback;
}

export function errorInBody(payload: any, provider: string): ProviderError | null {
  if (!payload || typeof payload !== "object" || Array.isArray(payload) || !("error" in payload)) return null;
  const code = payload.error && typeof payload.error === "object" ? payload.error.code : undefined;
  return new ProviderError(provider, messageIn(payload, "error event in the response"), typeof code === "number" ? code : null);
}

function retryAfter(headers: Headers): number | null {
  const ms = headers.get("retry-after-ms");
  if (ms !== null && !Number.isNaN(Number(ms))) return Math.max(0, Number(ms) / 1000);
  const value = headers.get("retry-after");
  if (value === null || !value.trim()) return null;
  if (!Number.isNaN(Number(value))) return Math.max(0, Number(value));
  const when = Date.parse(value);
  return Number.isNaN(when) ? null : Math.max(0, (when - Date.now()) / 1000);
}

function delayFor(policy: RetryPolicy, retry: number, after: number | null): number {
  if (after !== null) return Math.min(after, policy.maxDelay);
  return Math.random() * Math.min(policy.maxDelay, policy.baseDelay * 2 ** (retry - 1));
}

const sleep = (seconds: number) => new Promise((r) => setTimeout(r, seconds * 1000));

function retryable(status: number): boolean {
  return status === 429 || status === 408 || status >= 500;
}

/** POST `body` as JSON; retried as the policy says. Returns a response with a 2xx status. */
export async function post(url: string, body: unknown, headers: Record<string, string>, s: HttpSettings): Promise<Response> {
  const data = JSON.stringify(body);
  let lastError: ProviderError | null = null;
  for (let attempt = 1; attempt <= s.retry.attempts; attempt++) {
    if (attempt > 1) {
      const delay = delayFor(s.retry, attempt - 1, lastError && (lastError as any).after !== undefined ? (lastError as any).after : null);
      if (performance.now() + delay * 1000 >= s.deadline) throw pastDeadline(s);
      await sleep(delay);
    }
    const left = s.deadline - performance.now();
    if (left <= 0) throw pastDeadline(s);
    const controller = new AbortController();
    const limit = s.whole ? Infinity : (s.timeouts.connect + s.timeouts.firstByte) * 1000;
    const late = left < limit;
    const timer = setTimeout(() => controller.abort(), late ? left : limit);
    let response: Response;
    try {
      // Redirects are not followed (as the Python runtime); asking fetch to refuse them also
      // spares it a copy of the request (body included) kept for following one.
      response = await fetch(url, { method: "POST", body: data, headers: { "content-type": "application/json", ...headers }, signal: controller.signal, redirect: "error", window: null });
    } catch (error) {
      clearTimeout(timer);
      if (controller.signal.aborted && late) throw pastDeadline(s);
      if ((error as any)?.cause?.message === "unexpected redirect") throw new ProviderError(s.provider, "the server answered with a redirect (redirects are not followed)");
      const what = controller.signal.aborted ? `no response within ${limit / 1000} s` : `connection failed: ${redact(String((error as any)?.cause?.message ?? error), s.secret)}`;
      lastError = new ProviderError(s.provider, what, null, true);
      continue;
    }
    clearTimeout(timer);
    if (response.ok) return response;
    const text = await response.text().catch(() => "");
    let message: string;
    try {
      message = messageIn(JSON.parse(text), response.statusText || "request failed");
    } catch {
      message = text.slice(0, 300).trim() || response.statusText || "request failed";
    }
    const error = new ProviderError(s.provider, redact(message, s.secret), response.status, retryable(response.status));
    (error as any).after = retryAfter(response.headers) ?? retryInfoDelay(text);
    if (!error.retryable) throw error;
    lastError = error;
  }
  throw lastError ?? new ProviderError(s.provider, "request failed");
}

/**
 * The wait in a Google `google.rpc.RetryInfo` error detail (`"retryDelay": "34.4s"`): Gemini
 * answers 429 with this in the body and no Retry-After header; it is honoured the same way.
 */
export function retryInfoDelay(body: string): number | null {
  if (!body.includes("RetryInfo")) return null;
  let payload: any;
  try {
    payload = JSON.parse(body);
  } catch {
    return null;
  }
  if (Array.isArray(payload) && payload.length) payload = payload[0];
  const details = payload?.error?.details;
  for (const detail of Array.isArray(details) ? details : []) {
    if (detail && typeof detail === "object" && String(detail["@type"] ?? "").endsWith("RetryInfo")) {
      const delay = detail.retryDelay;
      if (typeof delay === "string" && delay.endsWith("s")) {
        const seconds = Number(delay.slice(0, -1));
        return Number.isFinite(seconds) && delay.length > 1 ? Math.max(0, seconds) : null;
      }
    }
  }
  return null;
}

/** The `data:` payloads of a server-sent event stream, in order, those of one network read
 * together (every layer of async generators costs a resumption per item). */
export async function* sse(response: Response, s: HttpSettings): AsyncGenerator<string[]> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let data: string[] = [];
  // At most the bytes of the current event's data lines: counted exactly (a UTF-8 count) only
  // when the bound passes the cap.
  let size = 0;
  let left = s.limits.responseBytes;
  const cap = s.limits.eventBytes;
  // One timer for the whole stream, pushed back after every read: a stall cancels the read.
  // A second one ends the stream at the call's deadline.
  let stopped: "stalled" | "late" | null = null;
  const stop = (why: "stalled" | "late") => {
    stopped ??= why;
    reader.cancel().catch(() => undefined);
  };
  // The event's data lines as received ("data: " included, about a byte each way).
  const exact = () => (data.length ? Buffer.byteLength(data.join("\n")) + 6 * data.length : 0);
  const timer = setTimeout(() => stop("stalled"), s.timeouts.idle * 1000);
  const deadline = setTimeout(() => stop("late"), Math.max(0, s.deadline - performance.now()));
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        if (stopped) break;
        throw new ProviderError(s.provider, `the stream broke off: ${String((error as any)?.message ?? error)}`, null, true);
      }
      if (stopped || chunk.done) break;
      timer.refresh();
      left -= chunk.value.byteLength;
      if (left < 0) throw tooLarge(s, "the response", s.limits.responseBytes, "limits.responseBytes");
      buffer += decoder.decode(chunk.value, { stream: true });
      const out: string[] = [];
      let nl: number;
      let from = 0;
      while ((nl = buffer.indexOf("\n", from)) >= 0) {
        let line = buffer.slice(from, nl);
        from = nl + 1;
        if (line.endsWith("\r")) line = line.slice(0, -1);
        if (line === "") {
          if (data.length) out.push(data.length === 1 ? data[0]! : data.join("\n"));
          data = [];
          size = 0;
        } else if (line.startsWith("data:")) {
          size += line.length * 3 + 1;
          data.push(line.slice(line.startsWith("data: ") ? 6 : 5));
          if (size > cap && (size = exact()) > cap) throw tooLarge(s, "an event of the stream", cap, "limits.eventBytes");
        }
      }
      buffer = from ? buffer.slice(from) : buffer;
      // The start of a line still arriving counts too.
      if (overCap(buffer, cap - size) && overCap(buffer, cap - (size = exact()))) throw tooLarge(s, "an event of the stream", cap, "limits.eventBytes");
      if (out.length) yield out;
    }
    if (stopped === "late") throw pastDeadline(s);
    if (stopped === "stalled") throw new ProviderError(s.provider, `the stream stalled for more than ${s.timeouts.idle} s`);
    if (data.length) yield [data.join("\n")];
  } finally {
    clearTimeout(timer);
    clearTimeout(deadline);
    reader.releaseLock();
  }
}

export function isEventStream(response: Response): boolean {
  return (response.headers.get("content-type") ?? "").includes("text/event-stream");
}

export function parseChunk(text: string, provider: string): any {
  try {
    return JSON.parse(text);
  } catch {
    throw new ProviderError(provider, `malformed event in the stream: ${text.slice(0, 80)}`);
  }
}

/** A whole (non-streaming) JSON body, read within the call's size cap and deadline. */
export async function readJson(response: Response, s: HttpSettings): Promise<any> {
  if (response.body === null) throw new ProviderError(s.provider, "the response is not JSON");
  const reader = response.body.getReader();
  const pieces: Uint8Array[] = [];
  let size = 0;
  let late = false;
  const deadline = setTimeout(() => {
    late = true;
    reader.cancel().catch(() => undefined);
  }, Math.max(0, s.deadline - performance.now()));
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        if (late) break;
        throw new ProviderError(s.provider, `the response broke off: ${String((error as any)?.message ?? error)}`, null, true);
      }
      if (late || chunk.done) break;
      size += chunk.value.byteLength;
      if (size > s.limits.responseBytes) throw tooLarge(s, "the response", s.limits.responseBytes, "limits.responseBytes");
      pieces.push(chunk.value);
    }
  } finally {
    clearTimeout(deadline);
    reader.releaseLock();
  }
  if (late) throw pastDeadline(s);
  try {
    return JSON.parse(Buffer.concat(pieces).toString("utf8"));
  } catch {
    throw new ProviderError(s.provider, "the response is not JSON");
  }
}

/**
 * The items of `once` (which yields them in batches), run again when it fails before
 * producing its first item with a retryable error (a connection dropped right after the
 * headers); once an item is out, nothing is retried.
 */
export async function* retryUnstarted<T>(once: () => AsyncGenerator<T[]>, s: HttpSettings): AsyncGenerator<T> {
  const retry = s.retry;
  for (let attempt = 1; ; attempt++) {
    let started = false;
    try {
      for await (const items of once())
        for (const item of items) {
          started = true;
          yield item;
        }
      return;
    } catch (error) {
      if (started || attempt >= retry.attempts || !(error instanceof ProviderError) || !error.retryable) throw error;
      const delay = delayFor(retry, attempt, null);
      if (performance.now() + delay * 1000 >= s.deadline) throw pastDeadline(s);
      await sleep(delay);
    }
  }
}
