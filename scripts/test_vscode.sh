#!/usr/bin/env bash
# The VS Code extension (editors/vscode): installs its packages from the committed lockfile
# (again only when the lockfile changed), runs its tests (the grammar through vscode-textmate,
# the client against stand-ins for VS Code) and builds auwgent.vsix.
# Needs Node.js 18 or later for the tests, 20 or later for the .vsix (@vscode/vsce 3).
set -euo pipefail
cd "$(dirname "$0")/../editors/vscode"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "editors/vscode: skipped (no Node.js)"
  exit 0
fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 18 ]; then
  echo "editors/vscode: skipped (Node.js $major; 18 or later needed)"
  exit 0
fi
# Quiet on success; everything a step printed when it fails.
run() {
  local out
  if ! out="$("$@" 2>&1)"; then
    echo "$out" >&2
    echo "editors/vscode: failed: $*" >&2
    exit 1
  fi
  printf '%s' "$out"
}
stamp="node_modules/.installed-$(sha1sum package-lock.json | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  run npm ci --no-audit --no-fund --loglevel=error >/dev/null
  touch "$stamp"
fi
summary="$(run npm test | grep -E '^# (pass|fail)' | tr '\n' ' ')"
echo "editors/vscode: node --test: $summary"
if [ "$major" -ge 20 ]; then
  run npm run package >/dev/null
  echo "editors/vscode: built auwgent.vsix"
else
  echo "editors/vscode: auwgent.vsix not built (Node.js $major; @vscode/vsce needs 20)"
fi
