// HTTP plumbing shared by the adapters: retries with backoff (429 honouring Retry-After, 5xx,
// connection errors, a body cut before its first event), timeouts (first byte,
// idle between body pieces, the whole call), size caps (one event, one response), SSE and
// whole JSON bodies read by one body reader, provider error messages. Only the platform's
// fetch. The rules and the error wording are the Python runtime's
// (src/auwgent/runtime/providers/http.py).

import { AuwgentError, ProviderError } from "../errors.js";
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
  /** What stops the call's waits for the network (see Watchdog). */
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
  /** The config's `httpClient.fetch` (a cassette, say); null: the platform's `fetch`. */
  fetch: FetchLike | null;
}

/** What `fetch` is to the runtime: `httpClient` in the runtime config supplies one. */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

/** What a provider's calls share: the config's retry policy, timeouts, size caps and client. */
export type HttpConfig = Pick<HttpSettings, "retry" | "timeouts" | "limits"> & { fetch?: FetchLike | null };

/** The settings of a new call (its deadline starts now). */
export function callSettings(http: HttpConfig, provider: string, secret: string | null, whole = false): HttpSettings {
  return { retry: http.retry, timeouts: http.timeouts, limits: http.limits, fetch: http.fetch ?? null, provider, secret, whole, watch: new Watchdog(), deadline: performance.now() + http.timeouts.call * 1000 };
}

/**
 * Stops the wait for the network under way (by calling its `stop`) when it lasts longer than
 * its limit. One per call, for the response headers of every attempt and every piece of the
 * body, armed by writing a time: a timer per wait (or one pushed back per read) costs more
 * than the parsing. It is armed only while the call waits for the network, never while the
 * consumer of the stream runs. The watchdogs of all calls share one timer (Clock).
 */
export class Watchdog {
  /** When the wait under way must end (performance.now() milliseconds). */
  due = 0;
  private stop: (() => void) | null = null;
  /** Whether the last wait was stopped by this watchdog. */
  fired = false;

  arm(ms: number, stop: () => void): void {
    this.due = performance.now() + ms;
    this.stop = stop;
    this.fired = false;
    clock.watch(this);
  }

  disarm(): void {
    this.stop = null;
    clock.forget(this);
  }

  /** The clock's check: past its time, the wait is stopped. */
  check(now: number): boolean {
    const stop = this.stop;
    if (stop === null) return true;
    if (this.due > now) return false;
    this.stop = null;
    this.fired = true;
    stop();
    return true;
  }
}

/**
 * The one timer of the armed watchdogs, due at the earliest of their times: arming one whose
 * time is not earlier than the timer's costs no timer (calls one after another reuse it), and
 * a timer that finds nothing due goes back to sleep until the next one. Unref'd: a call still
 * waiting keeps the process alive by its socket.
 */
class Clock {
  private armed = new Set<Watchdog>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private at = Infinity; // when the timer fires

  watch(dog: Watchdog): void {
    this.armed.add(dog);
    if (this.timer === null || this.at > dog.due + 1) this.schedule(dog.due);
  }

  forget(dog: Watchdog): void {
    this.armed.delete(dog);
  }

  private schedule(due: number): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.at = due;
    this.timer = setTimeout(this.tick, Math.max(0, due - performance.now()));
    this.timer.unref?.();
  }

  private readonly tick = (): void => {
    this.timer = null;
    this.at = Infinity;
    const now = performance.now();
    let next = Infinity;
    for (const dog of this.armed) {
      if (dog.check(now)) this.armed.delete(dog);
      else if (dog.due < next) next = dog.due;
    }
    if (next < Infinity) this.schedule(next);
  };
}

