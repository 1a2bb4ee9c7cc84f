// Memory in the TypeScript runtime: one SQLite memory file shared with the Python runtime (the
// Python side ingests and TypeScript recalls, and back, by keywords and by meaning, across
// scopes; de-duplication reads the other runtime's vectors; a file from before scopes is
// adopted), background ingestion that never delays or fails a run, and the config's errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { ConfigError, createAgent, estimateTokens, hashedEmbedding, MEMORY_HEADER, renderMemory, ScriptedModel, SQLiteMemoryStore } from "../dist/index.js";
import { PYTHON, compileIr } from "./fakes.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const Database = require("better-sqlite3");
const IR = compileIr(`
agent Main {
    default config {
        model: openai("gpt-4o")
        embedding: openai("text-embedding-3-small")
        prompt: "You help."
    }
}
`);
const meta = { irHash: IR.hash, compilerVersion: IR.compiler_version, irVersion: IR.ir_version };
const DONE = ScriptedModel.text("Done.");
const embed = async (texts) => texts.map((t) => hashedEmbedding(t));

function python(spec) {
  const file = join(mkdtempSync(join(tmpdir(), "auwgent-memory-py-")), "spec.json");
  writeFileSync(file, JSON.stringify(spec));
  return JSON.parse(execFileSync(PYTHON, [join(here, "memory_py.py"), file], { encoding: "utf8" }));
}

const memoryFile = () => join(mkdtempSync(join(tmpdir(), "auwgent-memory-")), "memory.db");

/** The Memory section of a system prompt ("" when it has none). */
function section(system) {
  const start = system.indexOf("Memory (facts remembered");
  if (start < 0) return "";
  const end = system.indexOf("\n\n", start);
  return system.slice(start, end < 0 ? undefined : end);
}

function agentWith(memory, replies = [DONE, DONE, DONE], extra = {}) {
  const provider = new ScriptedModel(replies);
  return { agent: createAgent(IR, { provider, memory, ...extra }, meta), provider };
}

const LEARNED = [
  ["The user's name is Ama.", "The user lives in Kumasi.", "The user prefers metric units."],
  ["The user's dog is called Kofi.", "The user is allergic to peanuts.", "The user travels to Lagos in March."],
];

test("facts Python learned are recalled by TypeScript, by meaning and by words, as Python recalls them", async () => {
  const path = memoryFile();
  python({ do: "learn", ir: IR, path, inputs: ["Hi, I'm Ama.", "My dog is Kofi."], ingest: LEARNED });
  for (const query of ["Where does the user travel in March?", "peanuts", "?"]) {
    const { agent, provider } = agentWith({ store: path, limit: 2 });
    await agent.run(query);
    const ours = section(provider.requests[0].system);
    const theirs = python({ do: "recall", path, query, limit: 2, embed: true }).section;
    assert.equal(ours, theirs, query);
    if (query !== "?") assert.match(ours, /learned in turn [0-9a-f]{32}\)/);
  }
  const { agent, provider } = agentWith({ store: path, limit: 2 });
  await agent.run("peanuts");
  assert.match(section(provider.requests[0].system), /"The user is allergic to peanuts\."/);
});

