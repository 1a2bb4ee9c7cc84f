// Code mode in the TypeScript runtime (src/code_mode.ts, docs/code-mode.md): what the
// conformance vectors (engine/code/...) cannot show. The stub and the config errors are
// compared with the Python runtime's own (test/code_mode_py.py); the rest runs real code in
// the real sandbox (@pydantic/monty).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { ConfigError, ScriptedModel, apiStub, createAgent } from "../dist/index.js";
import { PYTHON, compileIr } from "./fakes.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const python = (request) => JSON.parse(execFileSync(PYTHON, [join(here, "code_mode_py.py"), JSON.stringify(request)], { encoding: "utf8" }));

const SOURCE = `
agent Main {
    default config { model: openai("gpt-4o") prompt: "You help." codeMode: true maxToolLoops: 3 }
    tool lookup(q: string): string
    tool slow(n: number): number
}
`;
const IR = compileIr(SOURCE);
const meta = { irHash: IR.hash, compilerVersion: IR.compiler_version, irVersion: IR.ir_version };
const S = { kind: "string" };
const N = { kind: "number" };
const field = (name, type, optional = false, description = null) => ({ name, type, optional, description });

/** One run whose model sends `code` to execute_code, then answers; the intents it emitted. */
async function runCode(code, config = {}, ir = IR) {
  const provider = new ScriptedModel([`[tool_call: execute_code]\n${code}\n[/tool_call]`, "[response_text]\nDone.\n[/response_text]"]);
  const agent = createAgent(ir, { provider, ...config }, { ...meta, irHash: ir.hash });
  const intents = [];
  agent.onIntent((name, value, who) => void intents.push({ name, value, who }));
  await agent.run("go");
  return intents;
}

const outcome = (intents) => intents.filter((i) => i.value.name === "execute_code" || i.value.tool === "execute_code").at(-1);

test("the api stub is Python's for odd callables and types", () => {
  const cases = [
    {
      callables: [
        { kind: "tool", name: "send", description: 'Sends "mail"\nwith a \\ backslash """ and more', params: [field("from", S), field("to", S)], returns: { kind: "ref", name: "Mail" } },
        { kind: "tool", name: "pick", description: "", params: [field("a", S, true, "first\n  one"), field("b", N), field("c", { kind: "literal", value: "x" }, true)], returns: { kind: "array", items: { kind: "union", variants: [S, N] } }, configured: false },
        { kind: "workflow", name: "flow", description: "Runs", params: [], returns: { kind: "boolean" } },
        { kind: "helper", name: "Helper", description: "Helps with a description long enough that it and its note do not fit on one line together", params: [field("input", S, false, "the request for the helper")], returns: { kind: "ref", name: "Empty" } },
        { kind: "tool", name: "class", description: "a keyword: left out", params: [], returns: S },
        { kind: "tool", name: "anything", description: "", params: [field("x", { kind: "object", fields: [] })], returns: { kind: "ref", name: "Alias" } },
      ],
      types: {
        Mail: { kind: "object", fields: [field("from", S), field("subject", S, true)] },
        Empty: { kind: "object", fields: [] },
        Alias: { kind: "union", variants: [{ kind: "ref", name: "Mail" }, S] },
      },
      examples: [
        { kind: "tool", target: "send", args: { from: "a@b.c", to: "it's \"here\"" } },
        { kind: "tool", target: "pick", args: { b: 2.5, a: "x", c: null } },
        { kind: "workflow", target: "flow", args: {} },
      ],
    },
    { callables: [], types: {}, examples: [] },
  ];
  const expected = python({ do: "stub", cases });
  assert.deepEqual(
    cases.map((c) => apiStub(c.callables.map((s) => ({ configured: true, examples: [], ...s })), c.types, c.examples)),
    expected,
  );
});

