// HTTP plumbing shared by the adapters: retries with backoff (429 honouring Retry-After, 5xx,
// connection errors, a body cut before its first event), timeouts (first byte,
// idle between body pieces, the whole call), size caps (one event, one response), SSE and
// whole JSON bodies read by one body reader, provider error messages. Only the platform's
// fetch. The rules and the error wording are the Python runtime's
// (src/auwgent/runtime/providers/http.py).

import { ProviderError } from "../errors.js";
import { pyRepr } from "../values.js";

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
  /** The one timer of the call's waits for the network (see Watchdog). */
  watch: Watchdog;
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

/** What a provider's calls share: the config's retry policy, timeouts and size caps. */
export type HttpConfig = Pick<HttpSettings, "retry" | "timeouts" | "limits">;

/** The settings of a new call (its deadline starts now). */
export function callSettings(http: HttpConfig, provider: string, secret: string | null, whole = false): HttpSettings {
  return { retry: http.retry, timeouts: http.timeouts, limits: http.limits, provider, secret, whole, watch: new Watchdog(), deadline: performance.now() + http.timeouts.call * 1000 };
}

/**
 * Stops the wait for the network under way (by calling its `stop`) when it lasts longer than
 * its limit. One per call, for the response headers of every attempt and every piece of the
 * body: a timer per wait (or one pushed back per read) costs more than the parsing; this one
 * is re-armed by writing a time, and reschedules itself only when it fires early. It is armed
 * only while the call waits for the network, never while the consumer of the stream runs.
 */
export class Watchdog {
  private due = 0; // performance.now() milliseconds
  private stop: (() => void) | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private at = 0; // when the timer fires
  /** Whether the last wait was stopped by this watchdog. */
  fired = false;

  arm(ms: number, stop: () => void): void {
    this.due = performance.now() + ms;
    this.stop = stop;
    this.fired = false;
    if (this.timer !== null && this.at > this.due + 1) this.close(); // a shorter limit than the timer waits for
    if (this.timer === null) this.schedule(ms);
  }

  disarm(): void {
    this.stop = null;
  }

