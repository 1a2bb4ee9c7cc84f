// The runtime's overhead on a two-round tool loop, against a hand-written fetch loop doing
// the same HTTP work, in the same run and against the same local server (an OpenAI-style
// endpoint on 127.0.0.1 answering whole JSON or SSE, as the request's `stream` asks). Two
// comparisons: `agent.run` (nobody reads partials, so the runtime asks for whole answers)
// against a loop posting `stream: false` and reading the JSON; `agent.stream` (partials, so
// streamed answers) against a loop reading the SSE. Both baselines read every body to its end
// and use fetch's default keep-alive pool, as the runtime does. Prints medians and ratios of
// interleaved runs; the aim is at most 1.3x the fetch loop. A second floor does the same work
// on `node:http` with a keep-alive agent (no fetch, no web streams): the cheapest client in
// Node's standard library; the runtime's ratio to it is printed too, and both again with 200
// loops at once.
//   node bench/overhead.mjs [runs] [warm-up runs]        (after `npx tsc -p .` in ts/)
import { Agent as HttpAgent, createServer, request as httpRequest } from "node:http";
import { createAgent, irHash } from "../dist/index.js";

const RUNS = Number(process.argv[2] ?? 200);
// Every loop is run this many times before any is timed, so that the timed runs measure the
// compiled code, not V8 compiling it (the CPU time read is the process's, V8's compiler
// threads included). The runtime has far more code than the fetch loop, much of it run once
// or twice per run, so V8 takes longer to optimize it: after 100 warm-up runs V8 still
// finished 192 optimizations during 200 timed runs (`node --trace-opt`), after 1000, 18.
const WARMUP = Number(process.argv[3] ?? 1000);
const CALL = "[tool_call: get_weather]\nlocation: Accra\n[/tool_call]";
const ANSWER = "[response_text]\nIt is 30 degrees and sunny in Accra.\n[/response_text]";

function sse(res, text) {
  res.writeHead(200, { "content-type": "text/event-stream" });
  for (let i = 0; i < text.length; i += 16) {
    const chunk = { id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: text.slice(i, i + 16) }, finish_reason: null }] };
    res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  }
  res.write(`data: ${JSON.stringify({ id: "c", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\n`);
  res.end("data: [DONE]\n\n");
}

const server = createServer((req, res) => {
  let body = "";
  req.on("data", (d) => (body += d));
  req.on("end", () => {
    const request = JSON.parse(body);
    const text = request.messages.at(-1).content.startsWith("[tool_result") ? ANSWER : CALL;
    if (request.stream) return sse(res, text);
    const whole = { id: "c", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }] };
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(whole));
  });
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const base = `http://127.0.0.1:${server.address().port}/v1`;

const getWeather = async ({ location }) => JSON.stringify({ temperature: 30, condition: `sunny in ${location}` });

const IR = {
  ir_version: 1, compiler_version: "0.1.0", source: "main.agent", root: "Main", types: {}, prompts: {},
  agents: { Main: {
    name: "Main", kind: "agent", description: null, context: [], input: { kind: "text" }, output: { kind: "text" },
    configs: { default: { model: { provider: "openai", model: "gpt-4o", options: {}, id: null, base_url: null, name: null },
      prompt: [{ kind: "inline", body: [{ kind: "text", template: [{ t: "text", value: "You are a weather assistant." }] }], loc: [1, 1] }],
      embedding: null, max_tool_loops: null, protocol: null } },
    tools: [{ name: "get_weather", description: "Gets the weather", params: [{ name: "location", type: { kind: "string" }, optional: false, description: null }], returns: { kind: "string" }, examples: [] }],
    workflows: [], helpers: [], intents: [], examples: [], dropped_examples: [],
  } },
};
IR.hash = irHash(IR); // as the compiler writes it
const agent = createAgent(IR, { apiKeys: { openaiApiKey: "k" }, baseUrls: { openai: base }, tools: { get_weather: getWeather } }, { irHash: IR.hash, compilerVersion: "0.1.0", irVersion: 1 });

async function readText(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let at;
    while ((at = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      const data = event.slice(6);
      if (data !== "[DONE]") text += JSON.parse(data).choices[0]?.delta?.content ?? "";
    }
  }
  return text;
}