const clock = new Clock();

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
      const response = await (s.fetch === null ? fetch(url, init) : s.fetch(url, init));
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
      // The runtime's own errors pass as they are: a ProviderError, or an httpClient's refusal
      // (a cassette's CassetteMiss), which is no network failure to retry.
      if (error instanceof AuwgentError) throw error;
      if (watch.fired && late) throw pastDeadline(s);
      if ((error as any)?.cause?.message === "unexpected redirect")
        throw new ProviderError(s.provider, "the server answered with a redirect (redirects are not followed)");
      const what = watch.fired ? "request failed (ReadTimeout: no response before the first-byte timeout)" : `request failed (${redact(transportDetail(error), s.secret)})`;
      failure = new ProviderError(s.provider, what, null, true);
    }
    if (attempt >= s.retry.attempts) throw gaveUp(failure, attempt);
    const delay = delayFor(s.retry, attempt, after);
    const why = noTimeFor(s, delay);
    if (why) throw gaveUp(failure, attempt, why);
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
  /** The limit of the wait under way, and whether it is the call's deadline. */
  private waited = 0;
  private atDeadline = false;
  private readonly stop = () => void this.reader.cancel().catch(() => undefined);

  constructor(
    response: Response,
    private s: HttpSettings,
  ) {
    this.reader = response.body!.getReader();
    this.limit = Math.max(s.timeouts.firstByte, s.timeouts.idle) * 1000;
    this.left = s.limits.responseBytes;
  }

  /** The next piece, or null at the end of the body. (Not an async function: the piece comes
   * through one promise, the reader's own with its outcome read by `got` and `lost`.) */
  read(): Promise<Uint8Array | null> {
    const s = this.s;
    const remaining = s.deadline - performance.now();
    if (remaining <= 0) return Promise.reject(pastDeadline(s));
    this.waited = this.limit;
    this.atDeadline = remaining < this.limit;
    s.watch.arm(this.atDeadline ? remaining : this.limit, this.stop);
    return this.reader.read().then(this.got, this.lost);
  }

  private readonly got = (chunk: ReadableStreamReadResult<Uint8Array>): Uint8Array | null => {
    const s = this.s;
    this.waitOver();
    if (chunk.done) {
      this.ended = true;
      return null;
    }
    if ((this.left -= chunk.value.byteLength) < 0) throw tooLarge(s, "the response", s.limits.responseBytes, "limits.responseBytes");
    return chunk.value;
  };

  /** A read that failed: the connection broke off, unless the watchdog stopped the wait. */
  private readonly lost = (error: unknown): never => {
    this.waitOver();
    throw new StreamInterrupted(this.s.provider, `stream interrupted (${describe(error)})`);
  };

  /** The wait is over: the watchdog let go; a wait it stopped is the timeout's error. */
  private waitOver(): void {
    const s = this.s;
    s.watch.disarm();
    this.limit = s.timeouts.idle * 1000;
    if (!s.watch.fired) return;
    if (this.atDeadline) throw pastDeadline(s);
    throw new ProviderError(s.provider, `stream stalled: no data for ${g(this.waited / 1000)}s (idle timeout)`);
  }

  /** The end of the body: the watchdog let go, and a body left before its end (a size cap, a
   * bad event, a consumer that stopped) cancelled, which frees its connection. (The reader is
   * not released: releasing makes an error for its `closed` promise, and nothing reads the
   * body after it.) */
  close(): void {
    this.s.watch.disarm();
    if (!this.ended) this.stop();
  }
}

/** An error of fetch as `Name: message (cause)`. */
function describe(error: unknown): string {
  const e = error as any;
  const cause = e?.cause?.message ? `: ${e.cause.message}` : "";
  return `${e?.name ?? "Error"}: ${e?.message ?? String(error)}${cause}`;
}

/**
 * The framing of a server-sent event stream: `feed` takes the pieces of the body in order and
 * returns the `data:` payloads completed in each. Comments, other fields and keep-alives are
 * skipped; multi-line data is joined with newlines. An event larger than `limits.eventBytes`
 * ends the call; so does a body that ends before its first complete event (`end`), as a
 * StreamInterrupted (whatever the framing, a cut connection looks like that), so that the call
 * is retried.
 */
class EventLines {
  private decoder = new TextDecoder();
  private buffer = "";
  private data: string[] = [];
  private started = false;
  // At most the bytes of the current event's data lines: counted exactly (a UTF-8 count) only
  // when the bound passes the cap.
  private size = 0;
  private cap: number;

  constructor(private s: HttpSettings) {
    this.cap = s.limits.eventBytes;
  }

  /** The event's data lines as received ("data: " included, about a byte each way). */
  private exact(): number {
    const data = this.data;
    return data.length ? Buffer.byteLength(data.join("\n")) + 6 * data.length : 0;
  }

  feed(piece: Uint8Array): string[] {
    const cap = this.cap;
    const buffer = this.buffer + this.decoder.decode(piece, STREAM);
    const out: string[] = [];
    let nl: number;
    let from = 0;
    while ((nl = buffer.indexOf("\n", from)) >= 0) {
      let line = buffer.slice(from, nl);
      from = nl + 1;
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line === "") {
        const data = this.data;
        if (data.length) {
          out.push(data.length === 1 ? data[0]! : data.join("\n"));
          this.data = [];
        }
        this.size = 0;
      } else if (line.startsWith("data:")) {
        this.size += line.length * 3 + 1;
        this.data.push(line.slice(line.startsWith("data: ") ? 6 : 5));
        if (this.size > cap && (this.size = this.exact()) > cap) throw tooLarge(this.s, "an event of the stream", cap, "limits.eventBytes");
      }
    }
    this.buffer = from ? buffer.slice(from) : buffer;
    // The start of a line still arriving counts too.
    if (overCap(this.buffer, cap - this.size) && overCap(this.buffer, cap - (this.size = this.exact()))) throw tooLarge(this.s, "an event of the stream", cap, "limits.eventBytes");
    if (out.length) this.started = true;
    return out;
  }

  /** The payload of a last event without its blank line, if any: kept, as servers that end
   * abruptly after a complete last line are common. */
  end(): string[] {
    const data = this.data;
    const last = (this.buffer + this.decoder.decode()).trim();
    if (last.startsWith("data:")) data.push(last.slice(last.startsWith("data: ") ? 6 : 5));
    if (!this.started) throw new StreamInterrupted(this.s.provider, "the stream ended before its first event");
    return data.length ? [data.join("\n")] : [];
  }
}

