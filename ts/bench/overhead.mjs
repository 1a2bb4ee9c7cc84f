// The runtime's overhead on a two-round tool loop, against a hand-written fetch loop doing
// the same HTTP work, in the same run and against the same local server (an OpenAI-style
// SSE endpoint on 127.0.0.1). Prints both medians and their ratio; the aim is at most 1.3x.
//   node bench/overhead.mjs [runs]        (after `npx tsc -p .` in ts/)
import { createServer } from "node:http";
import { createAgent, irHash } from "../dist/index.js";

const RUNS = Number(process.argv[2] ?? 200);
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
    const last = JSON.parse(body).messages.at(-1).content;
    sse(res, last.startsWith("[tool_result") ? ANSWER : CALL);
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

/** The baseline: the same two requests, the tool call found with a regex, no checks. */
async function handWritten() {
  const messages = [{ role: "system", content: "You are a weather assistant." }, { role: "user", content: "Weather in Accra?" }];
  const post = (msgs) => fetch(`${base}/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer k" }, body: JSON.stringify({ model: "gpt-4o", messages: msgs, stream: true }) });
  const first = await readText(await post(messages));
  const location = /location: (.*)/.exec(first)[1];
  const result = await getWeather({ location });
  messages.push({ role: "assistant", content: first }, { role: "user", content: `[tool_result: get_weather]\nresult: ${result}\n[/tool_result]` });
  return readText(await post(messages));
}

async function viaRuntime() {
  const session = await agent.run("Weather in Accra?");
  if (session.turns[0].status !== "complete") throw new Error(`run failed: ${session.turns[0].error}`);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const wall = { runtime: [], baseline: [] };
const cpu = { runtime: [], baseline: [] };
async function timed(kind, fn) {
  const c = process.cpuUsage();
  const t = performance.now();
  await fn();
  wall[kind].push(performance.now() - t);
  const used = process.cpuUsage(c);
  cpu[kind].push((used.user + used.system) / 1000);
}
for (let i = 0; i < 20; i++) {
  await viaRuntime();
  await handWritten();
}
for (let i = 0; i < RUNS; i++) {
  // Alternate which goes first, so that neither always runs on a warmer machine.
  if (i % 2) {
    await timed("runtime", viaRuntime);
    await timed("baseline", handWritten);
  } else {
    await timed("baseline", handWritten);
    await timed("runtime", viaRuntime);
  }
}
server.close();
const w = [median(wall.runtime), median(wall.baseline)];
const c = [median(cpu.runtime), median(cpu.baseline)];
console.log(`two-round tool loop, ${RUNS} runs each (medians; the server's work is counted in both):`);
console.log(`  wall: runtime ${w[0].toFixed(3)} ms, hand-written fetch loop ${w[1].toFixed(3)} ms -> ${(w[0] / w[1]).toFixed(2)}x`);
console.log(`  CPU:  runtime ${c[0].toFixed(3)} ms, hand-written fetch loop ${c[1].toFixed(3)} ms -> ${(c[0] / c[1]).toFixed(2)}x`);
console.log("aim: at most 1.3x");
