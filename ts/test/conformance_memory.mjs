// The `memory` key of an engine scenario (engine/memory/... vectors), as the Python runner
// reads it (src/auwgent/testing/conformance_memory.py): a real SQLite file in a temporary
// directory; `config` (more memory keys), `seed` (text or [text, source, scope]), `embed`
// (hashedEmbedding), `ingest` (what the custom ingester returns per turn) or `ingest_raises`,
// `store` ("search_fails", "add_fails", "unscoped"), `scope`, `conversation`. The result gains
// `memory`: every stored fact as [scope, text, source] and the errors onError was given.
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hashedEmbedding, SQLiteMemoryStore } from "../dist/index.js";

const require = createRequire(import.meta.url);
const Database = require("better-sqlite3");

class ToolFailure extends Error {
  name = "ToolFailure";
}

class FailingStore {
  scopes = true;
  constructor(inner, fails) {
    this.inner = inner;
    this.fails = fails;
  }
  async search(query, limit, options) {
    if (this.fails === "search") throw new ToolFailure("store down");
    return this.inner.search(query, limit, options);
  }
  async add(items, options) {
    if (this.fails === "add") throw new ToolFailure("store down");
    return this.inner.add(items, options);
  }
}

/** A store that cannot keep scopes apart (no `scopes: true`). */
class UnscopedStore {
  constructor(inner) {
    this.inner = inner;
  }
  async search(query, limit) {
    return this.inner.search(query, limit);
  }
  async add(items) {
    return this.inner.add(items);
  }
}

export class MemoryScenario {
  constructor(spec) {
    this.spec = spec;
    this.dir = mkdtempSync(join(tmpdir(), "auwgent-memory-"));
    this.path = join(this.dir, "memory.db");
    const embedder = spec.embed ? async (texts) => texts.map((t) => hashedEmbedding(t)) : undefined;
    this.sqlite = new SQLiteMemoryStore(this.path, { embedder });
    this.errors = [];
    this.turn = 0;
  }

  config() {
    const kind = this.spec.store ?? "sqlite";
    let store = this.sqlite;
    if (kind === "search_fails" || kind === "add_fails") store = new FailingStore(this.sqlite, kind.split("_")[0]);
    else if (kind === "unscoped") store = new UnscopedStore(this.sqlite);
    const out = { store, ...(this.spec.config ?? {}) };
    if ("ingest" in this.spec || "ingest_raises" in this.spec) out.ingester = (turn) => this.ingester(turn);
    return out;
  }

  middleware() {
    return { name: "memory", onError: (error) => void this.errors.push(`${error.name}: ${error.message}`) };
  }

  ingester() {
    const index = this.turn++;
    if ("ingest_raises" in this.spec) throw new ToolFailure(this.spec.ingest_raises);
    const given = this.spec.ingest;
    return index < given.length ? structuredClone(given[index]) : [];
  }

  async seed() {
    for (const fact of this.spec.seed ?? []) {
      const [text, source = "", scope = ""] = typeof fact === "string" ? [fact] : fact;
      await this.sqlite.add([text], { scope, source });
    }
  }

  prepare(agent) {
    if ("scope" in this.spec) agent.useMemoryScope(this.spec.scope);
  }

  runOptions() {
    return this.spec.conversation ? { conversationId: this.spec.conversation } : {};
  }

  output() {
    this.sqlite.close();
    let rows = [];
    try {
      const db = new Database(this.path, { fileMustExist: true });
      rows = db.prepare("SELECT scope, text, source FROM memory_facts ORDER BY id").raw().all();
      db.close();
    } catch (error) {
      if (error.code !== "SQLITE_CANTOPEN") throw error; // no file: nothing was stored
    }
    rmSync(this.dir, { recursive: true, force: true });
    return { facts: rows, errors: this.errors };
  }

  /** `value` with the turn ids of sources replaced (`turn <id>`). */
  static normal(value) {
    return JSON.parse(JSON.stringify(value).replace(/turn [0-9a-f]{32}/g, "turn <id>"));
  }
}
