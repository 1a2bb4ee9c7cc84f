// Session stores on Redis (`ioredis`) and PostgreSQL (`pg`), in the Python runtime's formats
// (runtime/stores_redis.py, stores_postgres.py): a conversation saved by one runtime is
// continued by the other, and the revision check is the same atomic compare-and-write.
//
// Redis: one hash per conversation, `<prefix>session:<key>`, with the fields `session` (the
// JSON) and `revision`, and `blob:<ref>` per large part; each save one Lua script. PostgreSQL:
// the tables `auwgent_sessions (key, session, revision, updated_at, expires_at)`,
// `auwgent_blobs` and `auwgent_locks`, each save one statement compared on the revision (in a
// transaction with its blobs). With `ttl` a conversation expires that many seconds after its
// last save.

import type { SessionState } from "./session.js";
import { checkKey, conflict, DEFAULT_SQLITE_PATH, expectedRevision, fromStored, joinBlobs, MemorySessionStore, optional, parseStored, SessionStoreError, splitBlobs, SQLiteSessionStore, storedRefs, toStored, type SessionStore } from "./stores.js";
import { pyRepr } from "./values.js";

// KEYS[1]: the session hash. ARGV: expected revision, JSON text, ttl in ms (0: none), then
// blob field, data pairs. Returns the new revision, or -1 - the stored revision on a conflict.
const REDIS_SAVE = `
local found = tonumber(redis.call('HGET', KEYS[1], 'revision') or '0')
if found ~= tonumber(ARGV[1]) then
    return -1 - found
end
redis.call('HSET', KEYS[1], 'session', ARGV[2], 'revision', found + 1)
for i = 4, #ARGV, 2 do
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
if tonumber(ARGV[3]) > 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
else
    redis.call('PERSIST', KEYS[1])
end
return found + 1
`;

/** What the store asks of a Redis client (an `ioredis` `Redis`): declared here so that the
 * package's types need no `ioredis` installed. */
export interface RedisClient {
  hmget(key: string, ...fields: string[]): Promise<(string | null)[]>;
  eval(script: string, keys: number, ...args: (string | number)[]): Promise<unknown>;
  del(...keys: string[]): Promise<number>;
  quit(): Promise<unknown>;
  disconnect(): void;
}

export class RedisSessionStore implements SessionStore {
  readonly url: string | null;
  readonly client: RedisClient;
  readonly prefix: string;
  readonly ttl: number | null;

  constructor(url: string | null = null, options: { client?: RedisClient; prefix?: string; ttl?: number | null } = {}) {
    if (options.ttl != null && !(options.ttl > 0)) throw new RangeError("ttl must be positive (or null)");
    if (options.client) this.client = options.client;
    else {
      if (url === null) throw new RangeError("RedisSessionStore needs a url or a client");
      const { Redis } = optional<typeof import("ioredis")>("ioredis", "RedisSessionStore");
      this.client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 }) as unknown as RedisClient;
    }
    this.url = url;
    this.prefix = options.prefix ?? "auwgent:";
    this.ttl = options.ttl ?? null;
  }

  toString(): string {
    return `RedisSessionStore(${this.url === null ? "None" : pyRepr(this.url)}, prefix=${pyRepr(this.prefix)})`;
  }

  private sessionKey(key: string): string {
    return `${this.prefix}session:${checkKey(key)}`;
  }

  async load(key: string): Promise<SessionState | null> {
    const [text, revision] = await this.call(() => this.client.hmget(this.sessionKey(key), "session", "revision"));
    if (text === null || text === undefined) return null;
    const where = String(this);
    if (!text.includes('"data_ref":')) return fromStored(key, text, Number(revision), where);
    const value = parseStored(key, text, where);
    const refs = storedRefs(value);
    const found = await this.call(() => this.client.hmget(this.sessionKey(key), ...refs.map((r) => `blob:${r}`)));
    const blobs = new Map<string, string>();
    refs.forEach((ref, i) => {
      if (found[i] != null) blobs.set(ref, found[i]!);
    });
    return joinBlobs(key, value, blobs, Number(revision), where);
  }

  async save(key: string, session: SessionState): Promise<void> {
    const expected = expectedRevision(key, session);
    const [text, blobs] = splitBlobs(toStored(key, session));
    const args: (string | number)[] = [expected, text, this.ttl ? Math.trunc(this.ttl * 1000) : 0];
    for (const [ref, data] of blobs) args.push(`blob:${ref}`, data);
    const result = Number(await this.call(() => this.client.eval(REDIS_SAVE, 1, this.sessionKey(key), ...args)));
    if (result < 0) throw conflict(key, expected, -1 - result);
    session.revision = result;
  }

  async delete(key: string): Promise<boolean> {
    return (await this.call(() => this.client.del(this.sessionKey(key)))) > 0;
  }

  async close(): Promise<void> {
    await this.client.quit().catch(() => this.client.disconnect());
  }

  private async call<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (error instanceof SessionStoreError) throw error;
      throw new SessionStoreError(`${this}: ${(error as Error).name}: ${(error as Error).message}`);
    }
  }
}