/** A baseline: the same two requests, the tool call found with a regex, no checks. */
async function handWritten(stream) {
  const messages = [{ role: "system", content: "You are a weather assistant." }, { role: "user", content: "Weather in Accra?" }];
  const post = (msgs) => fetch(`${base}/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer k" }, body: JSON.stringify({ model: "gpt-4o", messages: msgs, stream }) });
  const read = async (response) => (stream ? readText(response) : (await response.json()).choices[0].message.content);
  const first = await read(await post(messages));
  const location = /location: (.*)/.exec(first)[1];
  const result = await getWeather({ location });
  messages.push({ role: "assistant", content: first }, { role: "user", content: `[tool_result: get_weather]\nresult: ${result}\n[/tool_result]` });
  return read(await post(messages));
}

const keepAlive = new HttpAgent({ keepAlive: true });

/** One POST on node:http; the body as text (read to its end, so the socket is kept). */
function httpPost(body) {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}/chat/completions`, { method: "POST", agent: keepAlive, headers: { "content-type": "application/json", authorization: "Bearer k" } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve(text));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

function sseText(body) {
  let text = "";
  for (const event of body.split("\n\n")) {
    const data = event.slice(6);
    if (data && data !== "[DONE]") text += JSON.parse(data).choices[0]?.delta?.content ?? "";
  }
  return text;
}

/** The second floor: the same two requests on node:http. */
async function handWrittenHttp(stream) {
  const messages = [{ role: "system", content: "You are a weather assistant." }, { role: "user", content: "Weather in Accra?" }];
  const ask = async (msgs) => {
    const body = await httpPost(JSON.stringify({ model: "gpt-4o", messages: msgs, stream }));
    return stream ? sseText(body) : JSON.parse(body).choices[0].message.content;
  };
  const first = await ask(messages);
  const location = /location: (.*)/.exec(first)[1];
  const result = await getWeather({ location });
  messages.push({ role: "assistant", content: first }, { role: "user", content: `[tool_result: get_weather]\nresult: ${result}\n[/tool_result]` });
  return ask(messages);
}

function check(session) {
  if (session.turns[0].status !== "complete") throw new Error(`run failed: ${session.turns[0].error}`);
}
const CONCURRENT = 200;
const all = (fn) => () => Promise.all(Array.from({ length: CONCURRENT }, fn));
const modes = {
  whole: {
    runtime: async () => check(await agent.run("Weather in Accra?")),
    fetch: () => handWritten(false),
    "node:http": () => handWrittenHttp(false),
  },
  streamed: {
    runtime: async () => {
      for await (const _ of agent.stream("Weather in Accra?"));
      check(agent.lastSession);
    },
    fetch: () => handWritten(true),
    "node:http": () => handWrittenHttp(true),
  },
};
modes[`${CONCURRENT} at once, whole`] = Object.fromEntries(Object.entries(modes.whole).map(([k, fn]) => [k, all(fn)]));

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
async function timed(into, fn) {
  const c = process.cpuUsage();
  const t = performance.now();
  await fn();
  into.wall.push(performance.now() - t);
  const used = process.cpuUsage(c);
  into.cpu.push((used.user + used.system) / 1000);
}
const results = {};
for (const mode in modes) results[mode] = Object.fromEntries(Object.keys(modes[mode]).map((k) => [k, { wall: [], cpu: [] }]));
// Every loop warmed up before any is timed (see WARMUP).
for (let i = 0; i < WARMUP; i++) for (const mode of ["whole", "streamed"]) for (const fn of Object.values(modes[mode])) await fn();
for (let i = 0; i < RUNS; i++) {
  for (const [mode, variants] of Object.entries(modes)) {
    if (mode.includes("at once") && i % 10) continue; // a tenth as many batches of 200
    // A different order each round, so that none always runs on a warmer machine.
    const names = Object.keys(variants);
    for (let k = 0; k < names.length; k++) {
      const name = names[(i + k) % names.length];
      await timed(results[mode][name], variants[name]);
    }
  }
}
server.close();
keepAlive.destroy();
console.log(`two-round tool loop, ${RUNS} runs each after ${WARMUP} to warm up (medians; the server's work is counted in all):`);
for (const [mode, r] of Object.entries(results)) {
  const per = mode.includes("at once") ? CONCURRENT : 1;
  console.log(`${mode} answers (per run):`);
  const floor = Math.min(median(r.fetch.cpu), median(r["node:http"].cpu));
  for (const [name, t] of Object.entries(r)) {
    const w = median(t.wall) / per;
    const c = median(t.cpu) / per;
    const rel = name === "runtime" ? ` -> ${(median(t.cpu) / median(r.fetch.cpu)).toFixed(2)}x the fetch loop, ${(median(t.cpu) / floor).toFixed(2)}x the cheapest floor (CPU)` : "";
    console.log(`  ${name.padEnd(10)} wall ${w.toFixed(3)} ms, CPU ${c.toFixed(3)} ms${rel}`);
  }
}
console.log("aim: at most 1.3x the fetch loop");
