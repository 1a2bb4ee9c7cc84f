// Input parts (images, files) in the TypeScript runtime: the same checks and messages as the
// Python runtime, and over real HTTP (the Python package's fake servers) the same wire shapes,
// the ones tests/runtime/providers/test_parts_sdk_requests.py checks against the official SDKs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { InputError, buildChatBody, buildGeminiBody, buildMessagesBody, createAgent, file, image, text, toolParts } from "../dist/index.js";
import { messageFromJson } from "../dist/session.js";
import { PYTHON, compileIr, startFakes } from "./fakes.mjs";

const PNG = Buffer.from("\x89PNG\r\n\x1a\n-tiny", "latin1");
const PDF = Buffer.from("%PDF-1.4\n>>?? %%EOF\n", "latin1");
const B64_PNG = PNG.toString("base64");
const B64_PDF = PDF.toString("base64");
const PNG_URL = "https://example.test/cat.png";
const PDF_URL = "https://example.test/report.pdf";
const ASK = "What is in these?";
const PARTS = [text(ASK), image(PNG, "image/png"), image(PNG_URL), file(PDF, "application/pdf", "report.pdf")];
const KEYS = { openaiApiKey: "k", geminiApiKey: "k", anthropicApiKey: "k" };

const IRS = new Map();
function agentFor(model, urls) {
  if (!IRS.has(model)) IRS.set(model, compileIr(`agent Main {\n  default config {\n    model: ${model}\n    prompt: "Describe."\n  }\n}\n`));
  const doc = IRS.get(model);
  const meta = { irHash: doc.hash, compilerVersion: doc.compiler_version, irVersion: doc.ir_version };
  const baseUrls = Object.fromEntries(Object.entries(urls).filter(([name]) => ["openai", "gemini", "anthropic"].includes(name)));
  return createAgent(doc, { apiKeys: KEYS, baseUrls, retry: { attempts: 1 } }, meta);
}

test("bad input is refused before anything runs, with the Python runtime's messages", async () => {
  const agent = agentFor('openai("gpt-4o")', { openai: "http://127.0.0.1:9" });
  const cases = [
    [42, "run(): the input must be a string or a list of parts, got number"],
    [[], "run(): the list of parts is empty"],
    [[text("x"), { type: "audio", data: B64_PNG }], "run(): part 2: unknown part type 'audio' (expected 'text', 'image' or 'file')"],
    [[{ type: "image", data: "not base64!", media_type: "image/png" }], "run(): part 1 (image): 'data' is not valid base64"],
    [[{ type: "image", data: B64_PNG }], "run(): part 1 (image): 'media_type' is missing (needed with 'data')"],
    [[{ type: "image", data: B64_PNG, media_type: "image/tiff" }], "run(): part 1 (image): unsupported media type 'image/tiff' (supported: image/gif, image/jpeg, image/png, image/webp)"],
    [[{ type: "image", url: "file:///etc/passwd" }], "run(): part 1 (image): 'url' must be an http(s):// or gs:// URL, got 'file:///etc/passwd'"],
    [[{ type: "image", url: PNG_URL, detail: "high" }], "run(): part 1 (image): unknown key(s) 'detail'"],
  ];
  for (const [given, message] of cases) await assert.rejects(agent.run(given), (e) => e instanceof InputError && e.message === message);
});

test("constructors read bytes, paths and URLs", () => {
  const dir = mkdtempSync(join(tmpdir(), "auwgent-parts-"));
  writeFileSync(join(dir, "cat.JPG"), PNG);
  writeFileSync(join(dir, "report.pdf"), PDF);
  assert.deepEqual(image(join(dir, "cat.JPG")), { type: "image", data: B64_PNG, media_type: "image/jpeg" });
  assert.deepEqual(file(join(dir, "report.pdf")), { type: "file", data: B64_PDF, media_type: "application/pdf", filename: "report.pdf" });
  assert.deepEqual(image("https://x.test/a.webp?s=2"), { type: "image", url: "https://x.test/a.webp?s=2", media_type: "image/webp" });
  assert.throws(() => image(PNG), /image\(\) \(image\): 'media_type' is missing/);
});

