// Approvals across the two runtimes, on real SQLite, Redis and PostgreSQL (the servers of
// tests/servers.py, started by test/stores_py.py): a run paused by the Python runtime is
// resumed by the TypeScript runtime and the other way round, the approved call running
// exactly once (each run of a tool is a line in a file); the resume journal is written in the
// format the other runtime reads; two resumes of one pause, concurrent, cannot both run it.
// Then the TypeScript API itself: onApproval, sync and async approvers, timeouts, resumeStream
// and the checks of agent.resume.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, existsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { ApprovalError, ConfigError, ConflictError, MemorySessionStore, ScriptedModel, SessionStoreMiddleware, createAgent, openStore } from "../dist/index.js";
import { PYTHON, compileIr } from "./fakes.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const IR = compileIr(`
agent Main {
    default config { model: openai("gpt-4o") prompt: "You help." }
    tool send_email(to: string, body: string): string @approval
    tool read_file(path: string): string
    tool slow_op(x: string): string @approval(timeout = 0.2)
}
`);
const meta = { irHash: IR.hash, compilerVersion: IR.compiler_version, irVersion: IR.ir_version };
const block = (kind, name, body) => `[${kind}${name ? `: ${name}` : ""}]\n${body}\n[/${kind}]`;
const EMAIL = block("tool_call", "send_email", "to: a@x.org\nbody: hi");
const DONE = block("response_text", null, "Done.");

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

function specFile(spec) {
  const file = join(mkdtempSync(join(tmpdir(), "auwgent-approvals-py-")), "spec.json");
  writeFileSync(file, JSON.stringify({ ir: IR, ...spec }));
  return file;
}

/** One step of the Python runtime (approvals_py.py), synchronously. */
function python(spec) {
  return JSON.parse(execFileSync(PYTHON, [join(here, "approvals_py.py"), specFile(spec)], { encoding: "utf8" }));
}

/** The same, as a child process running beside this one. */
function pythonAsync(spec) {
  return new Promise((resolve, reject) => {
    const proc = spawn(PYTHON, [join(here, "approvals_py.py"), specFile(spec)], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    proc.stdout.on("data", (chunk) => (out += chunk));
    proc.on("error", reject);
    proc.on("close", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`approvals_py.py exited with ${code}`))));
  });
}

/** Tool implementations appending `ts <name> <args>` to `count` for every call that ran;
 * `during` is called inside the call (to look at the store while it runs). */
function tools(count, during = () => {}) {
  const make = (name) => async (args) => {
    await during(name, args);
    const sorted = Object.fromEntries(Object.entries(args).sort(([a], [b]) => (a < b ? -1 : 1)));
    writeFileSync(count, `ts ${name} ${JSON.stringify(sorted).replace(/":/g, '": ').replace(/,"/g, ', "')}\n`, { flag: "a" });
    return "sent";
  };
  return { send_email: make("send_email"), read_file: make("read_file"), slow_op: make("slow_op") };
}

function tsAgent(store, replies, count, extra = {}, during) {
  const agent = createAgent(IR, { provider: new ScriptedModel(replies), tools: tools(count, during), middleware: [new SessionStoreMiddleware(store)], ...extra }, meta);
  const errors = [];
  agent.onIntent((name, value) => void (name === "error" && errors.push(value.message)));
  return { agent, errors };
}

async function close(store) {
  if (typeof store.close === "function") await store.close();
}

const ran = (count) => (existsSync(count) ? readFileSync(count, "utf8").split("\n").filter(Boolean) : []);
const countFile = () => join(mkdtempSync(join(tmpdir(), "auwgent-count-")), "ran.txt");
const pendingIds = (session) => session.pending_approvals.map((p) => p.id);

const BACKENDS = [
  ["SQLite", () => `sqlite:///${join(mkdtempSync(join(tmpdir(), "auwgent-sqlite-")), "sessions.db")}`],
  ["Redis", () => servers.redis],
  ["PostgreSQL", () => servers.postgres],
];
let n = 0;
const fresh = () => `approvals-${process.pid}-${++n}`;