test("facts TypeScript learned in a scope are recalled by Python in that scope only", async () => {
  const path = memoryFile();
  const { agent, provider } = agentWith({ store: path, ingester: (turn) => [`The user said: ${turn.input.text}`] });
  agent.useMemoryScope("user-1");
  await agent.run("I drink green tea every morning");
  await agent.drain();
  await agent.run("My car is a blue Toyota");
  await agent.drain();
  assert.equal(section(provider.requests[1].system).split("\n").length, 2); // header and one fact
  const theirs = python({ do: "recall", path, query: "x", limit: 50, scope: "user-1" }).section;
  assert.match(theirs, /"The user said: I drink green tea every morning" \(learned in turn [0-9a-f]{32}\)\n- "The user said: My car is a blue Toyota" \(learned/);
  assert.equal(python({ do: "recall", path, query: "x", limit: 50 }).section, ""); // the unscoped pool is empty
  // Python de-duplicates against the vectors TypeScript wrote (and by text).
  const vectors = new SQLiteMemoryStore(path, { embedder: embed });
  assert.equal(await vectors.add(["The user owns a red bicycle."], { scope: "user-1" }), 1);
  vectors.close();
  assert.deepEqual(python({ do: "add", path, facts: ["the user: owns a RED bicycle", "the user said: my car is a blue toyota!", "Kwame is the user's brother."], scope: "user-1", embed: true }), { added: 1 });
  const store = new SQLiteMemoryStore(path);
  assert.equal(await store.count({ scope: "user-1" }), 4);
  store.close();
});

test("a memory file from before scopes is adopted into the unscoped pool", async () => {
  const path = memoryFile();
  const db = new Database(path);
  db.exec(`CREATE TABLE facts (id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT NOT NULL, norm TEXT NOT NULL UNIQUE, vector TEXT);
    CREATE VIRTUAL TABLE facts_fts USING fts5(text, content='facts', content_rowid='id');
    CREATE TRIGGER facts_ai AFTER INSERT ON facts BEGIN INSERT INTO facts_fts(rowid, text) VALUES (new.id, new.text); END;
    INSERT INTO facts(text, norm) VALUES ('Old fact one.', 'old fact one'), ('Old fact two.', 'old fact two');`);
  db.close();
  const store = new SQLiteMemoryStore(path);
  assert.deepEqual(await store.search("anything", 50), [
    { text: "Old fact one.", source: "" },
    { text: "Old fact two.", source: "" },
  ]);
  store.close();
  assert.match(python({ do: "recall", path, query: "x", limit: 50 }).section, /"Old fact one\."\n- "Old fact two\."$/);
});

test("run() returns before ingestion ends; drain() waits for it", async () => {
  let release;
  const gate = new Promise((resolve) => (release = resolve));
  let calls = 0;
  const path = memoryFile();
  let entered;
  const asked = new Promise((resolve) => (entered = resolve));
  const { agent } = agentWith({ store: path, ingester: async () => (calls++, entered(), await gate, ["Learned late."]) });
  const session = await agent.run("hi");
  assert.equal(session.turns[0].status, "complete"); // returned while the ingester waits
  await asked;
  assert.equal(calls, 1);
  const store = new SQLiteMemoryStore(path);
  assert.equal(await store.count(), 0); // still waiting
  let drained = false;
  const draining = agent.drain().then(() => (drained = true));
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(drained, false);
  release();
  await draining;
  assert.equal(await store.count(), 1);
  store.close();
});

test("past maxPending a turn's ingestion is skipped and reported; a failing onError never escapes", async () => {
  let release;
  const gate = new Promise((resolve) => (release = resolve));
  const errors = [];
  const middleware = [{ onError: (error) => void errors.push(`${error.name}: ${error.message}`) }, { onError: () => { throw new Error("onError down"); } }];
  const { agent } = agentWith({ store: memoryFile(), maxPending: 1, ingester: async () => (await gate, ["x"]) }, [DONE, DONE], { middleware });
  await agent.run("one");
  const second = await agent.run("two");
  release();
  await agent.drain();
  assert.deepEqual(errors, [`IngestionError: memory ingestion skipped for turn ${second.turns[0].id}: 1 ingestions are still pending (memory.maxPending)`]);
});

test("an embedding call that fails is reported and the run goes on without memory", async () => {
  const errors = [];
  const provider = new ScriptedModel([DONE], { embeddings: async () => { throw new Error("embeddings down"); } });
  const path = memoryFile();
  const seed = new SQLiteMemoryStore(path);
  await seed.add(["Known."]);
  seed.close();
  const agent = createAgent(IR, { provider, memory: { store: path }, middleware: [{ onError: (e) => void errors.push(e.message) }] }, meta);
  const session = await agent.run("hello");
  assert.equal(session.turns[0].status, "complete");
  assert.equal(section(provider.requests[0].system), "");
  assert.deepEqual(errors, ["memory search failed: Error: embeddings down"]);
});

test("an embedding call that fails while learning is reported; the run's session is untouched", async () => {
  const errors = [];
  const provider = new ScriptedModel([DONE], { embeddings: async () => { throw new Error("embeddings down"); } });
  const path = memoryFile();
  const agent = createAgent(IR, { provider, memory: { store: path, ingester: () => ["A fact."] }, middleware: [{ onError: (e) => void errors.push(e.message) }] }, meta);
  const session = await agent.run("hello");
  await agent.drain();
  assert.equal(session.turns[0].status, "complete");
  assert.deepEqual(session.turns[0].intents.map((i) => i.name), ["response_text"]);
  assert.deepEqual(errors, ["memory search failed: Error: embeddings down", `memory ingestion failed for turn ${session.turns[0].id}: Error: embeddings down`]);
  const store = new SQLiteMemoryStore(path);
  assert.equal(await store.count(), 0);
  store.close();
});

test("the memory config is checked with the Python runtime's messages", () => {
  const cases = [
    [5, "memory: expected an object, got int"],
    [[], "memory: expected an object, got list"],
    [{ store: {} }, "memory.store: expected a MemoryStore (async search(query, limit) and add(items)) or a SQLite file path, got dict"],
    [{ ingester: 3 }, "memory.ingester: expected a function, got int"],
    [{ counter: "len" }, "memory.counter: expected a function, got str"],
    [{ budget: 1.5 }, "memory.budget: expected a whole number of at least 1, got 1.5"],
    [{ limit: null }, "memory.limit: expected a whole number of at least 1, got None"],
  ];
  for (const [memory, message] of cases) assert.throws(() => agentWith(memory), (e) => e instanceof ConfigError && e.message === message, message);
  const { agent } = agentWith(true, [], { memory: { store: memoryFile() } });
  assert.throws(() => agent.useMemoryScope(""), { message: "useMemoryScope: expected a non-empty string, got ''" });
  assert.doesNotThrow(() => agentWith(false));
});

test("the token estimate counts characters (code points), as Python's len(); a counter replaces it", () => {
  assert.equal(estimateTokens("😀😀😀😀😀"), 2);
  assert.equal(estimateTokens("abcde"), 2);
  const one = () => 1; // every line costs one token: the header and budget - 1 facts fit
  assert.equal(renderMemory(["a", "b", "c"], 3, one), `${MEMORY_HEADER}\n- "a"\n- "b"`);
  assert.equal(renderMemory(["a", "b"], 1, one), "");
});

test("without better-sqlite3, SQLiteMemoryStore is refused when the agent is created", async () => {
  const dist = join(mkdtempSync(join(tmpdir(), "auwgent-dist-")), "dist");
  cpSync(join(here, "..", "dist"), dist, { recursive: true });
  const { SQLiteMemoryStore: Store } = await import(pathToFileURL(join(dist, "index.js")).href);
  assert.throws(() => new Store(memoryFile()), { name: "ConfigError", message: "SQLiteMemoryStore needs the better-sqlite3 package: npm install better-sqlite3" });
});
