// The manual's TypeScript tabs (test/manual/*/app.ts, written as printed) type-check with
// tsc --strict and run end to end against the fake OpenAI and Gemini servers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { PYTHON, startFakes } from "./fakes.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const manual = join(here, "manual");
const bin = join(here, "..", "node_modules", ".bin");
const CASES = ["getting-started", "tools", "workflows", "helpers", "middleware", "custom-intents"];

function generate(name) {
  execFileSync(PYTHON, ["-m", "auwgent", "generate", join(manual, name)], { stdio: "pipe" });
}

test("generated bindings and the manual's apps type-check with tsc --strict", () => {
  for (const name of CASES) generate(name);
  const result = spawnSync(join(bin, "tsc"), ["-p", join(manual, "tsconfig.json")], { encoding: "utf8" });
  assert.equal(result.status, 0, result.stdout + result.stderr);
});

test("a wrong context type and a missing API key field are type errors", () => {
  generate("getting-started");
  const args = ["--strict", "--noEmit", "--module", "esnext", "--moduleResolution", "bundler", "--target", "es2022", "--skipLibCheck"];
  const result = spawnSync(join(bin, "tsc"), [...args, join(manual, "getting-started", "wrong.ts")], { encoding: "utf8" });
  assert.notEqual(result.status, 0);
  assert.match(result.stdout, /wrong\.ts\(6,\d+\): error TS2322: Type 'string' is not assignable to type 'boolean/);
  assert.match(result.stdout, /wrong\.ts\(10,\d+\): error TS2741: Property 'geminiApiKey' is missing/);
});

test("the TypeScript bindings of every example project type-check", () => {
  const examples = join(here, "..", "..", "examples");
  const out = join(here, ".examples");
  rmSync(out, { recursive: true, force: true });
  const files = [];
  for (const name of readdirSync(examples)) {
    const project = join(out, name);
    cpSync(join(examples, name), project, { recursive: true, filter: (src) => !/generated|node_modules|package(-lock)?\.json/.test(src) });
    const yml = join(project, "auwgent.yml");
    writeFileSync(yml, readFileSync(yml, "utf8").replace(/targets:[\s\S]*$/, "targets:\n  - ts\n"));
    execFileSync(PYTHON, ["-m", "auwgent", "generate", project], { stdio: "pipe" });
    const found = spawnSync("find", [join(project, "generated"), "-name", "*.agent.types.ts"], { encoding: "utf8" }).stdout.trim().split("\n");
    files.push(...found.filter(Boolean));
  }
  assert.ok(files.length >= 7, files.join(", "));
  const args = ["--strict", "--noEmit", "--module", "esnext", "--moduleResolution", "bundler", "--target", "es2022", "--skipLibCheck"];
  const result = spawnSync(join(bin, "tsc"), [...args, ...files], { encoding: "utf8" });
  assert.equal(result.status, 0, result.stdout + result.stderr);
});

/** Run test/manual/<name>/app.ts with tsx against fake servers scripted with `script`. */
async function runApp(name, script) {
  generate(name);
  const fakes = await startFakes({ api_key: "YOUR_API_KEY", ...script });
  const env = { ...process.env, OPENAI_BASE_URL: fakes.urls.openai, GEMINI_BASE_URL: fakes.urls.gemini };
  const app = spawnSync(join(bin, "tsx"), [join(manual, name, "app.ts")], { encoding: "utf8", env, cwd: join(manual, name) });
  const requests = await fakes.stop();
  assert.equal(app.status, 0, app.stdout + app.stderr);
  return { stdout: app.stdout, stderr: app.stderr, requests };
}

const block = (kind, name, body) => `[${kind}${name ? `: ${name}` : ""}]\n${body}\n[/${kind}]`;

test("Getting Started: context reaches the prompt, text streams and arrives final", async () => {
  const { stdout, requests } = await runApp("getting-started", {
    gemini: [{ text: block("response_text", null, "Hello, Auwgent! Welcome back."), chunk_size: 5 }],
  });
  assert.match(stdout, /^Hello, Auwgent! Welcome back\.Hello, Auwgent! Welcome back\.\n$/);
  const [req] = requests.gemini;
  assert.match(req.path, /\/v1beta\/models\/gemini-2\.5-flash:streamGenerateContent$/);
  const system = req.body.systemInstruction.parts[0].text;
  assert.match(system, /^Greet Auwgent warmly: they are a VIP\./);
  assert.deepEqual(req.body.contents, [{ role: "user", parts: [{ text: "hello" }] }]);
});

test("Tools: a typed async tool runs, { skip: true } and { result } control calls", async () => {
  const calls = [
    block("tool_call", "get_weather", "location: Accra"),
    block("tool_call", "get_forecast", "location: Accra\ndays: 2"),
    block("tool_call", "delete_records", "table: users"),
  ].join("\n");
  const { stdout, requests } = await runApp("tools", {
    openai: [{ text: calls, chunk_size: 7 }, { text: block("response_text", null, "Sunny in Accra.") }],
  });
  assert.match(stdout, /Skipping dangerous tool call/);
  assert.match(stdout, /tool_result: get_weather "\{\\"temperature\\":28,\\"condition\\":\\"sunny\\"\}"/);
  assert.match(stdout, /tool_result: get_forecast "Sunny, 28°C"/);
  assert.match(stdout, /tool_skipped: delete_records/);
  assert.match(stdout, /answer: Sunny in Accra\./);
  assert.equal(requests.openai.length, 2);
  const results = requests.openai[1].body.messages.at(-1).content;
  assert.match(results, /\[tool_result: get_weather\]\nargs: \{"location":"Accra"\}\nresult: \{"temperature":28,"condition":"sunny"\}/);
  assert.match(results, /\[tool_skipped: delete_records\]/);
  assert.match(requests.openai[0].body.messages[0].content, /- get_weather\(location: string\): WeatherResult \/\/ Gets the current weather/);
});

test("Workflows: the workflow runs its scoped tool; the model calling it directly is refused", async () => {
  const first = [block("workflow_call", "delete_user", "id: user_1"), block("tool_call", "remove_user", "id: user_2")].join("\n");
  const { stdout, requests } = await runApp("workflows", {
    gemini: [{ text: first }, { text: block("response_text", null, "Done.") }],
  });
  assert.match(stdout, /workflow triggered: delete_user/);
  assert.match(stdout, /tool_result: remove_user/);
  assert.match(stdout, /workflow result: \{ name: 'delete_user', args: \{ id: 'user_1' \}, result: 'user deleted' \}/);
  assert.match(stdout, /tool_error: remove_user Tool not found: remove_user/);
  assert.doesNotMatch(requests.gemini[0].body.systemInstruction.parts[0].text, /remove_user/);
  assert.equal(requests.gemini.length, 2);
});

test("Helpers: default mode returns parsed output; handoff user then continue; handoff user resumes", async () => {
  const replies = [
    block("helper_call", "DataAnalyzer", "analysis_request: low stock"),
    block("tool_call", "db_query", "filter: stock"),
    block("schema", "AnalysisReport", "summary: Two items are low"),
    block("response_text", null, "Report ready."),
    block("helper_call", "Greeter", "input: greet the user"),
    block("response_text", null, "Hello there!"),
    block("response_text", null, "Anything else?"),
    block("helper_call", "Support", "input: double charge"),
    block("response_text", null, "Which invoice?"),
    block("response_text", null, "Refunded.") + "\n" + block("custom", "handoff_complete", "summary: refunded invoice 42"),
  ].map((text) => ({ text }));
  const { stdout, requests } = await runApp("helpers", { gemini: replies });
  assert.match(stdout, /helper invoked: DataAnalyzer/);
  assert.match(stdout, /DataAnalyzer returned structured output: \{ type: 'AnalysisReport', response: \{ summary: 'Two items are low' \} \}/);
  assert.match(stdout, /helper finished: DataAnalyzer \{\n?\s*name: 'DataAnalyzer',/);
  assert.match(stdout, /Main says: Report ready\./);
  assert.match(stdout, /Greeter says: Hello there!/);
  assert.match(stdout, /Main says: Anything else\?/);
  assert.match(stdout, /Support says: Which invoice\?/);
  assert.match(stdout, /stack after handoff: Main,Support/);
  assert.match(stdout, /Support says: Refunded\./);
  assert.match(stdout, /stack after completion: Main/);
  assert.equal(requests.gemini.length, 10);
  // The helper's granted tool reaches it; the parent sees the helper's parsed output.
  assert.match(requests.gemini[1].body.systemInstruction.parts[0].text, /- db_query\(filter: string\): string/);
  assert.match(JSON.stringify(requests.gemini[3].body.contents), /\[helper_result: DataAnalyzer\]\\nargs: \{\\"analysis_request\\":\\"low stock\\"\}\\nresult: \{\\"summary\\":\\"Two items are low\\"\}/);
  // The resumed run goes to Support with its own history.
  assert.match(requests.gemini[9].body.systemInstruction.parts[0].text, /^You handle billing questions\./);
  assert.equal(requests.gemini[9].body.contents.at(-1).parts[0].text, "It was invoice 42");
});

test("Middleware: onRunStart sets context and restores the session; onRunComplete saves it", async () => {
  const { stdout, requests } = await runApp("middleware", {
    gemini: [
      { text: block("response_text", null, "Hi Ama.") },
      { text: block("helper_call", "Researcher", "input: prices") },
      { text: block("response_text", null, "Prices are up.") },
      { text: block("response_text", null, "Hi again.") },
    ],
  });
  assert.match(requests.gemini[0].body.systemInstruction.parts[0].text, /^Help Ama\. They are a VIP\./);
  assert.equal(requests.gemini[1].body.contents.length, 3);
  // the middleware targeted at Researcher ran for the helper's model call only
  assert.equal(stdout.match(/researcher onLLMStart: Researcher/g).length, 1);
  assert.equal(stdout.match(/trace string true/g).length, 2);
  assert.match(stdout, /turns saved: 2/);
});

test("Custom Intents: Planning and Dialogue arrive typed", async () => {
  const text = [
    block("custom", "Planning", "step: Collect user constraints\nconfidence: 0.92\nrationale: Need constraints first"),
    block("custom", "Dialogue", "tone: calm\nsummary: I will ask two questions"),
  ].join("\n");
  const { stdout, requests } = await runApp("custom-intents", { gemini: [{ text, chunk_size: 4 }] });
  assert.match(stdout, /step: Collect user constraints\nconfidence: 0\.92\ntone: calm\nsummary: I will ask two questions/);
  assert.equal(requests.gemini.length, 1);
  assert.match(requests.gemini[0].body.systemInstruction.parts[0].text, /- Planning \{ step: string, confidence: number, rationale: string \} \/\/ Emit a structured execution plan/);
});