for (const [label, urlOf] of BACKENDS) {
  test(`${label}: a run paused by Python is resumed by TypeScript; the approved call runs once`, async () => {
    const url = urlOf();
    const key = fresh();
    const count = countFile();
    const paused = python({ do: "pause", url, key, replies: [EMAIL], input: "email a", count });
    assert.equal(paused.raised, null);
    assert.equal(paused.session.status, "awaiting_approval");
    assert.deepEqual(ran(count), []);
    const [id] = pendingIds(paused.session);
    const store = openStore(url);
    // While the call runs, the stored session carries its journal, as Python reads it.
    const seen = [];
    const during = () => void seen.push(python({ do: "load", url, key }));
    const { agent, errors } = tsAgent(store, [DONE], count, {}, during);
    try {
      const session = await agent.resume(null, { [id]: true }, { conversationId: key });
      assert.deepEqual(errors, []);
      assert.deepEqual(ran(count), ['ts send_email {"body": "hi", "to": "a@x.org"}']);
      assert.equal(session.status, undefined);
      assert.deepEqual(session.pending_approvals, []);
      assert.equal(session.turns.at(-1).output, "Done.");
      assert.deepEqual(session.turns.at(-1).calls.map((c) => [c.id, c.status, c.result]), [[id, "ok", "sent"]]);
      assert.deepEqual(session.approvals.map((a) => [a.id, a.approved, a.args]), [[id, true, { to: "a@x.org", body: "hi" }]]);
      const [during1] = seen;
      assert.equal(during1.status, "resuming");
      assert.deepEqual(during1.turns.at(-1).paused_round[0].journal.state, "started");
      assert.equal(during1.turns.at(-1).paused_round[0].journal.approval.id, id);
      // Resumed again, by either runtime: nothing is pending, nothing runs.
      await assert.rejects(agent.resume(null, { [id]: true }, { conversationId: key }), (e) => e instanceof ApprovalError && /^resume: this session has no pending approvals/.test(e.message));
      const again = python({ do: "resume", url, key, replies: [DONE], count, decision: true });
      assert.equal(again.raised.error, "ApprovalError");
      assert.deepEqual(ran(count).length, 1);
      // Python reads the finished session as TypeScript saved it, and continues it.
      const loaded = python({ do: "load", url, key });
      assert.deepEqual(loaded.turns.at(-1).calls, session.turns.at(-1).calls);
    } finally {
      await close(store);
    }
  });

  test(`${label}: a run paused by TypeScript is resumed by Python; the approved call runs once`, async () => {
    const url = urlOf();
    const key = fresh();
    const count = countFile();
    const store = openStore(url);
    try {
      // Two calls in one response: the ungated one runs before the pause, the gated one waits.
      const twoCalls = block("tool_call", "read_file", "path: notes") + "\n" + EMAIL;
      const { agent, errors } = tsAgent(store, [twoCalls], count, { approvals: "defer" });
      const session = await agent.run("read and email", { conversationId: key });
      assert.deepEqual(errors, []);
      assert.equal(session.status, "awaiting_approval");
      assert.deepEqual(ran(count), ['ts read_file {"path": "notes"}']);
      assert.deepEqual(session.turns.at(-1).paused_round.map((r) => [r.name, r.status]), [["read_file", "ok"], ["send_email", "pending"]]);
      const resumed = python({ do: "resume", url, key, replies: [DONE], count, decision: { approved: true, args: { to: "b@x.org", body: "edited" } } });
      assert.equal(resumed.raised, null);
      assert.deepEqual(resumed.errors, []);
      // The call completed before the pause is not run again; the approved one runs once.
      assert.deepEqual(ran(count), ['ts read_file {"path": "notes"}', 'py send_email {"body": "edited", "to": "b@x.org"}']);
      assert.equal(resumed.session.turns.at(-1).output, "Done.");
      assert.deepEqual(resumed.session.approvals.map((a) => [a.approved, a.args]), [[true, { to: "b@x.org", body: "edited" }]]);
      const stored = await store.load(key);
      assert.equal(stored.status, undefined);
      assert.deepEqual(stored.turns.at(-1).calls.map((c) => [c.name, c.status]), [["read_file", "ok"], ["send_email", "ok"]]);
    } finally {
      await close(store);
    }
  });

  test(`${label}: of two concurrent resumes (Python and TypeScript) exactly one runs the call`, async () => {
    const url = urlOf();
    const key = fresh();
    const count = countFile();
    const paused = python({ do: "pause", url, key, replies: [EMAIL], input: "email a", count });
    const [id] = pendingIds(paused.session);
    const stores = [openStore(url), openStore(url)];
    try {
      const first = tsAgent(stores[0], [DONE], count).agent;
      const second = tsAgent(stores[1], [DONE], count).agent;
      const outcomes = await Promise.allSettled([
        first.resume(null, { [id]: true }, { conversationId: key }),
        second.resume(null, { [id]: true }, { conversationId: key }),
        pythonAsync({ do: "resume", url, key, replies: [DONE], count, decision: true }),
      ]);
      assert.equal(ran(count).length, 1, ran(count).join("\n"));
      const tsFailures = outcomes.slice(0, 2).filter((o) => o.status === "rejected").map((o) => o.reason);
      for (const reason of tsFailures) assert.ok(reason instanceof ConflictError || reason instanceof ApprovalError, String(reason));
      const py = outcomes[2].value;
      const winners = outcomes.slice(0, 2).filter((o) => o.status === "fulfilled").length + (py.raised === null ? 1 : 0);
      assert.equal(winners, 1);
      if (py.raised !== null) assert.ok(["ConflictError", "ApprovalError"].includes(py.raised.error), py.raised.message);
      const stored = await stores[0].load(key);
      assert.equal(stored.status, undefined);
      assert.equal(stored.approvals.length, 1);
    } finally {
      await Promise.all(stores.map(close));
    }
  });
}