  /** The end of the call: no timer left behind. */
  close(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(ms: number): void {
    this.at = this.due;
    this.timer = setTimeout(this.check, ms);
    this.timer.unref?.(); // a call still waiting keeps the process alive by its socket
  }

  private check = (): void => {
    this.timer = null;
    const stop = this.stop;
    if (stop === null) return;
    const left = this.due - performance.now();
    if (left > 0) return this.schedule(left);
    this.stop = null;
    this.fired = true;
    stop();
  };
}

/** A number as Python's `{x:g}` writes it in messages (6 significant digits, no trailing zeros). */
function g(x: number): string {
  return String(Number(x.toPrecision(6)));
}

/** The connection broke off before the body was complete: retried when nothing of the
 * response was produced yet (retryUnstarted). */
export class StreamInterrupted extends ProviderError {}

function pastDeadline(s: HttpSettings): ProviderError {
  return new ProviderError(s.provider, `the call took longer than ${g(s.timeouts.call)}s (timeouts.call)`);
}

/** `failure` as the final error of a call that made `attempts` tries (unchanged after one
 * attempt with nothing more to say, as in Python). */
function gaveUp(failure: ProviderError, attempts: number, why = ""): ProviderError {
  if (attempts === 1 && !why) return failure;
  return new ProviderError(failure.provider, `${failure.providerMessage} (gave up after ${attempts} attempts${why})`, failure.status, true);
}

/** Why a retry after `delay` seconds is not made, or "" when it fits the call's deadline. */
function noTimeFor(s: HttpSettings, delay: number): string {
  return performance.now() + delay * 1000 < s.deadline ? "" : `: the next would pass the deadline of ${g(s.timeouts.call)}s (timeouts.call)`;
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

/** `text` with every whole occurrence of the API key replaced by `***`, as the Python runtime:
 * only keys of 8 or more characters are looked for (a short test key such as "k" would mangle
 * every word it occurs in), and only where the key stands alone, not inside a longer run of
 * key characters. */
function redact(text: string, secret: string | null): string {
  if (!secret || [...secret].length < 8 || !text.includes(secret)) return text;
  const key = secret.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return text.replace(new RegExp(`(?<![A-Za-z0-9_\\-])${key}(?![A-Za-z0-9_\\-])`, "g"), "***");
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
  return status === 429 || status >= 500; // as the Python runtime
}

/** POST `body` as JSON; retried as the policy says. Returns a response with a 2xx status. */
export async function post(url: string, body: unknown, headers: Record<string, string>, s: HttpSettings): Promise<Response> {
  const data = JSON.stringify(body);
  const init: RequestInit & { window: null } = {
    method: "POST",
    body: data,
    headers: { "content-type": "application/json", ...headers },
    // Redirects are not followed (as the Python runtime); asking fetch to refuse them also
    // spares it a copy of the request (body included) kept for following one.
    redirect: "error",
    window: null,
  };
  const watch = s.watch;
  // The wait for the headers (connecting included) is bounded by firstByte, as in Python.
  const limit = s.whole ? Infinity : s.timeouts.firstByte * 1000;
  for (let attempt = 1; ; attempt++) {
    const left = s.deadline - performance.now();
    if (left <= 0) throw pastDeadline(s);
    const controller = new AbortController();
    const late = left < limit;
    init.signal = controller.signal;
    watch.arm(late ? left : limit, () => controller.abort());
    let failure: ProviderError;
    let after: number | null = null;
    try {
      const response = await fetch(url, init);
      watch.disarm();
      if (response.ok) return response;
      const text = await response.text().catch(() => "");
      let message: string;
      try {
        message = messageIn(JSON.parse(text), response.statusText || "request failed");
      } catch {
        message = text.slice(0, 300).trim() || response.statusText || "request failed";
      }
      failure = new ProviderError(s.provider, redact(message, s.secret), response.status, retryable(response.status));
      after = retryAfter(response.headers) ?? retryInfoDelay(text);
      if (!failure.retryable) throw failure;
    } catch (error) {
      watch.disarm();
      if (error instanceof ProviderError) {
        watch.close();
        throw error;
      }
      if (watch.fired && late) {
        watch.close();
        throw pastDeadline(s);
      }
      if ((error as any)?.cause?.message === "unexpected redirect") {
        watch.close();
        throw new ProviderError(s.provider, "the server answered with a redirect (redirects are not followed)");
      }
      const what = watch.fired ? "request failed (ReadTimeout: no response before the first-byte timeout)" : `request failed (${redact(transportDetail(error), s.secret)})`;
      failure = new ProviderError(s.provider, what, null, true);
    }
    if (attempt >= s.retry.attempts) {
      watch.close();
      throw gaveUp(failure, attempt);
    }
    const delay = delayFor(s.retry, attempt, after);
    const why = noTimeFor(s, delay);
    if (why) {
      watch.close();
      throw gaveUp(failure, attempt, why);
    }
    await sleep(delay);
  }
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

/**
 * The body of a response, read piece by piece within the bounds of its call: `read()` fails
 * on silence longer than `idle` (the first piece may take up to `firstByte` instead, at least
 * `idle`: a model that thinks before it answers sends its headers at once and its first data
 * much later), at the call's deadline, when the body passes `limits.responseBytes`, and, as a
 * StreamInterrupted, when the connection breaks off.
 */
class Body {
  private reader: ReadableStreamDefaultReader<Uint8Array>;
  private limit: number;
  private left: number;
  private ended = false;
  private readonly stop = () => void this.reader.cancel().catch(() => undefined);

  constructor(
    response: Response,
    private s: HttpSettings,
  ) {
    this.reader = response.body!.getReader();
    this.limit = Math.max(s.timeouts.firstByte, s.timeouts.idle) * 1000;
    this.left = s.limits.responseBytes;
  }

  /** The next piece, or null at the end of the body. */
  async read(): Promise<Uint8Array | null> {
    const s = this.s;
    const limit = this.limit;
    const remaining = s.deadline - performance.now();
    if (remaining <= 0) throw pastDeadline(s);
    const atDeadline = remaining < limit;
    const watch = s.watch;
    watch.arm(atDeadline ? remaining : limit, this.stop);
    let chunk: ReadableStreamReadResult<Uint8Array>;
    try {
      chunk = await this.reader.read();
    } catch (error) {
      if (!watch.fired) throw new StreamInterrupted(s.provider, `stream interrupted (${describe(error)})`);
      chunk = { done: true, value: undefined };
    } finally {
      watch.disarm();
      this.limit = s.timeouts.idle * 1000;
    }
    if (watch.fired) {
      if (atDeadline) throw pastDeadline(s);
      throw new ProviderError(s.provider, `stream stalled: no data for ${g(limit / 1000)}s (idle timeout)`);
    }
    if (chunk.done) {
      this.ended = true;
      return null;
    }
    if ((this.left -= chunk.value.byteLength) < 0) throw tooLarge(s, "the response", s.limits.responseBytes, "limits.responseBytes");
    return chunk.value;
  }

  /** The end of the body: the call's timer and the reader let go, and a body left before its
   * end (a size cap, a bad event, a consumer that stopped) cancelled, which frees its
   * connection. */
  close(): void {
    this.s.watch.close();
    if (!this.ended) this.stop();
    this.reader.releaseLock();
  }
}

/** An error of fetch as `Name: message (cause)`. */
function describe(error: unknown): string {
  const e = error as any;
  const cause = e?.cause?.message ? `: ${e.cause.message}` : "";
  return `${e?.name ?? "Error"}: ${e?.message ?? String(error)}${cause}`;
}

/**
 * The `data:` payloads of a server-sent event stream, in order, those of one network read
 * together (every layer of async generators costs a resumption per item). Comments, other
 * fields and keep-alives are skipped; multi-line data is joined with newlines. An event larger
 * than `limits.eventBytes` ends the call; so does a body that ends before its first complete
 * event, as a StreamInterrupted (whatever the framing, a cut connection looks like that), so
 * that the call is retried.
 */
export async function* sse(response: Response, s: HttpSettings): AsyncGenerator<string[]> {
  const body = new Body(response, s);
  const decoder = new TextDecoder();
  let buffer = "";
  let data: string[] = [];
  let started = false;
  // At most the bytes of the current event's data lines: counted exactly (a UTF-8 count) only
  // when the bound passes the cap.
  let size = 0;
  const cap = s.limits.eventBytes;
  // The event's data lines as received ("data: " included, about a byte each way).
  const exact = () => (data.length ? Buffer.byteLength(data.join("\n")) + 6 * data.length : 0);
  try {
    let piece: Uint8Array | null;
    while ((piece = await body.read()) !== null) {
      buffer += decoder.decode(piece, { stream: true });
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
      if (out.length) {
        started = true;
        yield out;
      }
    }
  } finally {
    body.close();
  }
  // The last event without its blank line: kept, as servers that end abruptly after a
  // complete last line are common.
  const last = (buffer + decoder.decode()).trim();
  if (last.startsWith("data:")) data.push(last.slice(last.startsWith("data: ") ? 6 : 5));
  if (!started) throw new StreamInterrupted(s.provider, "the stream ended before its first event");
  if (data.length) yield [data.join("\n")];
}

/** Whether a streamed request's answer is really an event stream: any content type without
 * "json" in it, as the Python runtime decides (a gateway may answer plain JSON). */
export function isEventStream(response: Response): boolean {
  return !(response.headers.get("content-type") ?? "").includes("json");
}

/** One JSON document from the provider (an event's data, a whole body), or a ProviderError. */
export function parseChunk(text: string, provider: string): any {
  try {
    return JSON.parse(text);
  } catch {
    throw malformed(text, provider);
  }
}

function malformed(text: string, provider: string): ProviderError {
  return new ProviderError(provider, `malformed JSON from the API: ${pyRepr(text.slice(0, 120))}`);
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A whole (non-streaming) JSON body, read within the call's bounds (see Body). A body
 * delimited by the closing of the connection (no length, not chunked) that does not parse may
 * have been cut: that is a StreamInterrupted, so that it is retried.
 */
export async function readJson(response: Response, s: HttpSettings): Promise<any> {
  const pieces: Uint8Array[] = [];
  if (response.body !== null) {
    const body = new Body(response, s);
    try {
      let piece: Uint8Array | null;
      while ((piece = await body.read()) !== null) pieces.push(piece);
    } finally {
      body.close();
    }
  } else s.watch.close();
  const bytes = pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces);
  let failure: ProviderError;
  try {
    return JSON.parse(UTF8.decode(bytes));
  } catch {
    // The excerpt as Python's: the first 120 bytes, undecodable ones replaced.
    failure = malformed(Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.byteLength, 120)).toString("utf8"), s.provider);
  }
  const headers = response.headers;
  if (headers.has("content-length") || (headers.get("transfer-encoding") ?? "").includes("chunked")) throw failure;
  throw new StreamInterrupted(s.provider, `the response ended before its JSON was complete (${failure.providerMessage})`);
}

/**
 * The items of `once` (which yields them in batches), run again when its connection breaks off
 * (StreamInterrupted) before it produced an item: wait as for a failed connection and call it
 * again, up to `retry.attempts` calls within the call's deadline. Once an item is out, errors
 * pass through unchanged (the caller may already have acted on it); so do other failures
 * (post has retried them). An iterator rather than an async generator: it hands out the items
 * of a batch without one more resumption per item.
 */
export function retryUnstarted<T>(once: () => AsyncGenerator<T[]>, s: HttpSettings): AsyncIterableIterator<T> {
  return new RetryUnstarted(once, s);
}

class RetryUnstarted<T> implements AsyncIterableIterator<T> {
  private current: AsyncGenerator<T[]> | null = null;
  private batch: T[] = [];
  private at = 0;
  private started = false;

