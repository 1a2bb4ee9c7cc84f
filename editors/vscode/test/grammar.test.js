// The TextMate grammar, loaded as VS Code loads it (vscode-textmate with the oniguruma
// regex engine), tokenizes the fixture files with the expected scopes.
"use strict";

const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const { test } = require("node:test");
const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

const ROOT = path.join(__dirname, "..");
const GRAMMAR = path.join(ROOT, "syntaxes", "auwgent.tmLanguage.json");
const FIXTURES = path.join(__dirname, "fixtures");

async function loadGrammar() {
  const wasm = fs.readFileSync(path.join(path.dirname(require.resolve("vscode-oniguruma")), "onig.wasm"));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (text) => new oniguruma.OnigString(text),
    }),
    loadGrammar: async (scopeName) =>
      scopeName === "source.auwgent"
        ? vsctm.parseRawGrammar(fs.readFileSync(GRAMMAR, "utf8"), GRAMMAR)
        : null,
  });
  return registry.loadGrammar("source.auwgent");
}

/** Every token of `text` as {line, text, scopes}. */
function tokenize(grammar, text) {
  const tokens = [];
  let stack = vsctm.INITIAL;
  text.split("\n").forEach((line, index) => {
    const result = grammar.tokenizeLine(line, stack);
    for (const token of result.tokens) {
      tokens.push({
        line: index + 1,
        text: line.slice(token.startIndex, token.endIndex),
        scopes: token.scopes,
      });
    }
    stack = result.ruleStack;
  });
  return tokens;
}

/**
 * Expectations per fixture: [line, token text, a scope the token must have]; a scope
 * starting with "!" must NOT be among the token's scopes.
 */
const EXPECTED = {
  "sample.agent": [
    [1, "//", "punctuation.definition.comment.auwgent"],
    [1, "A sample for the grammar tests: every construct once.", "comment.line.double-slash.auwgent"],
    [2, "import", "keyword.control.import.auwgent"],
    [2, "from", "keyword.control.from.auwgent"],
    [2, "./types", "string.quoted.double.auwgent"],
    [4, "export", "storage.modifier.export.auwgent"],
    [4, "model", "storage.type.model.auwgent"],
    [4, "Fast", "entity.name.type.auwgent"],
    [5, "provider", "variable.other.property.auwgent"],
    [5, "gemini", "support.function.provider.auwgent"],
    [6, "0.7", "constant.numeric.auwgent"],
    [6, "-", "keyword.operator.auwgent"],
    [7, "40", "constant.numeric.auwgent"],
    [11, "type", "storage.type.type.auwgent"],
    [12, "type", "variable.other.property.auwgent"],
    [12, "type", "!storage.type.type.auwgent"],
    [12, "string", "support.type.primitive.auwgent"],
    [12, "@", "storage.type.annotation.auwgent"],
    [12, "desc", "storage.type.annotation.auwgent"],
    [13, "?", "keyword.operator.optional.auwgent"],
    [13, "Ticket", "entity.name.type.auwgent"],
    [16, "prompt", "storage.type.prompt.auwgent"],
    [16, "Greeting", "entity.name.type.auwgent"],
    [17, '"""', "string.quoted.triple.auwgent"],
    [18, "Hello ", "string.quoted.triple.auwgent"],
    [18, "{{", "punctuation.definition.template-expression.begin.auwgent"],
    [18, "name", "meta.template.expression.auwgent"],
    [18, "}}", "punctuation.definition.template-expression.end.auwgent"],
    [19, "#if", "keyword.control.template.auwgent"],
    [19, "ctx", "variable.language.ctx.auwgent"],
    [19, "==", "keyword.operator.auwgent"],
    [19, "true", "constant.language.auwgent"],
    [20, "\\{", "constant.character.escape.auwgent"],
    [21, "/if", "keyword.control.template.auwgent"],
    [22, "@schema", "support.function.schema.auwgent"],
    [22, "output", "variable.parameter.schema.auwgent"],
    [23, '"""', "punctuation.definition.string.end.auwgent"],
    [24, "Example", "keyword.other.block.auwgent"],
    [25, "user", "variable.other.property.auwgent"],
    [25, "Hi", "!string.quoted.double.auwgent"],
    [25, "Hi", "string.quoted.single.auwgent"],
    [29, "/*", "punctuation.definition.comment.begin.auwgent"],
    [29, "a block", "comment.block.auwgent"],
    [30, "comment", "comment.block.auwgent"],
    [30, "*/", "punctuation.definition.comment.end.auwgent"],
    [31, "agent", "storage.type.agent.auwgent"],
    [31, "Main", "entity.name.type.auwgent"],
    [32, "default", "storage.modifier.default.auwgent"],
    [32, "config", "storage.type.config.auwgent"],
    [33, "model", "variable.other.property.auwgent"],
    [33, "model", "!storage.type.model.auwgent"],
    [34, "Greeting", "entity.name.function.call.auwgent"],
    [34, "ctx", "variable.language.ctx.auwgent"],
    [36, "context", "keyword.other.block.auwgent"],
    [37, "output", "keyword.other.member.auwgent"],
    [38, "tool", "storage.type.tool.auwgent"],
    [38, "lookup", "entity.name.function.auwgent"],
    [38, "example", "storage.type.annotation.auwgent"],
    [39, "workflow", "storage.type.workflow.auwgent"],
    [39, "run", "entity.name.function.auwgent"],
    [40, "let", "keyword.control.auwgent"],
    [40, "lookup", "entity.name.function.call.auwgent"],
    [41, "if", "keyword.control.auwgent"],
    [41, "&&", "keyword.operator.auwgent"],
    [41, "null", "constant.language.auwgent"],
    [41, "return", "keyword.control.auwgent"],
    [42, "return", "keyword.control.auwgent"],
    [44, "helpers", "keyword.other.block.auwgent"],
    [45, "with", "keyword.other.grant.auwgent"],
    [45, "handoff", "keyword.other.handoff.auwgent"],
    [45, "continue", "keyword.other.handoff.auwgent"],
    [47, "intent", "keyword.other.member.auwgent"],
    [47, "+", "keyword.operator.auwgent"],
    [49, "@bogus", "comment.line.double-slash.auwgent"],
    [49, "@bogus", "!invalid.illegal.annotation.auwgent"],
    [50, "@bogus", "invalid.illegal.annotation.auwgent"],
    [51, "persona", "storage.type.persona.auwgent"],
    [51, "Reviewer", "entity.name.type.auwgent"],
    [55, "personas", "keyword.other.block.auwgent"],
    [56, "repeatable", "storage.type.annotation.auwgent"],
    [58, "test", "storage.type.test.auwgent"],
    [58, "it answers", "string.quoted.double.auwgent"],
    [59, "agent", "variable.other.property.auwgent"],
    [61, "model", "keyword.other.block.auwgent"],
    [62, "call", "keyword.other.test.auwgent"],
    [62, "lookup", "entity.name.function.call.auwgent"],
    [63, "say", "keyword.other.test.auwgent"],
    [65, "expect", "keyword.other.block.auwgent"],
    [66, "called", "keyword.other.test.auwgent"],
    [67, "not called", "keyword.other.test.auwgent"],
    [68, "text contains", "keyword.other.test.auwgent"],
    [31, "{", "punctuation.section.braces.begin.auwgent"],
    [38, "(", "punctuation.section.parens.begin.auwgent"],
    [5, "(", "punctuation.section.parens.begin.auwgent"],
    [71, "export", "storage.modifier.export.auwgent"],
    [71, "mcp", "storage.type.mcp.auwgent"],
    [71, "Files", "entity.name.type.auwgent"],
    [72, "command", "variable.other.property.auwgent"],
    [73, "@modelcontextprotocol/server-filesystem", "string.quoted.double.auwgent"],
    [73, "@modelcontextprotocol/server-filesystem", "!invalid.illegal.annotation.auwgent"],
    [75, "mcp", "storage.type.mcp.auwgent"],
    [75, "Search", "entity.name.type.auwgent"],
    [75, "url", "variable.other.property.auwgent"],
    [77, "@", "storage.type.annotation.auwgent"],
    [77, "mcp", "storage.type.annotation.auwgent"],
    [77, "mcp", "!invalid.illegal.annotation.auwgent"],
    [77, "Files", "entity.name.type.auwgent"],
    [78, "mcp", "storage.type.annotation.auwgent"],
    [78, "tag-file", "string.quoted.double.auwgent"],
    [78, "approval", "storage.type.annotation.auwgent"],
    [78, "approval", "!invalid.illegal.annotation.auwgent"],
    [78, "timeout", "variable.other.auwgent"],
    [78, "300", "constant.numeric.auwgent"],
    [82, "approval", "storage.type.annotation.auwgent"],
    [82, "approval", "!invalid.illegal.annotation.auwgent"],
    [84, "approval", "storage.type.annotation.auwgent"],
    [87, "export", "storage.modifier.export.auwgent"],
    [87, "tools", "storage.type.tools.auwgent"],
    [87, "FilesTools", "entity.name.type.auwgent"],
  ],
};