test("a stored session left 'resuming' (a resumer stopped half way) is refused with ConflictError, nothing runs", async () => {
  const url = BACKENDS[0][1]();
  const key = fresh();
  const count = countFile();
  const paused = python({ do: "pause", url, key, replies: [EMAIL], input: "email a", count });
  const [id] = pendingIds(paused.session);
  const store = openStore(url);
  try {
    const stored = await store.load(key);
    stored.status = "resuming";
    stored.turns.at(-1).paused_round[0].journal = { state: "started", approval: { id, approved: true } };
    await store.save(key, stored);
    const { agent } = tsAgent(store, [DONE], count);
    await assert.rejects(agent.resume(null, { [id]: true }, { conversationId: key }), (e) => e instanceof ConflictError && /^this session is being resumed by another run/.test(e.message));
    assert.equal(python({ do: "resume", url, key, replies: [DONE], count, decision: true }).raised.error, "ConflictError");
    assert.deepEqual(ran(count), []);
  } finally {
    await close(store);
  }
});

test("new input for a stored conversation Python paused: an error intent, the stored pause kept as it was", async () => {
  const url = BACKENDS[0][1]();
  const key = fresh();
  const count = countFile();
  python({ do: "pause", url, key, replies: [EMAIL], input: "email a", count });
  const before = python({ do: "load", url, key });
  const store = openStore(url);
  try {
    const { agent, errors } = tsAgent(store, [DONE], count);
    await agent.run("something else", { conversationId: key });
    assert.deepEqual(errors, ["onRunStart failed: this session is awaiting approvals: continue it with agent.resume(session, decisions) before running new input"]);
    const after = await store.load(key);
    assert.deepEqual([after.turns, after.status, after.pending_approvals], [before.turns, before.status, before.pending_approvals]);
    assert.deepEqual(ran(count), []);
  } finally {
    await close(store);
  }
});

// -- the TypeScript API ------------------------------------------------------------------------

function plain(replies, extra = {}) {
  const count = countFile();
  const agent = createAgent(IR, { provider: new ScriptedModel(replies), tools: tools(count), ...extra }, meta);
  const intents = [];
  agent.onIntent((name, value) => void intents.push([name, structuredClone(value)]));
  return { agent, intents, count };
}

test("onApproval takes a sync or an async approver; it replaces the config's; a non-function is a ConfigError", async () => {
  const asked = [];
  const { agent, count } = plain([EMAIL, DONE, EMAIL, DONE], { approver: () => false });
  agent.onApproval((request) => (asked.push(request), true));
  await agent.run("one");
  agent.onApproval(async (request) => (asked.push(request), { approved: true, args: { to: "c@x.org", body: "async" } }));
  await agent.run("two");
  assert.deepEqual(ran(count), ['ts send_email {"body": "hi", "to": "a@x.org"}', 'ts send_email {"body": "async", "to": "c@x.org"}']);
  assert.deepEqual(Object.keys(asked[0]), ["id", "kind", "name", "args", "agent"]);
  assert.match(asked[0].id, /^[0-9a-f]{32}$/);
  assert.throws(() => agent.onApproval("yes"), (e) => e instanceof ConfigError && e.message === "onApproval: expected a function of the approval request, got str");
  assert.throws(() => createAgent(IR, { provider: "offline", approver: 3 }, meta), (e) => e instanceof ConfigError && e.message === "approver: expected a function of the approval request, got int");
  assert.throws(() => createAgent(IR, { provider: "offline", approvals: "later" }, meta), (e) => e instanceof ConfigError && e.message === "approvals: expected 'ask' or 'defer', got 'later'");
});

