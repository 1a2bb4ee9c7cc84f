// Runs test/fakes.py (the Python package's fake provider servers) for one test.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

const here = dirname(fileURLToPath(import.meta.url));
export const PYTHON = process.env.AUWGENT_PYTHON || join(here, "..", "..", ".venv", "bin", "python");

/** Start the fake servers with `script`; returns { urls, stop() } where stop() gives the requests. */
export async function startFakes(script) {
  const dir = mkdtempSync(join(tmpdir(), "auwgent-fakes-"));
  const file = join(dir, "script.json");
  writeFileSync(file, JSON.stringify(script));
  const child = spawn(PYTHON, [join(here, "fakes.py"), file], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout });
  const iterator = lines[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done) throw new Error("the fake servers did not start");
  const urls = JSON.parse(first.value);
  return {
    urls,
    async stop() {
      child.stdin.end();
      const last = await iterator.next();
      lines.close();
      return JSON.parse(last.value);
    },
  };
}

/** The IR of an .agent source, compiled by the Python compiler. */
export function compileIr(source) {
  const code = [
    "import json, sys",
    "from auwgent.compiler.pipeline import compile_sources",
    "r = compile_sources({'main.agent': sys.stdin.read()})",
    "r.raise_for_errors()",
    "print(json.dumps(r.documents['main.agent']))",
  ].join("\n");
  const out = execFileSync(PYTHON, ["-c", code], { input: source, encoding: "utf8" });
  return JSON.parse(out);
}