const PG_SCHEMA = `
CREATE TABLE IF NOT EXISTS auwgent_sessions (
    key TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    revision INTEGER NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at TIMESTAMPTZ
);
CREATE TABLE IF NOT EXISTS auwgent_blobs (
    key TEXT NOT NULL,
    ref TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (key, ref)
);
CREATE TABLE IF NOT EXISTS auwgent_locks (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
`;
// The advisory lock taken while the tables are created (the Python runtime's number, "auwgnt").
const PG_SCHEMA_LOCK = "107157142335092";
const LIVE = "(expires_at IS NULL OR expires_at > now())";
const PG_LOAD = `SELECT session, revision FROM auwgent_sessions WHERE key = $1 AND ${LIVE}`;
// A first save: insert, or take over a row that has expired. No row back on a conflict.
const PG_INSERT = `
INSERT INTO auwgent_sessions AS s (key, session, revision, updated_at, expires_at)
VALUES ($1, $2, 1, now(), now() + $3 * interval '1 second')
ON CONFLICT (key) DO UPDATE SET
    session = excluded.session, revision = 1, updated_at = now(), expires_at = excluded.expires_at
    WHERE s.expires_at IS NOT NULL AND s.expires_at <= now()
RETURNING revision`;
const PG_UPDATE = `
UPDATE auwgent_sessions SET
    session = $2, revision = revision + 1, updated_at = now(),
    expires_at = now() + $3 * interval '1 second'
WHERE key = $1 AND revision = $4 AND ${LIVE}
RETURNING revision`;
const PG_BLOB = "INSERT INTO auwgent_blobs (key, ref, data) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING";

type Pool = import("pg").Pool;

export class PostgresSessionStore implements SessionStore {
  readonly dsn: string;
  readonly ttl: number | null;
  private pool: Pool;
  private ready: Promise<void> | null = null;

  constructor(dsn: string, options: { ttl?: number | null; maxConnections?: number } = {}) {
    if (options.ttl != null && !(options.ttl > 0)) throw new RangeError("ttl must be positive (or null)");
    const pg = optional<typeof import("pg")>("pg", "PostgresSessionStore");
    this.dsn = dsn;
    this.ttl = options.ttl ?? null;
    this.pool = new pg.Pool({ connectionString: dsn, max: options.maxConnections ?? 10 });
    this.pool.on("error", () => {}); // an idle client's failure shows on its next query
  }

  toString(): string {
    const shown = this.dsn.replace(/password=\S+/g, "password=***").replace(/(:\/\/[^:/@]+):[^@]*@/, "$1:***@");
    return `PostgresSessionStore(${pyRepr(shown)})`;
  }