test("an approval that comes after timeouts.run is up runs nothing: the run has ended", async () => {
  let answer;
  let asked = false;
  const answered = new Promise((resolve) => (answer = resolve));
  const late = () => ((asked = true), new Promise((resolve) => setTimeout(() => (resolve(true), answer()), 600)));
  const { agent, count } = plain([EMAIL, DONE], { approver: late, timeouts: { run: 0.2 } });
  const session = await agent.run("mail");
  assert.equal(session.turns[0].status, "error");
  // The approver says yes, too late (on a loaded machine the run may end before it is asked).
  await (asked ? answered : new Promise((resolve) => setTimeout(resolve, 700)));
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.deepEqual(ran(count), []);
});

test("an approver that never answers is a denial at the annotation's timeout; the call never runs", async () => {
  const { agent, intents, count } = plain([block("tool_call", "slow_op", "x: 1"), DONE], { approver: () => new Promise(() => {}) });
  await agent.run("slow"); // it ends: the approver's silence is bounded by the timeout
  assert.deepEqual(ran(count), []);
  assert.deepEqual(intents.find(([name]) => name === "approval_result")[1].reason, "the approver did not answer within 0.2 s");
});

test("an approver that throws: an error intent with its stack, a denial, the run goes on", async () => {
  const { agent, intents, count } = plain([EMAIL, DONE], {
    approver: () => {
      throw new TypeError("reviewer away");
    },
  });
  const session = await agent.run("go");
  assert.deepEqual(ran(count), []);
  const error = intents.find(([name]) => name === "error")[1];
  assert.equal(error.message, "the approver failed on tool send_email: TypeError: reviewer away (the call was not run)");
  assert.match(error.traceback, /TypeError: reviewer away\n\s+at /);
  assert.equal(session.turns.at(-1).status, "complete");
  assert.equal(session.approvals[0].reason, "the approver failed");
});

test("resumeStream yields the resumed run's intents; a session passed by value resumes without a store", async () => {
  const { agent, count } = plain([EMAIL, DONE], { approver: () => "defer" });
  const paused = await agent.run("go");
  assert.equal(paused.status, "awaiting_approval");
  const [id] = pendingIds(paused);
  const names = [];
  for await (const event of agent.resumeStream(paused, { [id]: true })) if (!event.partial) names.push(event.name);
  assert.deepEqual(names, ["approval_result", "tool_result", "response_text"]);
  assert.equal(agent.lastSession.turns.at(-1).output, "Done.");
  assert.equal(ran(count).length, 1);
  await assert.rejects(agent.resume(null, { [id]: true }), (e) => e instanceof ApprovalError && e.message === "resume: no session given; nothing to resume");
});

test("with a MemorySessionStore, two resumes in one process: the second is a ConflictError and runs nothing", async () => {
  const store = new MemorySessionStore();
  const count = countFile();
  const { agent } = tsAgent(store, [EMAIL, DONE, DONE], count, { approver: () => "defer" });
  const paused = await agent.run("go", { conversationId: "c1" });
  const [id] = pendingIds(paused);
  const results = await Promise.allSettled([agent.resume(null, { [id]: true }, { conversationId: "c1" }), agent.resume(null, { [id]: true }, { conversationId: "c1" })]);
  assert.deepEqual(results.map((r) => r.status).sort(), ["fulfilled", "rejected"]);
  const reason = results.find((r) => r.status === "rejected").reason;
  assert.ok(reason instanceof ConflictError, String(reason));
  assert.equal(ran(count).length, 1);
});

test("two gated calls of one response deferred, decided apart on resume: the approved one runs, once", async () => {
  const other = block("tool_call", "send_email", "to: b@x.org\nbody: yo");
  const { agent, count } = plain([EMAIL + "\n" + other, DONE], { approvals: "defer" });
  const paused = await agent.run("both");
  assert.deepEqual(paused.pending_approvals.map((p) => p.args.to), ["a@x.org", "b@x.org"]);
  assert.deepEqual(paused.turns.at(-1).paused_round.map((r) => [r.id, r.status]), paused.pending_approvals.map((p) => [p.id, "pending"]));
  const [a, b] = pendingIds(paused);
  const session = await agent.resume(paused, { [a]: true, [b]: { approved: false, reason: "not b" } });
  assert.deepEqual(ran(count), ['ts send_email {"body": "hi", "to": "a@x.org"}']);
  assert.deepEqual(session.turns.at(-1).calls.map((c) => [c.status, c.result ?? c.error]), [["ok", "sent"], ["error", "send_email was not approved, so it did not run: not b"]]);
  assert.deepEqual(session.approvals.map((x) => [x.id, x.approved, x.reason]), [[a, true, null], [b, false, "not b"]]);
  await assert.rejects(agent.resume(paused, { [a]: true }), (e) => e instanceof ApprovalError && e.message === `resume: no decision for pending request '${b}'; decide on every pending request`);
  assert.equal(ran(count).length, 1); // refused before anything ran
});
