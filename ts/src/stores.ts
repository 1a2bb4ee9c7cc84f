// Session stores (runtime/stores.py, stores_shared.py): conversations kept between runs and
// processes, in the Python runtime's row format, so that a conversation saved by one runtime
// is continued by the other. A store has `load(key)` (the session or null) and
// `save(key, session)`; `SessionStoreMiddleware` loads the session of `ctx.conversation_id`
// at `onRunStart` and saves the final one at `onRunComplete`, failed runs included.
//
// Optimistic concurrency: every store keeps a revision per key beside the JSON. `load` puts it
// in the session's top-level `revision`; `save` writes only when the stored revision is still
// that one (absent: nothing may be stored yet), then sets `session.revision` to the new one;
// otherwise it throws ConflictError and writes nothing. Large part data (base64 longer than
// BLOB_THRESHOLD) is kept by reference beside the session (`data_ref: "sha256:<hex>"`).
//
// SQLite (`better-sqlite3`), Redis (`ioredis`) and PostgreSQL (`pg`) are optional packages,
// loaded when a store is first used.

import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { AuwgentError, ConfigError, ConflictError } from "./errors.js";
import { checkSession, type SessionState } from "./session.js";
import { pyRepr } from "./values.js";

/** A session could not be saved, or a stored one could not be read back. */
export class SessionStoreError extends AuwgentError {}

/** A stored session reads back but fails the session checks; the message names the key, where
 * it is stored and the field. (In Python it is also a ConfigError.) */
export class StoredSessionError extends SessionStoreError {}

export interface SessionStore {
  load(key: string): Promise<SessionState | null>;
  save(key: string, session: SessionState): Promise<void>;
}

/** The length (base64 characters) past which a part's data is stored by reference: 64 KiB. */
export const BLOB_THRESHOLD = 64 * 1024;
export const DEFAULT_SQLITE_PATH = "auwgent_sessions.db";

const require = createRequire(import.meta.url);

/** An optional package, with the message saying what to install when it is missing. */
export function optional<T>(name: string, store: string): T {
  try {
    return require(name) as T;
  } catch (error) {
    if ((error as { code?: string }).code !== "MODULE_NOT_FOUND") throw error;
    throw new SessionStoreError(`${store} needs the ${name} package: npm install ${name}`);
  }
}

// -- encoding and revisions ------------------------------------------------------------------

export function checkKey(key: unknown): string {
  if (typeof key !== "string" || !key) throw new SessionStoreError(`session key must be a non-empty string, got ${typeof key === "string" ? "''" : JSON.stringify(key ?? null)}`);
  return key;
}

function sessionProblem(value: unknown): string | null {
  try {
    const agent = value && typeof value === "object" ? (value as Record<string, unknown>).agent : undefined;
    if (agent !== undefined && agent !== null && typeof agent !== "string") return `session.agent: expected an agent name, got ${typeof agent}`;
    checkSession(value, typeof agent === "string" ? agent : "");
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  return null;
}

function revisionProblem(revision: unknown): string | null {
  if (revision === undefined || revision === null || (Number.isInteger(revision) && (revision as number) >= 0)) return null;
  return `'revision' must be a non-negative integer or absent, got ${JSON.stringify(revision)}`;
}

/** The revision a save of `session` must find in the store (0: none stored). */
export function expectedRevision(key: string, session: SessionState): number {
  const problem = revisionProblem(session.revision);
  if (problem !== null) throw new SessionStoreError(`cannot save session ${pyRepr(key)}: ${problem}`);
  return session.revision ?? 0;
}

/** The session's JSON text without its revision (the store keeps that beside it). */
export function toStored(key: string, session: SessionState): string {
  checkKey(key);
  const problem = sessionProblem(session) ?? revisionProblem(session.revision);
  if (problem !== null) throw new SessionStoreError(`cannot save session ${pyRepr(key)}: ${problem}`);
  const { revision: _, ...body } = session;
  try {
    // Strict JSON (no NaN or Infinity): the other runtime must be able to read it back.
    return JSON.stringify(body, (_k, v) => {
      if (typeof v === "number" && !Number.isFinite(v)) throw new TypeError(`Out of range float values are not JSON compliant: ${v}`);
      if (typeof v === "bigint" || typeof v === "function" || typeof v === "symbol") throw new TypeError(`Object of type ${typeof v} is not JSON serializable`);
      return v;
    });
  } catch (error) {
    throw new SessionStoreError(`cannot save session ${pyRepr(key)}: it is not JSON-serialisable (${(error as Error).message})`);
  }
}

/** A stored session's JSON value, unchecked (its references not yet resolved). */
export function parseStored(key: string, text: string, where: string): any {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new SessionStoreError(`stored session ${pyRepr(key)} in ${where} is corrupt: not valid JSON (${(error as Error).message})`);
  }
}