test("codeMode and codeLimits are refused with Python's words", () => {
  const configs = [
    { codeMode: "yes" },
    { codeMode: 1 },
    { codeLimits: 5 },
    { codeLimits: [] },
    { codeLimits: { timeout: 0 } },
    { codeLimits: { timeout: "1" } },
    { codeLimits: { memory: 1.5 } },
    { codeLimits: { maxCalls: 0 } },
    { codeLimits: { maxOutput: null } },
    { codeLimits: { maxCals: 3 } },
    { codeLimits: { timeout: 0.5, memory: 1000, maxCalls: 1, maxOutput: 1 } },
    { codeMode: false },
  ];
  const expected = python({ do: "config", ir: IR, configs });
  const got = configs.map((config) => {
    try {
      createAgent(IR, { provider: "offline", ...config }, meta);
      return null;
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      return `ConfigError: ${error.message}`;
    }
  });
  // The one difference: an unknown key's "did you mean" hint is Python's own spelling checker.
  assert.equal(got[9], "ConfigError: codeLimits.maxCals: unknown config key (valid keys: timeout, memory, maxCalls, maxOutput)");
  assert.match(expected[9], /^ConfigError: codeLimits\.maxCals: unknown config key/);
  assert.deepEqual(got.slice(0, 9).concat(got.slice(10)), expected.slice(0, 9).concat(expected.slice(10)));
});