test("the fixtures tokenize with the expected scopes", async () => {
  const grammar = await loadGrammar();
  for (const [file, expectations] of Object.entries(EXPECTED)) {
    const tokens = tokenize(grammar, fs.readFileSync(path.join(FIXTURES, file), "utf8"));
    for (const [line, text, scope] of expectations) {
      const found = tokens.filter((t) => t.line === line && t.text.trim() === text.trim());
      assert.ok(found.length > 0, `${file}:${line}: no token ${JSON.stringify(text)}; tokens: ` +
        JSON.stringify(tokens.filter((t) => t.line === line).map((t) => t.text)));
      const negative = scope.startsWith("!");
      const name = negative ? scope.slice(1) : scope;
      const has = found.some((t) => t.scopes.includes(name));
      assert.equal(has, !negative,
        `${file}:${line}: ${JSON.stringify(text)} ${negative ? "has" : "lacks"} ${name}: ` +
        JSON.stringify(found.map((t) => t.scopes)));
    }
  }
});

test("an unterminated one-line string ends at the end of its line", async () => {
  const grammar = await loadGrammar();
  const tokens = tokenize(grammar, 'prompt: "open\nagent Main {}');
  const agent = tokens.find((t) => t.line === 2 && t.text === "agent");
  assert.ok(agent.scopes.includes("storage.type.agent.auwgent"), JSON.stringify(agent.scopes));
});

test("package.json points at files that exist and parse", () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
  const [language] = manifest.contributes.languages;
  assert.deepEqual(language.extensions, [".agent"]);
  const config = JSON.parse(fs.readFileSync(path.join(ROOT, language.configuration), "utf8"));
  assert.equal(config.comments.lineComment, "//");
  assert.deepEqual(config.comments.blockComment, ["/*", "*/"]);
  const [grammar] = manifest.contributes.grammars;
  assert.equal(grammar.scopeName, "source.auwgent");
  assert.ok(fs.existsSync(path.join(ROOT, grammar.path)));
  assert.ok(fs.existsSync(path.join(ROOT, manifest.main)));
  const settings = manifest.contributes.configuration.properties;
  assert.equal(settings["auwgent.server.path"].default, ""); // empty: the workspace's compiler, else auwgent on PATH
  assert.deepEqual(settings["auwgent.server.args"].default, ["lsp"]);
});