  async load(key: string): Promise<SessionState | null> {
    const rows = await this.query(PG_LOAD, [checkKey(key)]);
    if (!rows.length) return null;
    const { session: text, revision } = rows[0]!;
    const where = String(this);
    if (!text.includes('"data_ref":')) return fromStored(key, text, Number(revision), where);
    const value = parseStored(key, text, where);
    const found = await this.query("SELECT ref, data FROM auwgent_blobs WHERE key = $1 AND ref = ANY($2)", [key, storedRefs(value)]);
    return joinBlobs(key, value, new Map(found.map((r) => [r.ref, r.data])), Number(revision), where);
  }

  async save(key: string, session: SessionState): Promise<void> {
    const expected = expectedRevision(key, session);
    const [text, blobs] = splitBlobs(toStored(key, session));
    await this.open();
    const revision = await this.guard(async () => {
      const db = await this.pool.connect();
      try {
        await db.query("BEGIN");
        const result = expected ? await db.query(PG_UPDATE, [key, text, this.ttl, expected]) : await db.query(PG_INSERT, [key, text, this.ttl]);
        if (!result.rows.length) {
          await db.query("ROLLBACK");
          return null;
        }
        for (const [ref, data] of blobs) await db.query(PG_BLOB, [key, ref, data]);
        await db.query("COMMIT");
        return Number(result.rows[0].revision);
      } catch (error) {
        await db.query("ROLLBACK").catch(() => {});
        throw error;
      } finally {
        db.release();
      }
    });
    if (revision === null) {
      const found = await this.query(`SELECT revision FROM auwgent_sessions WHERE key = $1 AND ${LIVE}`, [key]);
      throw conflict(key, expected, found.length ? Number(found[0]!.revision) : null);
    }
    session.revision = revision;
  }

  async delete(key: string): Promise<boolean> {
    await this.query("DELETE FROM auwgent_blobs WHERE key = $1", [checkKey(key)]);
    return (await this.query("DELETE FROM auwgent_sessions WHERE key = $1 RETURNING key", [key])).length > 0;
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  private async query(sql: string, params: unknown[]): Promise<any[]> {
    await this.open();
    return this.guard(async () => (await this.pool.query(sql, params)).rows);
  }

  private open(): Promise<void> {
    this.ready ??= this.guard(async () => {
      const db = await this.pool.connect();
      try {
        await db.query("BEGIN");
        await db.query("SELECT pg_advisory_xact_lock($1)", [PG_SCHEMA_LOCK]);
        await db.query(PG_SCHEMA);
        await db.query("COMMIT");
      } catch (error) {
        await db.query("ROLLBACK").catch(() => {});
        throw new SessionStoreError(`${this}: cannot connect: ${(error as Error).message}`);
      } finally {
        db.release();
      }
    }).catch((error) => {
      this.ready = null;
      throw error;
    });
    return this.ready;
  }

  private async guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (error instanceof SessionStoreError) throw error;
      throw new SessionStoreError(`${this}: ${(error as Error).name}: ${(error as Error).message}`);
    }
  }
}

/** The session store a URL names (Python's `open_store`): `sqlite:///relative/path.db` or
 * `sqlite:////absolute/path.db`, `redis://host:port/db` (and `rediss://`),
 * `postgresql://user@host/db` (and `postgres://`), `memory:`. */
export function openStore(url: string): SessionStore {
  if (url.startsWith("sqlite:///")) return new SQLiteSessionStore(url.slice("sqlite:///".length) || DEFAULT_SQLITE_PATH);
  if (url.startsWith("redis://") || url.startsWith("rediss://")) return new RedisSessionStore(url);
  if (url.startsWith("postgresql://") || url.startsWith("postgres://")) return new PostgresSessionStore(url);
  if (url === "memory:") return new MemorySessionStore();
  throw new SessionStoreError(`unknown store URL ${pyRepr(url)}: use sqlite:///path.db, redis://host:6379/0, postgresql://user@host/db or memory:`);
}
