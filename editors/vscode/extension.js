// The Auwgent extension: .agent files get the grammar and language configuration declared
// in package.json, and this starts the language server (`auwgent lsp`) over stdio.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

/** @type {LanguageClient | undefined} */
let client;

/**
 * The standalone compiler that `npm install auwgent` put in a workspace folder
 * (node_modules/auwgent-<platform>-<arch>/bin/auwgent), or undefined.
 * @param {string[]} folders
 */
function workspaceCompiler(folders, platform = process.platform, arch = process.arch) {
  const exe = platform === "win32" ? "auwgent.exe" : "auwgent";
  for (const folder of folders) {
    const candidate = path.join(folder, "node_modules", `auwgent-${platform}-${arch}`, "bin", exe);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // not installed in this folder
    }
  }
  return undefined;
}

/**
 * The server command, its arguments and options from the `auwgent.server.*` settings. An
 * empty `server.path` (the default) means the workspace's own standalone compiler when npm
 * installed one, else `auwgent` on PATH (the Python package).
 */
function serverSettings() {
  const config = vscode.workspace.getConfiguration("auwgent");
  const folders = (vscode.workspace.workspaceFolders ?? []).map((folder) => folder.uri.fsPath);
  return {
    command: config.get("server.path", "") || workspaceCompiler(folders) || "auwgent",
    args: config.get("server.args", ["lsp"]),
    debounceMs: config.get("server.debounceMs", 50),
  };
}

async function start() {
  const settings = serverSettings();
  client = new LanguageClient(
    "auwgent",
    "Auwgent",
    { command: settings.command, args: settings.args },
    {
      documentSelector: [
        { scheme: "file", language: "auwgent" },
        { scheme: "untitled", language: "auwgent" },
      ],
      initializationOptions: { debounceMs: settings.debounceMs },
      // Files changed by other programs (a checkout, a generator) are read again.
      synchronize: {
        fileEvents: vscode.workspace.createFileSystemWatcher("**/{*.agent,auwgent.yml,auwgent.yaml}"),
      },
    },
  );
  try {
    await client.start();
  } catch (error) {
    client = undefined;
    const shown = [settings.command, ...settings.args].join(" ");
    vscode.window.showErrorMessage(
      `Auwgent: could not start the language server (${shown}): ${error.message}. ` +
        "Install it with pip install 'auwgent[lsp]' (or npm install auwgent in the " +
        "workspace), or set auwgent.server.path to the auwgent command to use.",
    );
  }
}

async function stop() {
  if (client !== undefined) {
    const running = client;
    client = undefined;
    await running.stop();
  }
}

/** @param {vscode.ExtensionContext} context */
async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand("auwgent.restartServer", async () => {
      await stop();
      await start();
    }),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration("auwgent.server")) {
        await stop();
        await start();
      }
    }),
  );
  await start();
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate, serverSettings, workspaceCompiler };