test("OpenAI gets image_url and file parts; the session keeps the parts for the next turn", async () => {
  const fakes = await startFakes({ openai: [{ text: "A cat." }, { text: "Grey." }] });
  const agent = agentFor('openai("gpt-4o")', fakes.urls);
  const session = await agent.run(PARTS);
  assert.deepEqual(session.turns[0].input, { text: ASK, parts: PARTS });
  await agent.run("What colour?", { session: JSON.parse(JSON.stringify(session)) });
  const [first, second] = (await fakes.stop()).openai;
  const user = {
    role: "user",
    content: [
      { type: "text", text: ASK },
      { type: "image_url", image_url: { url: `data:image/png;base64,${B64_PNG}` } },
      { type: "image_url", image_url: { url: PNG_URL } },
      { type: "file", file: { file_data: `data:application/pdf;base64,${B64_PDF}`, filename: "report.pdf" } },
    ],
  };
  assert.deepEqual(first.body.messages[1], user);
  assert.deepEqual(second.body.messages[1], user);
});

test("Gemini gets inlineData (URL-safe base64) and fileData parts", async () => {
  const fakes = await startFakes({ gemini: [{ text: "ok" }] });
  await agentFor('gemini("gemini-2.5-flash")', fakes.urls).run([...PARTS, file(PDF_URL)]);
  const [seen] = (await fakes.stop()).gemini;
  const safe = (b64) => b64.replace(/\+/g, "-").replace(/\//g, "_");
  assert.deepEqual(seen.body.contents.at(-1), {
    role: "user",
    parts: [
      { text: ASK },
      { inlineData: { data: safe(B64_PNG), mimeType: "image/png" } },
      { fileData: { fileUri: PNG_URL, mimeType: "image/png" } },
      { inlineData: { data: safe(B64_PDF), mimeType: "application/pdf" } },
      { fileData: { fileUri: PDF_URL, mimeType: "application/pdf" } },
    ],
  });
});

test("Anthropic gets image and document blocks", async () => {
  const fakes = await startFakes({ anthropic: [{ text: "ok" }] });
  await agentFor('anthropic("claude-sonnet-4-5")', fakes.urls).run([...PARTS, file(PDF_URL)]);
  const [seen] = (await fakes.stop()).anthropic;
  assert.deepEqual(seen.body.messages.at(-1), {
    role: "user",
    content: [
      { type: "text", text: ASK },
      { type: "image", source: { type: "base64", media_type: "image/png", data: B64_PNG } },
      { type: "image", source: { type: "url", url: PNG_URL } },
      { type: "document", source: { type: "base64", media_type: "application/pdf", data: B64_PDF } },
      { type: "document", source: { type: "url", url: PDF_URL } },
    ],
  });
});

test("a part the API cannot take fails before sending, naming the provider and the part", async () => {
  const fakes = await startFakes({});
  const cases = [
    ['openai("gpt-4o")', file(PDF_URL), `OpenAI API error: part 2 (file, url ${PDF_URL}) cannot be sent: Chat Completions takes files as base64 data only`],
    ['gemini("gemini-2.5-flash")', image("https://example.test/picture"), "Gemini API error: part 2 (image, url https://example.test/picture) cannot be sent: Gemini needs the media_type of a URL part"],
    ['anthropic("claude-sonnet-4-5")', image("gs://bucket/cat.png"), "Anthropic API error: part 2 (image, url gs://bucket/cat.png) cannot be sent: the Messages API fetches http(s) URLs only"],
  ];
  for (const [model, part, message] of cases) {
    const session = await agentFor(model, fakes.urls).run([text(ASK), part]);
    assert.equal(session.turns[0].status, "error");
    assert.ok(session.turns[0].error.includes(message), session.turns[0].error);
  }
  const seen = await fakes.stop();
  assert.deepEqual([seen.openai, seen.gemini, seen.anthropic], [[], [], []]);
});

// -- images from tools (toolParts), native tool loops

const CHART = `agent Main {\n  default config {\n    model: MODEL\n    prompt: "You draw charts."\n  }\n  tool draw_chart(city: string): string @desc "Draws a chart"\n}\n`;
const CHART_CALL = ["tool__draw_chart", { city: "Accra" }];

function chartAgent(model, urls) {
  const key = `chart:${model}`;
  if (!IRS.has(key)) IRS.set(key, compileIr(CHART.replace("MODEL", model)));
  const doc = IRS.get(key);
  const meta = { irHash: doc.hash, compilerVersion: doc.compiler_version, irVersion: doc.ir_version };
  const baseUrls = Object.fromEntries(Object.entries(urls).filter(([name]) => ["openai", "gemini", "anthropic"].includes(name)));
  const tools = { draw_chart: ({ city }) => toolParts(`chart of ${city}`, image(PNG, "image/png")) };
  return createAgent(doc, { apiKeys: KEYS, baseUrls, tools, protocol: "native", retry: { attempts: 1 } }, meta);
}

test("a tool's images reach each provider as the Python runtime sends them", async () => {
  const reply = [{ calls: [CHART_CALL] }, { text: "Done." }];
  const fakes = await startFakes({ openai: reply, gemini: reply, anthropic: reply });
  const sessions = [];
  for (const model of ['openai("gpt-4o")', 'gemini("gemini-2.5-flash")', 'anthropic("claude-sonnet-4-5")'])
    sessions.push(await chartAgent(model, fakes.urls).run("Chart Accra."));
  const seen = await fakes.stop();
  const png = { type: "image", data: B64_PNG, media_type: "image/png" };
  for (const session of sessions) {
    assert.equal(session.turns[0].status, "complete", session.turns[0].error);
    assert.deepEqual(session.turns[0].messages[1].parts, [png]);
  }
  const oa = seen.openai[1].body.messages;
  assert.deepEqual(oa.map((m) => m.role), ["system", "user", "assistant", "tool", "user"]);
  assert.deepEqual(oa.at(-1).content, [
    { type: "text", text: `The tool call ${oa[3].tool_call_id} returned these images:` },
    { type: "image_url", image_url: { url: `data:image/png;base64,${B64_PNG}` } },
  ]);
  const fr = seen.gemini[1].body.contents.at(-1).parts[0].functionResponse;
  assert.deepEqual(fr.parts, [{ inlineData: { data: B64_PNG.replace(/\+/g, "-").replace(/\//g, "_"), mimeType: "image/png" } }]);
  assert.deepEqual(fr.response, { result: "chart of Accra" });
  assert.deepEqual(seen.anthropic[1].body.messages.at(-1).content[0].content, [
    { type: "text", text: "chart of Accra" },
    { type: "image", source: { type: "base64", media_type: "image/png", data: B64_PNG } },
  ]);
});

// -- the same bodies as the Python adapters, request by request

const PY_BODIES = `
import json, sys
from auwgent.runtime.providers import FunctionSpec, ModelRequest
from auwgent.runtime.providers.anthropic import build_messages_body
from auwgent.runtime.providers.gemini import build_gemini_body
from auwgent.runtime.providers.openai import build_chat_body
from auwgent.runtime.session import message_from_json
out = []
for spec in json.load(sys.stdin):
    request = ModelRequest(model=spec["model"], system=spec["system"],
        messages=tuple(message_from_json(m) for m in spec["messages"]),
        functions=tuple(FunctionSpec(**f) for f in spec["functions"]), stream=False)
    out.append([build_chat_body(request), build_gemini_body(request), build_messages_body(request)])
print(json.dumps(out))
`;

test("request bodies with parts equal the Python adapters' (OpenAI, Gemini, Anthropic)", () => {
  const png = image(PNG, "image/png");
  const call = { id: "call_1", name: "tool__draw_chart", arguments: '{"city": "Accra"}' };
  const fn = { name: "tool__draw_chart", description: "Draws a chart", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } };
  const histories = [
    [{ role: "user", content: ASK, parts: [...PARTS, file(PDF, "application/pdf")] }], // no filename: the default
    [{ role: "user", content: ASK, parts: [text(ASK), image(PNG_URL)] }],
    [
      { role: "user", content: ASK, parts: [text(ASK), png] },
      { role: "assistant", content: "", tool_calls: [call, { ...call, id: "call_2" }] },
      { role: "tool", content: "chart of Accra", tool_call_id: "call_1", name: call.name, parts: [png] },
      { role: "tool", content: "no chart", tool_call_id: "call_2", name: call.name },
      { role: "user", content: "And Lagos?" },
    ],
  ];
  const requests = histories.map((messages) => ({ model: "m", system: "Describe.", messages, functions: [fn] }));
  const py = JSON.parse(execFileSync(PYTHON, ["-c", PY_BODIES], { input: JSON.stringify(requests), encoding: "utf8" }));
  requests.forEach((spec, i) => {
    const request = { ...spec, messages: spec.messages.map(messageFromJson), responseSchema: null, options: {}, stream: false };
    assert.deepEqual([buildChatBody(request), buildGeminiBody(request), buildMessagesBody(request)], py[i], `request ${i}`);
  });
});
