#!/usr/bin/env bash
# The TypeScript half of the suite: install ts/ from its lockfile (npm_ci, scripts/_env.sh),
# type-check the runtime, then `node --test` (runtime unit tests, the conformance vectors, the
# manual's TypeScript tabs generated, type-checked and run against the fake servers). Needs
# Node 18 or later.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if ! command -v node >/dev/null 2>&1; then
  echo "skipping the TypeScript tests: node is not installed (Node 18+ is needed)"
  exit 0
fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 18 ]; then
  echo "skipping the TypeScript tests: node $(node --version) is older than 18"
  exit 0
fi
source "$ROOT/scripts/_env.sh"
export AUWGENT_PYTHON="${AUWGENT_PYTHON:-$ROOT/.venv/bin/python}"
cd "$ROOT/ts"
npm_ci
npx tsc -p tsconfig.json
node --test test/
