// The `test` blocks of .agent files on this runtime (src/testing.ts, what `auwgent test
// --runtime ts` starts), against the Python runner (auwgent.testing.dsl) on the same specs:
// the same problems and the same recorded intents, value for value, for every test of
// tests/data/test_blocks; and the rule by which expected values match, case by case.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { compare, runTests, subset } from "../dist/testing.js";
import { PYTHON } from "./fakes.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const BLOCKS = join(here, "..", "..", "tests", "data", "test_blocks");

// The project's specs and documents as the CLI hands them over, and the Python runner's outcomes.
const PY_RUN = `
import asyncio, json, sys
from pathlib import Path
from auwgent.compiler import compile_project
from auwgent.console import display_path
from auwgent.project import load_project
from auwgent.testing.dsl import project_tests, run_tests
from auwgent.testing.dsl_ts import _job
project = load_project(Path(sys.argv[1]))
result = compile_project(project.files, project.source_root, display=display_path)
specs = project_tests(result)
docs = {doc["root"]: doc for doc in result.documents.values()}
outcomes = asyncio.run(run_tests(specs, docs, project.source_root))
print(json.dumps({"job": json.loads(_job(specs, docs, project.source_root)),
                  "outcomes": [{"name": o.name, "problems": o.problems,
                                "intents": [list(i) for i in o.intents]} for o in outcomes]}))
`;

test("every test of tests/data/test_blocks: the Python runner's problems and intents", async () => {
  const { job, outcomes: python } = JSON.parse(execFileSync(PYTHON, ["-c", PY_RUN, BLOCKS], { encoding: "utf8" }));
  const outcomes = await runTests(job.specs, job.documents, job.root);
  assert.equal(outcomes.length, 9);
  assert.deepEqual(
    outcomes.map((o) => o.name),
    python.map((o) => o.name),
  );
  for (const [i, outcome] of outcomes.entries()) {
    assert.deepEqual(outcome.problems, python[i].problems, outcome.name);
    assert.deepEqual(outcome.intents, python[i].intents, outcome.name);
  }
  assert.equal(outcomes.filter((o) => o.problems.length).length, 3);
});

test("a test whose agent cannot be built reports why (Python's words), and the runner goes on", async () => {
  const { job } = JSON.parse(execFileSync(PYTHON, ["-c", PY_RUN, BLOCKS], { encoding: "utf8" }));
  const [first, second] = job.specs;
  const broken = { ...first, config: "nope" };
  const outcomes = await runTests([broken, second], job.documents, job.root);
  assert.deepEqual(outcomes[0].problems, ["the agent could not run: ConfigError: config: unknown config 'nope'; valid configs: default, native"]);
  assert.deepEqual(outcomes[0].intents, []);
  assert.deepEqual(outcomes[1].problems, []);
});

// [expected, actual, matches?] as the Python runner's _subset decides (checked below).
const SUBSETS = [
  [{ a: 1 }, { a: 1, b: 2 }, true],
  [{ a: 1 }, { b: 1 }, false],
  [{ a: null }, {}, false],
  [{ a: null }, { a: null }, true],
  [{ a: { b: [1, 2] } }, { a: { b: [1, 2], c: 3 } }, true],
  [{ a: [1, 2] }, { a: [1, 2, 3] }, false],
  [[{ a: 1 }], [{ a: 1, b: 2 }], false],
  [1, true, false],
  [true, 1, true],
  [1, 1.0, true],
  ["1", 1, false],
  [[true], [1], true],
  [{}, "text", false],
  [{}, {}, true],
  ["é", "é", true],
];

test("matching by subset: Python's rule, case by case", () => {
  const code = [
    "import json, sys",
    "from auwgent.testing.dsl import _subset",
    "print(json.dumps([_subset(e, a) for e, a, _ in json.loads(sys.stdin.read())]))",
  ].join("\n");
  const python = JSON.parse(execFileSync(PYTHON, ["-c", code], { input: JSON.stringify(SUBSETS), encoding: "utf8" }));
  for (const [i, [expected, actual, matches]] of SUBSETS.entries()) {
    assert.equal(python[i], matches, `python, case ${i}`);
    assert.equal(subset(expected, actual), matches, `case ${i}: ${JSON.stringify([expected, actual])}`);
  }
});

test("the failure lines: Python's wording and JSON (ASCII, sorted output keys)", () => {
  const expects = [
    { kind: "called", name: "f", args: { x: "ç", n: 2 } },
    { kind: "called", name: "g", args: {} },
    { kind: "not_called", name: "h", args: null },
    { kind: "text", contains: "naïve" },
    { kind: "output", value: { z: 1, a: "ü" } },
    { kind: "error", contains: null },
    { kind: "intent", name: "Plan", fields: { step: "é" } },
    { kind: "intent", name: "Other", fields: {} },
  ];
  const intents = [["response_text", { text: "hi" }, "A"]];
  const problems = compare(expects, intents, [["h", {}]], null);
  assert.deepEqual(problems, [
    'called f(x = "ç", n = 2)',
    "called g",
    "not called h",
    'text contains "na\\u00efve"',
    'output {"a": "\\u00fc", "z": 1}',
    "error",
    'intent Plan {"step": "\\u00e9"}',
    "intent Other",
  ]);
  const code = [
    "import json, sys",
    "from auwgent.testing.dsl import _compare",
    "e, i, c = json.loads(sys.stdin.read())",
    "print(json.dumps(_compare(e, [tuple(x) for x in i], [tuple(x) for x in c], None)))",
  ].join("\n");
  const python = JSON.parse(execFileSync(PYTHON, ["-c", code], { input: JSON.stringify([expects, intents, [["h", {}]]]), encoding: "utf8" }));
  assert.deepEqual(problems, python);
});

test("an error the test did not expect fails it; one it expected does not", () => {
  const intents = [
    ["tool_error", { tool: "t", message: "t broke" }, "A"],
    ["error", { message: "the run failed" }, "A"],
  ];
  assert.deepEqual(compare([], intents, [], null), ["no error, but the run reported: t broke", "no error, but the run reported: the run failed"]);
  assert.deepEqual(compare([{ kind: "error", contains: "broke" }], intents, [], null), []);
  assert.deepEqual(compare([{ kind: "error", contains: "absent" }], intents, [], null), ['error contains "absent"']);
});