function checked(key: string, value: any, where: string, revision: number): SessionState {
  const problem = sessionProblem(value);
  if (problem !== null) throw new StoredSessionError(`stored session ${pyRepr(key)} in ${where} is unusable: ${problem}`);
  value.revision = revision;
  return value as SessionState;
}

/** A stored session, checked, with the revision it was read at. */
export function fromStored(key: string, text: string, revision: number, where: string): SessionState {
  return checked(key, parseStored(key, text, where), where, revision);
}

/** The error of a save based on a stale revision (0 / null: nothing stored). */
export function conflict(key: string, expected: number, found: number | null): ConflictError {
  const loaded = expected ? `has ${expected}` : "was never loaded from this store";
  return new ConflictError(
    `session ${pyRepr(key)} was changed by another run or process (stored revision ${found ? found : "None"}; the session being saved ${loaded}): nothing was saved; load it again and retry`,
  );
}

// -- binaries by reference -------------------------------------------------------------------

function mapParts(value: any, change: (part: any) => any): any {
  if (Array.isArray(value)) return value.map((v) => mapParts(v, change));
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, any> = {};
  for (const [k, v] of Object.entries(value)) out[k] = k === "parts" && Array.isArray(v) ? v.map(change) : mapParts(v, change);
  return out;
}

/** `text` with each large part's data replaced by a reference, and the data by reference. */
export function splitBlobs(text: string): [string, Map<string, string>] {
  const blobs = new Map<string, string>();
  if (!text.includes('"parts":')) return [text, blobs];
  const value = mapParts(JSON.parse(text), (part) => {
    if (!(part && typeof part === "object" && (part.type === "image" || part.type === "file") && typeof part.data === "string" && part.data.length > BLOB_THRESHOLD)) return part;
    const ref = "sha256:" + createHash("sha256").update(part.data, "ascii").digest("hex");
    blobs.set(ref, part.data);
    const { data: _, ...rest } = part;
    return { ...rest, data_ref: ref };
  });
  return blobs.size ? [JSON.stringify(value), blobs] : [text, blobs];
}

/** The data references in a parsed stored session, in order, without repeats. */
export function storedRefs(value: unknown): string[] {
  const refs = new Set<string>();
  mapParts(value, (part) => {
    if (part && typeof part === "object" && typeof part.data_ref === "string") refs.add(part.data_ref);
    return part;
  });
  return [...refs];
}

/** The stored session `value` with its references replaced by their data, checked. */
export function joinBlobs(key: string, value: unknown, blobs: Map<string, string>, revision: number, where: string): SessionState {
  const joined = mapParts(value, (part) => {
    if (!(part && typeof part === "object" && typeof part.data_ref === "string")) return part;
    const data = blobs.get(part.data_ref);
    if (data === undefined) throw new SessionStoreError(`stored session ${pyRepr(key)} in ${where} is corrupt: the data ${part.data_ref} of a part is missing`);
    const { data_ref: _, ...rest } = part;
    return { ...rest, data };
  });
  return checked(key, joined, where, revision);
}

/** Python's `datetime.now(timezone.utc).isoformat(timespec="microseconds")`. */
function utcNow(): string {
  return new Date().toISOString().replace("Z", "000+00:00");
}

// -- in memory ---------------------------------------------------------------------------------

/** Sessions in this process's memory (tests, demos): JSON text and a revision per key. */
export class MemorySessionStore implements SessionStore {
  private rows = new Map<string, [text: string, revision: number]>();

  async load(key: string): Promise<SessionState | null> {
    const row = this.rows.get(checkKey(key));
    return row === undefined ? null : fromStored(key, row[0], row[1], "memory");
  }

  async save(key: string, session: SessionState): Promise<void> {
    const expected = expectedRevision(key, session);
    const text = toStored(key, session);
    const found = this.rows.get(key)?.[1] ?? 0;
    if (found !== expected) throw conflict(key, expected, found);
    this.rows.set(key, [text, found + 1]);
    session.revision = found + 1;
  }

  async delete(key: string): Promise<boolean> {
    return this.rows.delete(checkKey(key));
  }

  keys(): string[] {
    return [...this.rows.keys()];
  }
}