test("without @pydantic/monty, auwgent(config) says what to install; without code mode nothing is asked", async () => {
  const dir = mkdtempSync(join(tmpdir(), "auwgent-nomonty-"));
  cpSync(join(here, "..", "dist"), join(dir, "dist"), { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  const isolated = await import(pathToFileURL(join(dir, "dist", "index.js")).href);
  const build = (ir, config = {}) => () => isolated.createAgent(ir, { provider: "offline", ...config }, { ...meta, irHash: ir.hash });
  assert.throws(build(IR), (e) => e instanceof isolated.ConfigError && e.message === "code mode needs the Monty sandbox (@pydantic/monty), an optional peer dependency of auwgent: npm install @pydantic/monty");
  build(IR, { codeMode: false })(); // the runtime config turns it off: the sandbox is not needed
  const plain = compileIr(SOURCE.replace(" codeMode: true", ""));
  build(plain)();
  assert.throws(build(plain, { codeMode: true }), /needs the Monty sandbox/);
});

test("time spent inside api calls is not the code's: a slow tool does not time the code out", async () => {
  const tools = { slow: async ({ n }) => (await new Promise((r) => setTimeout(r, 300)), n * 2), lookup: async () => "x" };
  const intents = await runCode("import api\n[api.slow(1), api.slow(2), api.slow(3)]", { tools, codeLimits: { timeout: 0.5 } });
  const done = outcome(intents);
  assert.equal(done.name, "tool_result");
  assert.deepEqual(done.value.result, { value: [2, 4, 6], printed: "" });
});

test("the code's own time adds up across its api calls", async () => {
  // Each stretch between calls stays under the limit; together they pass it.
  const tools = { slow: async ({ n }) => n, lookup: async () => "x" };
  const spin = "    t = 0\n    for i in range(400000):\n        t += i\n";
  const code = `import api\nfor k in range(40):\n${spin}    api.slow(k)\n1`;
  const intents = await runCode(code, { tools, codeLimits: { timeout: 0.3, maxCalls: 50 } });
  const done = outcome(intents);
  assert.equal(done.name, "tool_error");
  assert.match(done.value.message, /^TimeoutError: time limit exceeded: [0-9.]+ms > 300ms \(codeLimits\.timeout is 0\.3 s\)$/);
  assert.ok(intents.filter((i) => i.name === "tool_result" && i.value.name === "slow").length >= 1, "some calls ran before the limit");
});

test("a value the host cannot carry is a clear error naming the line; big but safe integers pass", async () => {
  const big = outcome(await runCode("import api\nx = 1\n2 ** 70"));
  assert.equal(big.name, "tool_error");
  assert.equal(big.value.message, "line 3: the value of the code's last expression cannot be returned: it holds an integer too large for this runtime's JSON numbers (beyond ±9007199254740991)");
  const safe = outcome(await runCode("import api\n2 ** 50"));
  assert.deepEqual(safe.value.result, { value: 2 ** 50, printed: "" });
  const arg = outcome(await runCode("import api\nimport json\ntry:\n    api.slow(json.loads('1' * 30))\nexcept ValueError as e:\n    r = str(e)\nr", { tools: { slow: async () => 1 } }));
  assert.equal(arg.value.result.value, "api.slow(): an argument cannot be passed: it holds an integer too large for this runtime's JSON numbers (beyond ±9007199254740991)");
});

test("middleware sees an inner call with its via and a rawBlock naming it; the code gets the value back", async () => {
  const seen = [];
  const middleware = [{ name: "m", onIntent: (name, value, ctx) => void (name === "tool_call" && seen.push([value.type, value.via ?? null, ctx.rawBlock])) }];
  const intents = await runCode('import api\napi.lookup("a") + "!"', { middleware, tools: { lookup: async ({ q }) => `found ${q}` } });
  assert.deepEqual(seen, [
    ["execute_code", null, '[tool_call: execute_code]\nimport api\napi.lookup("a") + "!"\n[/tool_call]'],
    ["lookup", "execute_code", "api.lookup(...)"],
  ]);
  assert.deepEqual(outcome(intents).value.result, { value: "found a!", printed: "" });
});

test("a name the code calls that is not in api is a NameError in the code, never a call", async () => {
  const intents = await runCode("import api\ntry:\n    exec('1')\nexcept NameError as e:\n    r = str(e)\nr", { tools: { lookup: async () => "x" } });
  const done = outcome(intents);
  // exec is unknown to the type check too: nothing runs.
  assert.equal(done.name, "tool_error");
  assert.match(done.value.message, /^the code failed its type check \(nothing ran\):\nline 3, column 5: error\[unresolved-reference\] Name `exec` used when not defined/);
  assert.equal(intents.filter((i) => i.name === "tool_call").length, 1);
});

test("the code runs in sandbox workers: the application's event loop goes on meanwhile", async () => {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 10);
  const started = performance.now();
  const intents = await runCode("import api\nt = 0\nfor i in range(3000000):\n    t += i\nt", { codeLimits: { timeout: 20 } });
  clearInterval(timer);
  const elapsed = performance.now() - started;
  assert.equal(outcome(intents).value.result.value, 4499998500000);
  // The loop went on while the code ran: code run on the loop itself would have let no timer
  // fire before it finished (whatever the machine's load).
  assert.ok(ticks > 0, `${ticks} ticks in ${elapsed.toFixed(0)} ms`);
});

test("many executions at once each get their own values back", async () => {
  const tools = { slow: async ({ n }) => (await new Promise((r) => setTimeout(r, 20 + (n % 3) * 15)), n * 10), lookup: async ({ q }) => q.toUpperCase() };
  const runs = Array.from({ length: 12 }, (_, k) => runCode(`import api\ntotal = 0\nfor i in range(3):\n    total += api.slow(${k} + i)\n[total, api.lookup("r${k}")]`, { tools }));
  const results = (await Promise.all(runs)).map((intents) => outcome(intents).value.result.value);
  assert.deepEqual(
    results,
    Array.from({ length: 12 }, (_, k) => [(3 * k + 3) * 10, `R${k}`]),
  );
});

test("an execution that finds every worker busy for its whole timeout fails, and none of its code runs", async () => {
  const workers = Math.max(1, cpus().length);
  // Each busy execution calls api.lookup first, then spins: once every one has made its call,
  // its next step (the spin) takes a worker at once, in the microtasks that follow the call.
  const spin = 'import api\napi.lookup("start")\nt = 0\nfor i in range(12000000):\n    t += i\nt';
  let begun = 0;
  let allBegun;
  const everyone = new Promise((resolve) => (allBegun = resolve));
  const started = { lookup: async () => (++begun === workers && allBegun(), "go") };
  const busy = Array.from({ length: workers }, () => runCode(spin, { tools: started, codeLimits: { timeout: 60 } }));
  await everyone;
  await new Promise((r) => setTimeout(r, 0)); // a macrotask later: their spins hold every worker
  const tools = { lookup: async () => assert.fail("no code of this execution may run") };
  const late = outcome(await runCode('import api\napi.lookup("x")', { tools, codeLimits: { timeout: 0.2 } }));
  assert.equal(late.name, "tool_error");
  assert.equal(late.value.message, `no sandbox worker became free within 0.2 s (codeLimits.timeout): all ${workers} were running other code, so none of this code ran`);
  for (const intents of await Promise.all(busy)) assert.equal(outcome(intents).name, "tool_result");
});

test("a module Python's sandbox has and this one lacks is a clear error saying so", async () => {
  const done = outcome(await runCode("import api\nx = 1\nimport collections\ncollections.Counter('aab')"));
  assert.equal(done.name, "tool_error");
  assert.equal(done.value.message, "line 3: ModuleNotFoundError: No module named 'collections' (the sandbox of this runtime, @pydantic/monty 0.0.18, does not have it; the Python runtime's does)");
});

test("a streamed execute_code block shows no code until it closes; the fence is removed", async () => {
  const body = "```python\n    import api\n    x = 6\n    x * 7\n```";
  const provider = new ScriptedModel([`[tool_call: execute_code]\n${body}\n[/tool_call]`, "[response_text]\nDone.\n[/response_text]"], { chunkSize: 3 });
  const agent = createAgent(IR, { provider }, meta);
  const partials = [];
  agent.onIntentPartial((name, value) => void (name === "tool_call" && partials.push(value.snapshot)));
  const finals = [];
  agent.onIntent((name, value) => void finals.push({ name, value }));
  await agent.run("go");
  assert.ok(partials.length > 0);
  for (const snapshot of partials) assert.ok(!JSON.stringify(snapshot ?? {}).includes("import api"), JSON.stringify(snapshot));
  assert.deepEqual(finals[0].value, { type: "execute_code", args: { code: "import api\nx = 6\nx * 7" } });
  assert.deepEqual(outcome(finals).value.result, { value: 42, printed: "" });
});

test("code with Windows line endings (a native call's argument) runs as it does in Python", async () => {
  const provider = new ScriptedModel([ScriptedModel.reply(ScriptedModel.call("tool__execute_code", { code: 'import api\r\nx = api.lookup("a")\r\nx + "!"' })), "Done."]);
  const agent = createAgent(IR, { provider, protocol: "native", tools: { lookup: async ({ q }) => q } }, meta);
  const intents = [];
  agent.onIntent((name, value) => void intents.push({ name, value }));
  await agent.run("go");
  assert.deepEqual(outcome(intents).value.result, { value: "a!", printed: "" });
});

test("a sandbox that cannot start fails the execution with the reason, and nothing hangs", async () => {
  // An install whose package is there but does not load (a broken native binary, say).
  const dir = mkdtempSync(join(tmpdir(), "auwgent-brokenmonty-"));
  cpSync(join(here, "..", "dist"), join(dir, "dist"), { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  const pkg = join(dir, "node_modules", "@pydantic", "monty");
  mkdirSync(pkg, { recursive: true });
  writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "@pydantic/monty", type: "module", exports: { ".": { default: "./index.js" } } }));
  const names = ["Monty", "MontyComplete", "MontyError", "MontyNameLookup", "MontyRuntimeError", "MontySnapshot", "MontyTypingError"];
  writeFileSync(join(pkg, "index.js"), names.map((n) => `export class ${n} {}\n`).join("") + 'throw new Error("the native binary did not load");\n');
  const isolated = await import(pathToFileURL(join(dir, "dist", "index.js")).href);
  const provider = new isolated.ScriptedModel(["[tool_call: execute_code]\nimport api\n1\n[/tool_call]", "[response_text]\nDone.\n[/response_text]"]);
  const agent = isolated.createAgent(IR, { provider }, meta);
  const intents = [];
  agent.onIntent((name, value) => void intents.push({ name, value }));
  await agent.run("go");
  const done = outcome(intents);
  assert.equal(done.name, "tool_error");
  assert.equal(done.value.message, "the sandbox stopped (the native binary did not load); nothing more of the code ran");
});
