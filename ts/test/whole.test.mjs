// A whole (not streamed) answer's body is read as the Python runtime reads it: the idle
// timeout between body pieces, a body cut before its end retried as an unstarted request, the
// size cap, the wording for bad JSON (and a streamed body that ends before its first event is
// retried alike). Each case runs both runtimes against one real HTTP server on 127.0.0.1 that
// answers each request as its script says, and compares what they report and how many
// requests they made.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { execFile } from "node:child_process";
import { createAgent } from "../dist/index.js";
import { PYTHON, compileIr } from "./fakes.mjs";

const IR = compileIr(`
agent Main {
    default config { model: openai("gpt-4o") prompt: "You help." }
}
`);
const meta = { irHash: IR.hash, compilerVersion: IR.compiler_version, irVersion: IR.ir_version };
const GOOD = JSON.stringify({ id: "c", choices: [{ index: 0, message: { role: "assistant", content: "[response_text]\nHello.\n[/response_text]" }, finish_reason: "stop" }] });
const EVENTS = [{ content: "[response_text]\nHel" }, { content: "lo.\n[/response_text]" }]
  .map((delta) => `data: ${JSON.stringify({ id: "c", choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`)
  .join("") + `data: ${JSON.stringify({ id: "c", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\ndata: [DONE]\n\n`;
// Short limits so that every case ends in well under a second; jitter-free retries.
const KEY = "sk-test-0123456789";
const CONFIG = { timeouts: { idle: 0.3, firstByte: 0.3 }, retry: { attempts: 3, baseDelay: 0.01, maxDelay: 0.01 } };

/**
 * A server writing raw HTTP/1.1 responses, one behaviour per request in `script` order:
 * `good` (the whole answer), `bad` (a body that is not JSON), `stall` (half the body, then
 * silence), `cut` (half of a body whose length was announced, then the connection closed),
 * `close` (a body framed by the closing of the connection, cut half-way), `big` (a body over
 * the size cap); for a streamed request, `empty` (an event stream ending before its first
 * event) and `events` (the answer as events); `plain` (the events under `content-type:
 * text/plain`), `silent` (no answer at all), `denied` (a 401 whose message quotes the key and
 * the key inside a longer word). `requests` counts what it was asked, `connections` the
 * connections it accepted, `carrying` those on which any byte arrived (Node's fetch opens an
 * idle connection again after an aborted request's one is dropped, which sends nothing).
 */
