// The TypeScript runtime's names against conformance/vocabulary.json, which is generated from
// the Python package's one table (auwgent.ir.vocabulary): the same intents, hooks and runtime
// config keys, less what that table declares not yet in TypeScript.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { BUILTIN_INTENTS, CONFIG_KEYS, HOOKS } from "../dist/index.js";

const vocabulary = JSON.parse(readFileSync(new URL("../../conformance/vocabulary.json", import.meta.url), "utf8"));
const notYet = vocabulary.not_yet_in_typescript;

/** The Python list, less what TypeScript does not have yet, in the Python order. */
function expected(name) {
  const missing = new Set(notYet[name] ?? []);
  return vocabulary[name].filter((item) => !missing.has(item));
}

test("built-in intents: the table's, in its order, less the declared missing ones", () => {
  assert.deepEqual([...BUILTIN_INTENTS], expected("builtin_intents"));
});

test("middleware hooks: the table's names, in its order", () => {
  assert.deepEqual([...HOOKS], vocabulary.hooks.map((hook) => hook.name));
});

test("runtime config keys: the table's, less the declared missing ones", () => {
  assert.deepEqual([...CONFIG_KEYS].sort(), expected("runtime_config_keys").sort());
});

test("nothing declared missing is in fact there (the list only shrinks)", () => {
  const have = { builtin_intents: new Set(BUILTIN_INTENTS), runtime_config_keys: new Set(CONFIG_KEYS) };
  for (const [name, missing] of Object.entries(notYet)) {
    for (const item of missing) assert.ok(!have[name].has(item), `${name}: ${item} is in TypeScript now: take it off the list`);
  }
});
