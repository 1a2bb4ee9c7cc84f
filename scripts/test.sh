#!/usr/bin/env bash
# Runs the whole test suite (sets up .venv on first use). Without arguments it also tests the
# VS Code extension and builds its .vsix, when Node.js is there (scripts/test_vscode.sh).
source "$(dirname "$0")/_env.sh"
# The store and serve tests start real Redis and PostgreSQL servers on 127.0.0.1: install them
# from the system's packages when they are missing and this user may (CI runs them, never skips).
bash scripts/_servers.sh
ruff check src tests bench examples
ruff format --check src tests bench examples
mypy
python -m pytest "$@"
if [ "$#" -eq 0 ]; then
  bash "$ROOT/scripts/test_vscode.sh"
fi