async function scriptedServer(script) {
  const server = { requests: 0, connections: 0, carrying: 0 };
  const sockets = new Set();
  const tcp = createServer((socket) => {
    server.connections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    let data = "";
    socket.on("data", (chunk) => {
      if (!data) server.carrying++;
      data += chunk;
      const end = data.indexOf("\r\n\r\n");
      if (end < 0) return;
      const length = Number(/content-length: *(\d+)/i.exec(data.slice(0, end))?.[1] ?? 0);
      if (data.length < end + 4 + length) return;
      data = data.slice(end + 4 + length);
      answer(socket, script[Math.min(server.requests++, script.length - 1)]);
    });
  });
  const head = (extra) => `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n${extra}\r\n`;
  const answer = (socket, how) => {
    const half = GOOD.slice(0, GOOD.length >> 1);
    if (how === "good") socket.write(head(`content-length: ${GOOD.length}\r\n`) + GOOD);
    else if (how === "bad") socket.write(head("content-length: 8\r\n") + "not json");
    else if (how === "big") socket.write(head(`content-length: ${GOOD.length}\r\n`) + GOOD);
    else if (how === "stall") socket.write(head(`content-length: ${GOOD.length}\r\n`) + half);
    else if (how === "cut") socket.end(head(`content-length: ${GOOD.length}\r\n`) + half, () => socket.destroy());
    else if (how === "close") socket.end(head("connection: close\r\n") + half);
    else if (how === "empty") socket.write(sse(""));
    else if (how === "events") socket.write(sse(EVENTS));
    else if (how === "plain") socket.write(sse(EVENTS, "text/plain"));
    else if (how === "denied") {
      const body = JSON.stringify({ error: { message: `Incorrect API key provided: ${KEY}. Not x${KEY} either.` } });
      socket.write(`HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
    }
  };
  const sse = (body, type = "text/event-stream") => `HTTP/1.1 200 OK\r\ncontent-type: ${type}\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
  await new Promise((r) => tcp.listen(0, "127.0.0.1", r));
  server.url = `http://127.0.0.1:${tcp.address().port}/v1`;
  server.close = () =>
    new Promise((r) => {
      for (const socket of sockets) socket.destroy();
      tcp.close(r);
    });
  return server;
}

/** The intents of one run of the TypeScript runtime. */
async function runTs(url, extra = {}, streamed = false) {
  const agent = createAgent(IR, { apiKeys: { openaiApiKey: "k" }, baseUrls: { openai: url }, ...CONFIG, ...extra }, meta);
  if (streamed) agent.onIntentPartial(() => {}); // partials are read, so the answer is streamed
  const intents = [];
  agent.onIntent((name, value) => void intents.push([name, value]));
  await agent.run("hi");
  return intents;
}

const PY_RUN = `
import asyncio, json, sys
from auwgent.runtime.agent import agent_from_ir
ir, config, streamed = json.loads(sys.stdin.read())
agent = agent_from_ir(ir, config)
if streamed:
    agent.on_intent_partial(lambda name, value, who: None)
intents = []
agent.on_intent(lambda name, value, who: intents.append([name, value]))
asyncio.run(agent.run("hi"))
print(json.dumps(intents))
`;

/** The intents of one run of the Python runtime (a child process, so that the server here
 * keeps answering). */
function runPython(url, extra = {}, streamed = false) {
  const config = { apiKeys: { openaiApiKey: "k" }, baseUrls: { openai: url }, ...CONFIG, ...extra };
  return new Promise((resolve, reject) => {
    const child = execFile(PYTHON, ["-c", PY_RUN], { encoding: "utf8" }, (error, stdout) => (error ? reject(error) : resolve(JSON.parse(stdout))));
    child.stdin.end(JSON.stringify([IR, config, streamed]));
  });
}

/** Both runtimes against a fresh server with `script`: their intents and request counts. */
async function both(script, extra = {}, streamed = false) {
  const out = {};
  for (const [name, run] of [["ts", runTs], ["py", runPython]]) {
    const server = await scriptedServer(script);
    out[name] = { intents: await run(server.url, extra, streamed), requests: server.requests };
    await server.close();
  }
  return out;
}

test("a whole body that stalls between pieces ends the call at timeouts.idle (not retried), as in Python", async () => {
  const { ts, py } = await both(["stall", "good"]);
  assert.deepEqual(ts.intents, [["error", { message: "OpenAI API error: stream stalled: no data for 0.3s (idle timeout)" }]]);
  assert.deepEqual(ts, py);
  assert.equal(ts.requests, 1);
});

test("a whole body cut before its end is retried as an unstarted request, and the retry answers", async () => {
  for (const cut of ["cut", "close"]) {
    const { ts, py } = await both([cut, "good"]);
    assert.deepEqual(ts.intents, [["response_text", { text: "Hello." }]], cut);
    assert.deepEqual(ts, py, cut);
    assert.equal(ts.requests, 2, cut);
  }
});

test("a whole body cut on every attempt: the error says so and how many attempts were made", async () => {
  // A body framed by the connection's close: the message is the same in both runtimes.
  const { ts, py } = await both(["close"]);
  const excerpt = GOOD.slice(0, GOOD.length >> 1).replace(/'/g, "\\'");
  assert.deepEqual(ts.intents, [["error", { message: `OpenAI API error: the response ended before its JSON was complete (malformed JSON from the API: '${excerpt}') (gave up after 3 attempts)` }]]);
  assert.deepEqual(ts, py);
  assert.equal(ts.requests, 3);
  // A body shorter than its announced length: the connection broke off (the wording of the
  // HTTP client's error differs between the runtimes; the rest is the same).
  const cut = await both(["cut"]);
  for (const run of [cut.ts, cut.py]) {
    assert.equal(run.requests, 3);
    assert.equal(run.intents.length, 1);
    assert.match(run.intents[0][1].message, /^OpenAI API error: stream interrupted \(.+\) \(gave up after 3 attempts\)$/);
  }
});

test("a whole body that is not JSON: Python's wording, not retried", async () => {
  const { ts, py } = await both(["bad", "good"]);
  assert.deepEqual(ts.intents, [["error", { message: "OpenAI API error: malformed JSON from the API: 'not json'" }]]);
  assert.deepEqual(ts, py);
  assert.equal(ts.requests, 1);
});

test("a whole body over limits.responseBytes ends the call (not retried), as in Python", async () => {
  const { ts, py } = await both(["big", "good"], { limits: { responseBytes: 100 } });
  assert.deepEqual(ts.intents, [["error", { message: "OpenAI API error: the response is larger than the limit of 100 bytes (limits.responseBytes)" }]]);
  assert.deepEqual(ts, py);
  assert.equal(ts.requests, 1);
});

test("a streamed body that ends before its first event is retried the same way", async () => {
  const { ts, py } = await both(["empty", "events"], {}, true);
  assert.deepEqual(ts.intents, [["response_text", { text: "Hello." }]]);
  assert.deepEqual(ts, py);
  assert.equal(ts.requests, 2);
  const again = await both(["empty"], {}, true);
  assert.deepEqual(again.ts.intents, [["error", { message: "OpenAI API error: the stream ended before its first event (gave up after 3 attempts)" }]]);
  assert.deepEqual(again.ts, again.py);
});

test("a streamed request answered with a whole JSON body is read whole; any type without json is a stream", async () => {
  for (const how of ["good", "plain"]) {
    const { ts, py } = await both([how], {}, true);
    assert.deepEqual(ts.intents, [["response_text", { text: "Hello." }]], how);
    assert.deepEqual(ts, py, how);
    assert.equal(ts.requests, 1, how);
  }
});

test("an API key in an error message is written *** where it stands alone, and only a key of 8+ characters", async () => {
  const { ts, py } = await both(["denied"], { apiKeys: { openaiApiKey: KEY } });
  assert.deepEqual(ts.intents, [["error", { message: `OpenAI API error (401): Incorrect API key provided: ***. Not x${KEY} either.` }]]);
  assert.deepEqual(ts, py);
  const short = await both(["denied"], { apiKeys: { openaiApiKey: "sk-1234" } });
  assert.deepEqual(short.ts.intents, [["error", { message: `OpenAI API error (401): Incorrect API key provided: ${KEY}. Not x${KEY} either.` }]]);
  assert.deepEqual(short.ts, short.py);
});

test("no answer within timeouts.firstByte: Python's message, retried", async () => {
  // An attempt's clock starts before its connection is made, so on a loaded machine it may run
  // out before this server has read the request. A timed-out attempt drops its connection, so
  // each attempt has its own: at least that many are accepted, and no more than that many carry
  // a request (Node's fetch may open one more, idle, after the last attempt is dropped).
  for (const streamed of [true, false]) {
    // A whole answer's headers wait for the call's deadline instead (firstByte is shorter).
    const extra = streamed
      ? { timeouts: { idle: 0.3, firstByte: 0.6 }, retry: { attempts: 2, baseDelay: 0.01, maxDelay: 0.01 } }
      : { timeouts: { idle: 0.3, firstByte: 0.3, call: 1 } };
    const message = streamed ? "request failed (ReadTimeout: no response before the first-byte timeout) (gave up after 2 attempts)" : "the call took longer than 1s (timeouts.call)";
    for (const [name, run] of [["ts", runTs], ["py", runPython]]) {
      const server = await scriptedServer(["silent"]);
      const intents = await run(server.url, extra, streamed);
      await server.close();
      const where = `${name}, ${streamed ? "streamed" : "whole"}`;
      assert.deepEqual(intents, [["error", { message: `OpenAI API error: ${message}` }]], where);
      const attempts = streamed ? 2 : 1;
      assert.ok(server.connections >= attempts, `${where}: ${server.connections} connections`);
      assert.ok(server.carrying <= attempts, `${where}: ${server.carrying} carried a request`);
      assert.ok(server.requests <= server.carrying, where);
    }
  }
});

test("a refused connection: 'request failed (ConnectError: ...)' after the retries, as in Python", async () => {
  const closed = await scriptedServer(["good"]);
  const url = closed.url;
  await closed.close(); // nothing listens on its port any more
  const extra = { retry: { attempts: 2, baseDelay: 0.01, maxDelay: 0.01 } };
  for (const intents of [await runTs(url, extra), await runPython(url, extra)]) {
    assert.equal(intents.length, 1);
    assert.match(intents[0][1].message, /^OpenAI API error: request failed \(ConnectError: .+\) \(gave up after 2 attempts\)$/);
  }
});