  constructor(
    private once: () => AsyncGenerator<T[]>,
    private s: HttpSettings,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<T>> {
    if (this.at < this.batch.length) return Promise.resolve({ value: this.batch[this.at++]!, done: false });
    return this.pull();
  }

  private async pull(): Promise<IteratorResult<T>> {
    if (!this.started) return this.first();
    for (;;) {
      const step = await this.current!.next();
      if (step.done) return { value: undefined, done: true };
      if (step.value.length) return this.hand(step.value);
    }
  }

  private hand(batch: T[]): IteratorResult<T> {
    this.started = true;
    this.batch = batch;
    this.at = 1;
    return { value: batch[0]!, done: false };
  }

  private async first(): Promise<IteratorResult<T>> {
    const retry = this.s.retry;
    for (let attempt = 1; ; attempt++) {
      this.current = this.once();
      try {
        for (;;) {
          const step = await this.current.next();
          if (step.done) return { value: undefined, done: true };
          if (step.value.length) return this.hand(step.value);
        }
      } catch (failure) {
        if (!(failure instanceof StreamInterrupted)) throw failure;
        if (attempt >= retry.attempts) throw gaveUp(failure, attempt);
        const delay = delayFor(retry, attempt, null);
        const why = noTimeFor(this.s, delay);
        if (why) throw gaveUp(failure, attempt, why);
        await sleep(delay);
      }
    }
  }

  /** Closes the attempt under way (as leaving a `for await` closes a generator). */
  async return(): Promise<IteratorResult<T>> {
    this.batch = [];
    await this.current?.return(undefined);
    return { value: undefined, done: true };
  }
}

/** A transport failure in the words of the Python runtime: `ConnectError: <cause>` when no
 * connection was made (refused, unknown host), else the failure's own name. */
function transportDetail(error: unknown): string {
  const cause = (error as any)?.cause ?? error;
  const message = String(cause?.message ?? cause);
  const code = String(cause?.code ?? "");
  const connect = /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|UND_ERR_CONNECT_TIMEOUT)$/.test(code);
  return `${connect ? "ConnectError" : String(cause?.name ?? "TransportError")}: ${message}`;
}
