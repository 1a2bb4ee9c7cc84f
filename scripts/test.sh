#!/usr/bin/env bash
# Runs the whole test suite (sets up .venv on first use). Without arguments it also tests the
# VS Code extension and builds its .vsix, when Node.js is there (scripts/test_vscode.sh).
source "$(dirname "$0")/_env.sh"
ruff check src tests bench examples
ruff format --check src tests bench examples
mypy
python -m pytest "$@"
if [ "$#" -eq 0 ]; then
  bash "$ROOT/scripts/test_vscode.sh"
fi
