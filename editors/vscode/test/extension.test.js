// extension.js against stand-ins for the `vscode` API and the language client: it starts
// the configured command with the configured arguments, passes the debounce setting, and
// says clearly when the server cannot be started.
"use strict";

const assert = require("node:assert/strict");
const fs = require("node:fs");
const Module = require("node:module");
const os = require("node:os");
const path = require("node:path");
const { test } = require("node:test");

function load(settings, startError, folders = []) {
  const calls = { clients: [], errors: [], commands: [] };
  const vscode = {
    workspace: {
      workspaceFolders: folders.map((fsPath) => ({ uri: { fsPath } })),
      getConfiguration: () => ({ get: (key, fallback) => (key in settings ? settings[key] : fallback) }),
      onDidChangeConfiguration: () => ({ dispose() {} }),
      createFileSystemWatcher: (pattern) => ({ pattern, dispose() {} }),
    },
    window: { showErrorMessage: (message) => calls.errors.push(message) },
    commands: {
      registerCommand: (name) => {
        calls.commands.push(name);
        return { dispose() {} };
      },
    },
  };
  class LanguageClient {
    constructor(id, name, server, client) {
      calls.clients.push({ id, name, server, client });
    }
    async start() {
      if (startError) throw startError;
    }
    async stop() {}
  }
  const stubs = { vscode, "vscode-languageclient/node": { LanguageClient } };
  const original = Module._load;
  Module._load = function (request, ...rest) {
    return request in stubs ? stubs[request] : original.call(this, request, ...rest);
  };
  const file = path.join(__dirname, "..", "extension.js");
  delete require.cache[require.resolve(file)];
  try {
    return { extension: require(file), calls };
  } finally {
    Module._load = original;
  }
}

test("starts the configured server command over stdio", async () => {
  const { extension, calls } = load({ "server.path": "/venv/bin/auwgent", "server.debounceMs": 20 });
  await extension.activate({ subscriptions: [] });
  assert.equal(calls.clients.length, 1);
  const [{ server, client }] = calls.clients;
  assert.deepEqual(server, { command: "/venv/bin/auwgent", args: ["lsp"] });
  assert.deepEqual(client.initializationOptions, { debounceMs: 20 });
  assert.deepEqual(client.documentSelector.map((d) => d.language), ["auwgent", "auwgent"]);
  assert.equal(client.synchronize.fileEvents.pattern, "**/{*.agent,auwgent.yml,auwgent.yaml}");
  assert.deepEqual(calls.commands, ["auwgent.restartServer"]);
  assert.deepEqual(calls.errors, []);
  await extension.deactivate();
});

test("the default command is auwgent lsp", () => {
  const { extension } = load({});
  assert.deepEqual(extension.serverSettings(), { command: "auwgent", args: ["lsp"], debounceMs: 50 });
});

test("without a setting, the workspace's standalone compiler from npm is started", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "auwgent-ext-"));
  const platformPackage = `auwgent-${process.platform}-${process.arch}`;
  const bin = path.join(root, "node_modules", platformPackage, "bin");
  const exe = path.join(bin, process.platform === "win32" ? "auwgent.exe" : "auwgent");
  try {
    const empty = path.join(root, "empty");
    fs.mkdirSync(empty);
    assert.equal(load({}, undefined, [empty]).extension.serverSettings().command, "auwgent");
    fs.mkdirSync(bin, { recursive: true });
    fs.writeFileSync(exe, "#!/bin/sh\n", { mode: 0o755 });
    const { extension } = load({}, undefined, [empty, root]);
    assert.equal(extension.serverSettings().command, exe);
    const chosen = load({ "server.path": "/venv/bin/auwgent" }, undefined, [root]).extension;
    assert.equal(chosen.serverSettings().command, "/venv/bin/auwgent");
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test("a server that cannot start is reported with what to do", async () => {
  const { extension, calls } = load({}, new Error("spawn auwgent ENOENT"));
  await extension.activate({ subscriptions: [] });
  assert.equal(calls.errors.length, 1);
  assert.match(calls.errors[0], /could not start the language server \(auwgent lsp\): spawn auwgent ENOENT/);
  assert.match(calls.errors[0], /auwgent\.server\.path/);
});