const STREAM = { stream: true };

/** Whether a streamed request's answer is really an event stream: any content type without
 * "json" in it, as the Python runtime decides (a gateway may answer plain JSON). */
function isEventStream(response: Response): boolean {
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
  }
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

/** What an adapter makes of the answer to one attempt of a model call (a new one for every
 * attempt). Its methods may throw a ProviderError (a bad shape, an error event). */
export interface Reading<T> {
  /** The events of an answer in one JSON body. */
  whole(payload: any): T[];
  /** The events of the `data` payloads of one network read of an event stream. */
  events(payloads: string[]): T[];
  /** The last events, once the answer has been read (or the error of an incomplete one). */
  end(): T[];
}

/**
 * The events of a model call: `open()` posts the request; the answer is read as an event
 * stream when `streamed` asked for one and the server sent one (isEventStream), else as one
 * JSON body, and `reading()` (called for every attempt) makes the events of it. An attempt
 * whose connection breaks off (StreamInterrupted) before an event was handed out is made
 * again after a wait as for a failed connection, up to `retry.attempts` within the call's
 * deadline. Once an event is out, errors pass through unchanged (the caller may already have
 * acted on it); so do other failures (post has retried them).
 *
 * One iterator from the network read to the consumer, rather than a body reader, an SSE
 * generator, the adapter's generator and the retry around them: every async-generator layer
 * costs promises and a resumption per item. The events of one read are handed out from an
 * array; a read costs the reader's promise and that of the `next()` that waits for it.
 */
export function modelStream<T>(s: HttpSettings, streamed: boolean, open: () => Promise<Response>, reading: () => Reading<T>): AsyncIterableIterator<T> {
  return new ModelStream(s, streamed, open, reading);
}

const DONE: IteratorResult<never> = Object.freeze({ value: undefined, done: true }) as IteratorResult<never>;

class ModelStream<T> implements AsyncIterableIterator<T> {
  private batch: T[] = [];
  private at = 0;
  /** An event was handed out: no retry any more. */
  private started = false;
  /** The attempt under way: its reading (null once its end is out), its body while streamed. */
  private current: Reading<T> | null = null;
  private body: Body | null = null;
  private lines: EventLines | null = null;

  constructor(
    private s: HttpSettings,
    private streamed: boolean,
    private open: () => Promise<Response>,
    private reading: () => Reading<T>,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<T>> {
    if (this.at < this.batch.length) return Promise.resolve({ value: this.batch[this.at++]!, done: false });
    return this.started ? this.pull() : this.first();
  }

  /** The next event already read, without a promise; undefined when the next one needs the
   * network (or the end is next): then `next()`. */
  take(): T | undefined {
    return this.at < this.batch.length ? this.batch[this.at++] : undefined;
  }

  /** The first event, the attempt made again as long as it is cut before one. */
  private async first(): Promise<IteratorResult<T>> {
    const retry = this.s.retry;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.attempt();
        const step = await this.pull();
        this.started = true;
        return step;
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

  private async attempt(): Promise<void> {
    const reading = this.reading();
    const response = await this.open();
    this.current = reading;
    this.batch = [];
    this.at = 0;
    if (this.streamed && isEventStream(response)) {
      this.body = new Body(response, this.s);
      this.lines = new EventLines(this.s);
    } else this.batch = reading.whole(await readJson(response, this.s));
  }

  /** The next event of the attempt under way (reading the network as needed), or the end. */
  private async pull(): Promise<IteratorResult<T>> {
    try {
      for (;;) {
        if (this.at < this.batch.length) return { value: this.batch[this.at++]!, done: false };
        const current = this.current;
        if (current === null) return DONE;
        const body = this.body;
        this.at = 0;
        if (body === null) {
          this.current = null;
          this.batch = current.end();
          continue;
        }
        const piece = await body.read();
        if (piece !== null) {
          const payloads = this.lines!.feed(piece);
          this.batch = payloads.length ? current.events(payloads) : [];
          continue;
        }
        this.closeBody();
        const payloads = this.lines!.end();
        this.batch = payloads.length ? current.events(payloads) : [];
      }
    } catch (error) {
      this.current = null;
      this.batch = [];
      this.closeBody();
      throw error;
    }
  }

  private closeBody(): void {
    const body = this.body;
    if (body === null) return;
    this.body = null;
    body.close();
  }

  /** The consumer stopped (as leaving a `for await` closes a generator): the body is let go. */
  return(): Promise<IteratorResult<T>> {
    this.current = null;
    this.batch = [];
    this.at = 0;
    this.closeBody();
    return Promise.resolve(DONE);
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
