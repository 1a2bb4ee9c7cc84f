// The Auwgent extension: .agent files get the grammar and language configuration declared
// in package.json, and this starts the language server (`auwgent lsp`) over stdio.
"use strict";

const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

/** @type {LanguageClient | undefined} */
let client;

/** The server command, its arguments and options from the `auwgent.server.*` settings. */
function serverSettings() {
  const config = vscode.workspace.getConfiguration("auwgent");
  return {
    command: config.get("server.path", "auwgent") || "auwgent",
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
        "Install it with pip install 'auwgent[lsp]', or set auwgent.server.path " +
        "to the auwgent command of your virtual environment.",
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

module.exports = { activate, deactivate, serverSettings };