// -- SQLite ----------------------------------------------------------------------------------

const SQLITE_SCHEMA = [
  `CREATE TABLE IF NOT EXISTS auwgent_sessions (
    key TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    session_version INTEGER NOT NULL,
    revision INTEGER NOT NULL,
    updated_at TEXT NOT NULL
)`,
  `CREATE TABLE IF NOT EXISTS auwgent_locks (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires_at REAL NOT NULL
)`,
  `CREATE TABLE IF NOT EXISTS auwgent_blobs (
    key TEXT NOT NULL,
    ref TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (key, ref)
)`,
];

const SQLITE_UPSERT = `
INSERT INTO auwgent_sessions (key, session, session_version, revision, updated_at)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (key) DO UPDATE SET
    session = excluded.session,
    session_version = excluded.session_version,
    revision = excluded.revision,
    updated_at = excluded.updated_at`;

type Sqlite = import("better-sqlite3").Database;

/** Sessions in one SQLite file (the Python runtime's tables): one row per key with the JSON,
 * its format version, the revision and the UTC update time; WAL mode; each save one
 * `BEGIN IMMEDIATE` transaction that compares the revision and writes. A writer that finds the
 * file locked by another process waits up to `timeout` seconds. */
export class SQLiteSessionStore implements SessionStore {
  readonly path: string;
  readonly timeout: number;
  private db: Sqlite | null = null;

  constructor(path: string = DEFAULT_SQLITE_PATH, options: { timeout?: number } = {}) {
    if (path === ":memory:") throw new RangeError("SQLiteSessionStore needs a file; use MemorySessionStore in memory");
    this.path = path;
    this.timeout = options.timeout ?? 30;
  }

  toString(): string {
    return `SQLiteSessionStore(${pyRepr(this.path)})`;
  }

  async load(key: string): Promise<SessionState | null> {
    checkKey(key);
    return this.guard(() => {
      const db = this.open();
      const row = db.prepare("SELECT session, revision FROM auwgent_sessions WHERE key = ?").get(key) as { session: unknown; revision: number } | undefined;
      if (row === undefined) return null;
      if (typeof row.session !== "string") throw new SessionStoreError(`stored session ${pyRepr(key)} in ${this.path} is corrupt: not text`);
      if (!row.session.includes('"data_ref":')) return fromStored(key, row.session, Number(row.revision), this.path);
      const value = parseStored(key, row.session, this.path);
      const refs = storedRefs(value);
      const found = db.prepare(`SELECT ref, data FROM auwgent_blobs WHERE key = ? AND ref IN (${refs.map(() => "?").join(", ")})`).all(key, ...refs) as { ref: string; data: string }[];
      return joinBlobs(key, value, new Map(found.map((r) => [r.ref, r.data])), Number(row.revision), this.path);
    });
  }

  async save(key: string, session: SessionState): Promise<void> {
    const expected = expectedRevision(checkKey(key), session);
    const [text, blobs] = splitBlobs(toStored(key, session));
    const revision = this.guard(() => {
      const db = this.open();
      const write = db.transaction(() => {
        const row = db.prepare("SELECT revision FROM auwgent_sessions WHERE key = ?").get(key) as { revision: number } | undefined;
        const found = row === undefined ? 0 : Number(row.revision);
        if (found !== expected) throw conflict(key, expected, found);
        db.prepare(SQLITE_UPSERT).run(key, text, session.version, found + 1, utcNow());
        const blob = db.prepare("INSERT OR IGNORE INTO auwgent_blobs (key, ref, data) VALUES (?, ?, ?)");
        for (const [ref, data] of blobs) blob.run(key, ref, data);
        return found + 1;
      });
      return write.immediate();
    });
    session.revision = revision;
  }

  async delete(key: string): Promise<boolean> {
    checkKey(key);
    return this.guard(() => {
      const db = this.open();
      return db.transaction(() => {
        db.prepare("DELETE FROM auwgent_blobs WHERE key = ?").run(key);
        return db.prepare("DELETE FROM auwgent_sessions WHERE key = ?").run(key).changes > 0;
      }).immediate();
    });
  }

  /** How many times `key` was saved (null when it never was). */
  async revision(key: string): Promise<number | null> {
    checkKey(key);
    return this.guard(() => {
      const row = this.open().prepare("SELECT revision FROM auwgent_sessions WHERE key = ?").get(key) as { revision: number } | undefined;
      return row === undefined ? null : Number(row.revision);
    });
  }

