// Decoding linear to the caps: a text answer, a structured block and native tool-call
// arguments of 50 KB to 64 MB streamed in 8 KB pieces (partials after every piece, as when
// someone reads them), the median CPU time of three decodes per size (small bodies decoded
// several times per sample), the time per MB, the fitted log-log slope per kind (1.0 is
// linear; the aim is at most 1.1) and the heap growth at the largest size against the body.
// Bodies over 1 MB are refused by the final read (as documented) but still streamed.
//   node --expose-gc bench/decode.mjs [--quick]        (after `npx tsc -p .` in ts/)
import { BlocksDecoder } from "../dist/index.js";
import { NativeDecoder } from "../dist/native.js";

const PIECE = 8192;
const QUICK = process.argv.includes("--quick");
const SIZES = [50_000, 200_000, 800_000, 4 << 20, 16 << 20, 64 << 20].filter((s) => !QUICK || s <= 16 << 20);
const S = { kind: "string" };
const N = { kind: "number" };
const field = (name, type) => ({ name, type, optional: false, description: null });
const ITEM = { kind: "object", fields: [field("sku", S), field("qty", N), field("note", S)] };
const REPORT = { kind: "object", fields: [field("title", S), field("items", { kind: "array", items: { kind: "ref", name: "Item" } })] };
const types = { Item: ITEM, Report: REPORT };
const save = { kind: "tool", name: "save", description: "", params: REPORT.fields, returns: S, configured: true, examples: [] };
const TEXT = { agent: "Bench", callables: [], intents: [], output: { kind: "text" }, types: {}, examples: [] };
const SCHEMA = { agent: "Bench", callables: [save], intents: [], output: { kind: "ref", name: "Report" }, types, examples: [] };

function bigText(size) {
  const line = "The quick brown fox jumps over the lazy dog, again and again. ";
  return line.repeat(Math.ceil(size / line.length)).slice(0, size);
}

function bigJson(size) {
  const items = [];
  let length = 0;
  for (let i = 0; length < size; i++) {
    const item = JSON.stringify({ sku: `sku-${i}`, qty: i, note: "restock soon ".repeat(i % 4) });
    items.push(item);
    length += item.length + 2;
  }
  return `{"title": "inventory", "items": [${items.join(", ")}]}`;
}

const pieces = (text) => {
  const out = [];
  for (let i = 0; i < text.length; i += PIECE) out.push(text.slice(i, i + PIECE));
  return out;
};

const KINDS = {
  text: (n) => {
    const parts = pieces(`[response_text]\n${bigText(n)}\n[/response_text]`);
    return () => feedAll(new BlocksDecoder(TEXT, true), parts.map((text) => ({ type: "text", text })));
  },
  structured: (n) => {
    const parts = pieces(`[schema: Report]\n${bigJson(n)}\n[/schema]`);
    return () => feedAll(new BlocksDecoder(SCHEMA, true), parts.map((text) => ({ type: "text", text })));
  },
  "native arguments": (n) => {
    const events = [{ type: "tool_call_delta", index: 0, id: "c1", name: "tool__save", arguments: "" }];
    for (const piece of pieces(bigJson(n))) events.push({ type: "tool_call_delta", index: 0, id: null, name: null, arguments: piece });
    return () => feedAll(new NativeDecoder(SCHEMA, true), events);
  },
};

function feedAll(decoder, events) {
  let count = 0;
  for (const event of events) count += decoder.feed(event).length;
  return count + decoder.close().length;
}

function cpu(fn) {
  const start = process.cpuUsage();
  fn();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1e6;
}

function slope(points) {
  const xs = points.map(([n]) => Math.log(n));
  const ys = points.map(([, t]) => Math.log(t));
  const mx = xs.reduce((a, b) => a + b) / xs.length;
  const my = ys.reduce((a, b) => a + b) / ys.length;
  let num = 0;
  let den = 0;
  for (let i = 0; i < xs.length; i++) {
    num += (xs[i] - mx) * (ys[i] - my);
    den += (xs[i] - mx) ** 2;
  }
  return num / den;
}

/** The heap in use right after a decode, over the heap before it (the decode's garbage collected first): a lower bound of its peak. */
function heapGrowth(run) {
  globalThis.gc?.();
  const before = process.memoryUsage().heapUsed;
  run();
  return process.memoryUsage().heapUsed - before;
}

let steepest = 0;
console.log(`to the caps, ${PIECE / 1024} KB pieces, median of 3:`);
for (const [kind, make] of Object.entries(KINDS)) {
  const points = [];
  let growth = 0;
  for (const size of SIZES) {
    const run = make(size);
    const loops = Math.max(1, Math.floor((8 << 20) / size));
    run(); // warm-up
    const times = [0, 1, 2].map(() => cpu(() => { for (let i = 0; i < loops; i++) run(); }) / loops).sort((a, b) => a - b);
    points.push([size, times[1]]);
    if (size === SIZES[SIZES.length - 1]) growth = heapGrowth(run) / size;
    console.log(`  ${kind.padStart(16)} ${(size / 1e6).toFixed(2).padStart(6)} MB: ${(times[1] * 1e3).toFixed(1).padStart(8)} ms  ${((times[1] / (size / 1e6)) * 1e3).toFixed(1).padStart(6)} ms/MB`);
  }
  const s = slope(points);
  steepest = Math.max(steepest, s);
  console.log(`  ${kind.padStart(16)}: log-log slope ${s.toFixed(2)}; heap left grown at ${(SIZES[SIZES.length - 1] / 1e6).toFixed(0)} MB ${growth.toFixed(2)}x the body (a lower bound of the peak)`);
}
console.log(`target: every slope at most 1.1: ${steepest.toFixed(2)} ${steepest <= 1.1 ? "holds" : "DOES NOT HOLD"}`);
