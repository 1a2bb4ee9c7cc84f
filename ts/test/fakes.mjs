// Runs test/fakes.py (the Python package's fake provider servers) for one test.
import { spawn } from "node:child_process";
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
