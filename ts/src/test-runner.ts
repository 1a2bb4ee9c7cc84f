// `node dist/test-runner.js OUTPUT`: what `auwgent test --runtime ts` starts. It reads one JSON
// job on stdin, `{"root": <the project's source root>, "specs": [<test spec>, ...],
// "documents": {<agent>: {"ir": <IR document>, "floats": [<JSON pointer>, ...]}}}`, runs every
// spec on this runtime (testing.ts) and writes `{"runtime": <version>, "outcomes": [...]}` to the
// file OUTPUT (not to stdout, which the agents' tools may write to). A job it cannot read is
// said on stderr with exit code 2, a failure of the runner itself with 1; failing tests are
// outcomes, not exit codes.

import { readFileSync, writeFileSync } from "node:fs";
import { RUNTIME_VERSION } from "./agent.js";
import { runTests, type TestDocument, type TestOutcome, type TestSpec } from "./testing.js";

const USAGE = 2;

interface Job {
  root: string;
  specs: TestSpec[];
  documents: Record<string, TestDocument>;
}

function fail(message: string): never {
  process.stderr.write(`auwgent test-runner: ${message}\n`);
  process.exit(USAGE);
}

function readJob(): Job {
  let job: unknown;
  try {
    job = JSON.parse(readFileSync(0, "utf8"));
  } catch (error) {
    fail(`the job on stdin is not JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  const given = job as Partial<Job> | null;
  if (given === null || typeof given !== "object" || Array.isArray(given)) fail("the job on stdin is not a JSON object");
  if (typeof given.root !== "string") fail("the job has no `root` (a folder)");
  if (!Array.isArray(given.specs)) fail("the job has no `specs` (a list)");
  if (given.documents === null || typeof given.documents !== "object" || Array.isArray(given.documents)) fail("the job has no `documents` (an object)");
  return given as Job;
}

/** JSON for any value an intent may carry: what JSON cannot hold is written as its text. */
function replacer(_key: string, value: unknown): unknown {
  if (typeof value === "bigint" || typeof value === "function" || typeof value === "symbol") return String(value);
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  return value;
}

const output = process.argv[2];
if (!output) fail("usage: node test-runner.js OUTPUT_FILE < job.json");
const job = readJob();
let outcomes: TestOutcome[];
try {
  outcomes = await runTests(job.specs, job.documents, job.root);
  writeFileSync(output, JSON.stringify({ runtime: RUNTIME_VERSION, outcomes }, replacer));
} catch (error) {
  // A test's own failures are outcomes; this is the runner's (a job of the wrong shape, an
  // output file it cannot write): said in one line, without a stack.
  process.stderr.write(`auwgent test-runner: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}\n`);
  process.exit(1);
}
process.exit(0); // a tool or a client left open must not keep the runner alive
