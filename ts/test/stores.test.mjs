// Session stores across the two runtimes, on real SQLite, Redis and PostgreSQL (the servers
// of tests/servers.py, started by test/stores_py.py): a conversation started by the Python
// runtime is continued by the TypeScript runtime and back, both on the offline model through
// their SessionStoreMiddleware; a save based on a stale revision is the same ConflictError in
// both; large part data stored by reference by one is read back whole by the other.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { ConflictError, SessionStoreMiddleware, createAgent, openStore } from "../dist/index.js";
import { PYTHON, compileIr } from "./fakes.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const IR = compileIr(`
agent Main {
    default config { model: openai("gpt-4o") prompt: "You help." }
}
`);
const meta = { irHash: IR.hash, compilerVersion: IR.compiler_version, irVersion: IR.ir_version };

let servers = null;
let child = null;
before(async () => {
  child = spawn(PYTHON, [join(here, "stores_py.py"), "servers", mkdtempSync(join(tmpdir(), "auwgent-redis-"))], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.done) throw new Error("the Redis and PostgreSQL servers did not start");
  servers = JSON.parse(first.value);
});
after(() => child?.stdin.end());

function python(spec) {
  const dir = mkdtempSync(join(tmpdir(), "auwgent-stores-py-"));
  const file = join(dir, "spec.json");
  writeFileSync(file, JSON.stringify(spec));
  return JSON.parse(execFileSync(PYTHON, [join(here, "stores_py.py"), file], { encoding: "utf8" }));
}

async function tsRun(url, key, inputs) {
  const store = openStore(url);
  const agent = createAgent(IR, { provider: "offline", middleware: [new SessionStoreMiddleware(store)] }, meta);
  const errors = [];
  agent.onIntent((name, value) => void (name === "error" && errors.push(value.message)));
  let session = null;
  try {
    for (const text of inputs) session = await agent.run(text, { conversationId: key });
  } finally {
    await close(store);
  }
  return { session, errors };
}

async function close(store) {
  if (typeof store.close === "function") await store.close();
}

const said = (session) => session.turns.map((t) => [t.input.text, t.output]);
const BACKENDS = [
  ["SQLite", () => `sqlite:///${join(mkdtempSync(join(tmpdir(), "auwgent-sqlite-")), "sessions.db")}`],
  ["Redis", () => servers.redis],
  ["PostgreSQL", () => servers.postgres],
];
let n = 0;
const fresh = () => `conversation-${process.pid}-${++n}`;