  close(): void {
    this.db?.close();
    this.db = null;
  }

  private open(): Sqlite {
    if (this.db !== null) return this.db;
    const Database = optional<typeof import("better-sqlite3")>("better-sqlite3", "SQLiteSessionStore");
    let db: Sqlite;
    try {
      mkdirSync(dirname(this.path), { recursive: true });
      db = new Database(this.path, { timeout: this.timeout * 1000 });
    } catch (error) {
      throw new SessionStoreError(`cannot open session database ${this.path}: ${(error as Error).message}`);
    }
    if (db.pragma("journal_mode", { simple: true }) !== "wal") db.pragma("journal_mode = WAL");
    for (const statement of SQLITE_SCHEMA) db.exec(statement);
    this.db = db;
    return db;
  }

  private guard<T>(work: () => T): T {
    try {
      return work();
    } catch (error) {
      if (error instanceof AuwgentError) throw error;
      throw new SessionStoreError(`session database ${this.path}: ${(error as Error).message}`);
    }
  }
}

// -- the middleware --------------------------------------------------------------------------

function turnIds(session: SessionState | null): unknown[] {
  return session === null ? [] : session.turns.map((turn) => turn.id);
}

/** Middleware that loads a conversation before each run and saves it after (Python's
 * SessionStoreMiddleware): runs of one key through one middleware run one after the other; a
 * stored session that cannot be used fails the run's start and is never saved over. */
export class SessionStoreMiddleware {
  readonly store: SessionStore;
  readonly key: string;
  readonly name: string;
  private loaded = new Map<object, unknown[] | null>();
  private queues = new Map<string, Promise<void>>();
  private held = new Map<object, () => void>();

  constructor(store: SessionStore | null = null, options: { key?: string; name?: string } = {}) {
    this.store = store ?? new SQLiteSessionStore();
    this.key = options.key ?? "conversation_id";
    this.name = options.name ?? "session-store";
  }

  async onRunStart(session: SessionState, ctx: Record<string, any>): Promise<SessionState> {
    const key = this.keyOf(ctx);
    if (key === null) return session;
    await this.acquire(key, ctx);
    let stored: SessionState | null;
    try {
      this.loaded.set(ctx, null); // unusable until it has loaded and passed the checks
      stored = await this.store.load(key);
      if (stored !== null) {
        // Custom stores may not check what they read: the built-in stores' checks.
        const problem = sessionProblem(stored);
        if (problem !== null) throw new StoredSessionError(`stored session ${pyRepr(key)} is unusable: ${problem}`);
        const owner = stored.agent;
        const root = ctx.rootAgent;
        if (owner != null && root != null && owner !== root)
          throw new SessionStoreError(`stored session ${pyRepr(key)} belongs to agent ${pyRepr(owner)}, not ${pyRepr(root)}: use another conversation id (or another store) for each agent`);
      }
      this.loaded.set(ctx, turnIds(stored));
    } catch (error) {
      this.release(ctx);
      throw error;
    }
    return stored ?? session;
  }

  async onRunComplete(finalSession: SessionState, ctx: Record<string, any>): Promise<void> {
    const key = this.keyOf(ctx);
    if (key === null) return;
    try {
      let why: string;
      if (!this.loaded.has(ctx)) why = "the run ended before the stored session was loaded";
      else {
        const loaded = this.loaded.get(ctx)!;
        if (loaded === null) why = "the stored one could not be used";
        else if (JSON.stringify(turnIds(finalSession).slice(0, loaded.length)) !== JSON.stringify(loaded)) why = "the run did not continue the stored session (it was rejected at the start)";
        else return await this.store.save(key, finalSession);
      }
      throw new SessionStoreError(`session ${pyRepr(key)} was not saved: ${why}, and the stored one is kept as it is for inspection; repair it or delete it from the store, then run again`);
    } finally {
      this.loaded.delete(ctx);
      this.release(ctx);
    }
  }

  private async acquire(key: string, ctx: object): Promise<void> {
    const before = this.queues.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = before.then(() => mine);
    this.queues.set(key, tail);
    this.held.set(ctx, () => {
      release();
      if (this.queues.get(key) === tail) this.queues.delete(key);
    });
    await before;
  }

  private release(ctx: object): void {
    this.held.get(ctx)?.();
    this.held.delete(ctx);
  }

  private keyOf(ctx: Record<string, any>): string | null {
    const value = ctx[this.key];
    if (value === undefined || value === null || value === "") return null;
    return typeof value === "string" ? value : String(value);
  }
}
