#!/usr/bin/env bash
# The dev console's own tests: install console/ from its lockfile, type-check it, bundle its
# component tests with esbuild and run them with `node --test` on happy-dom. (Its browser
# tests are pytest's, marked browser: tests/devconsole/test_console_browser.py.)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if ! command -v node >/dev/null 2>&1; then
  echo "the console's tests need Node 18 or later: node is not installed" >&2
  exit 1
fi
cd "$ROOT/console"
npm ci --no-audit --no-fund --loglevel=error
npx tsc -p tsconfig.json --noEmit
node build.mjs --tests
node --test .test-build/