for (const [label, urlOf] of BACKENDS) {
  test(`${label}: Python starts a conversation, TypeScript continues it, Python continues that`, async () => {
    const url = urlOf();
    const key = fresh();
    const first = python({ do: "run", ir: IR, url, key, inputs: ["one"] });
    assert.deepEqual(first.errors, []);
    assert.equal(first.session.revision, 1);
    const second = await tsRun(url, key, ["two", "three"]);
    assert.deepEqual(second.errors, []);
    assert.equal(second.session.revision, 3);
    assert.deepEqual(said(second.session), [["one", 'Offline reply to "one".'], ["two", 'Offline reply to "two".'], ["three", 'Offline reply to "three".']]);
    const third = python({ do: "run", ir: IR, url, key, inputs: ["four"] });
    assert.deepEqual(third.errors, []);
    assert.equal(third.session.revision, 4);
    assert.deepEqual(said(third.session).map(([text]) => text), ["one", "two", "three", "four"]);
    assert.deepEqual(third.session.turns.slice(0, 3), second.session.turns);
    const loaded = python({ do: "load", url, key });
    const store = openStore(url);
    try {
      assert.deepEqual(await store.load(key), loaded);
    } finally {
      await close(store);
    }
  });

  test(`${label}: a save based on a stale revision is the same ConflictError in both runtimes`, async () => {
    const url = urlOf();
    const key = fresh();
    const started = await tsRun(url, key, ["one"]);
    const stale = structuredClone(started.session); // revision 1
    python({ do: "run", ir: IR, url, key, inputs: ["two"] }); // revision 2
    const store = openStore(url);
    let message;
    try {
      await assert.rejects(store.save(key, structuredClone(stale)), (e) => e instanceof ConflictError && ((message = e.message), true));
      const fromPython = python({ do: "save", url, key, session: stale });
      assert.deepEqual(fromPython, { error: "ConflictError", message });
      assert.match(message, /^session '.*' was changed by another run or process \(stored revision 2; the session being saved has 1\): nothing was saved; load it again and retry$/);
      const unsaved = { ...structuredClone(stale), revision: undefined };
      delete unsaved.revision;
      await assert.rejects(store.save(key, unsaved), (e) => e instanceof ConflictError && e.message === python({ do: "save", url, key, session: unsaved }).message);
      assert.equal((await store.load(key)).revision, 2);
    } finally {
      await close(store);
    }
  });

  test(`${label}: large part data stored by reference moves between the runtimes whole`, async () => {
    const url = urlOf();
    const key = fresh();
    const data = Buffer.alloc(80 * 1024, 7).toString("base64");
    const { session } = await tsRun(url, key, ["one"]);
    session.turns[0].input.parts = [{ type: "text", text: "one" }, { type: "image", media_type: "image/png", data }];
    const store = openStore(url);
    try {
      await store.save(key, session);
      const loaded = python({ do: "load", url, key });
      assert.equal(loaded.turns[0].input.parts[1].data, data);
      assert.equal(loaded.revision, 2);
      const key2 = fresh();
      delete loaded.revision;
      assert.deepEqual(python({ do: "save", url, key: key2, session: loaded }), { revision: 1 });
      const back = await store.load(key2);
      assert.equal(back.turns[0].input.parts[1].data, data);
      delete back.revision;
      assert.deepEqual(back, loaded);
    } finally {
      await close(store);
    }
  });
}

test("SQLite rows are the Python runtime's: columns, session_version, revision, update time", async () => {
  const url = BACKENDS[0][1]();
  const key = fresh();
  await tsRun(url, key, ["one"]);
  const file = url.slice("sqlite:///".length);
  const row = JSON.parse(
    execFileSync(PYTHON, ["-c", "import json, sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.row_factory = sqlite3.Row; print(json.dumps([dict(r) for r in db.execute('SELECT * FROM auwgent_sessions')]))", file], { encoding: "utf8" }),
  )[0];
  assert.deepEqual(Object.keys(row), ["key", "session", "session_version", "revision", "updated_at"]);
  assert.equal(row.key, key);
  assert.equal(row.session_version, JSON.parse(row.session).version);
  assert.equal(row.revision, 1);
  assert.match(row.updated_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/);
  assert.ok(!("revision" in JSON.parse(row.session)));
});

test("a stored session of another agent or a corrupt row fails the run's start and is kept", async () => {
  const url = BACKENDS[0][1]();
  const key = fresh();
  const { session } = await tsRun(url, key, ["one"]);
  const store = openStore(url);
  try {
    await store.save(key, { ...session, agent: "Other", stack: [{ agent: "Other", config: null }] });
    const { errors } = await tsRun(url, key, ["two"]);
    assert.equal(errors.length, 2);
    assert.match(errors[0], /stored session '.*' belongs to agent 'Other', not 'Main': use another conversation id/);
    assert.match(errors[1], /was not saved: the stored one could not be used, and the stored one is kept as it is/);
    assert.equal((await store.load(key)).revision, 2);
  } finally {
    await close(store);
  }
});

test("the package's types name no optional package: an application without them type-checks", () => {
  const dist = join(here, "..", "dist");
  const declarations = readdirSync(dist, { recursive: true }).filter((name) => String(name).endsWith(".d.ts"));
  assert.ok(declarations.length > 10);
  for (const file of declarations) {
    const text = readFileSync(join(dist, String(file)), "utf8");
    assert.doesNotMatch(text, /(?:import\(|from )["'](?:better-sqlite3|ioredis|pg)["']/, file);
  }
});
