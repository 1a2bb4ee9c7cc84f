// The manual's TypeScript tabs (test/manual/*/app.ts, written as printed) type-check with
// tsc --strict and run end to end against the fake OpenAI and Gemini servers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
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
