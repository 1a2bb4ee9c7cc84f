#!/usr/bin/env bash
# Builds the dev console (console/, Preact + esbuild) into src/auwgent/dev/static, the files
# `auwgent dev` serves and the wheel ships. The output is committed (docs/dev.md says why):
# run this after changing console/ and commit what it wrote; tests/devconsole/
# test_console_build.py fails while the committed build is not the sources' build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT/console"
stamp="node_modules/.installed-$(sha1sum package-lock.json | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  npm ci --no-audit --no-fund --loglevel=error >/dev/null
  touch "$stamp"
fi
node build.mjs
