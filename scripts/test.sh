#!/usr/bin/env bash
# Runs the whole test suite (sets up .venv on first use): Python, then the TypeScript runtime
# (ts/) and the VS Code extension (editors/vscode/, which also builds its .vsix), when Node.js
# is there.
source "$(dirname "$0")/_env.sh"
# The store and serve tests start real Redis and PostgreSQL servers on 127.0.0.1: install them
# from the system's packages when they are missing and this user may (CI runs them, never skips).
bash scripts/_servers.sh
ruff check src tests bench examples conformance ts/test
ruff format --check src tests bench examples conformance ts/test
mypy
# tests/test_docs_run.py type-checks the docs' TypeScript with ts/'s tsc, and the MCP tests
# launch the real file-system server from tests/mcptools/node: install them when npm is there.
if command -v npm >/dev/null 2>&1; then
  for dir in ts tests/mcptools/node; do
    [ -d "$ROOT/$dir/node_modules" ] \
      || (cd "$ROOT/$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  done
fi
python -m pytest "$@"
case " $* " in
  *" --co "* | *" --collect-only "*) ;;
  *)
    bash "$ROOT/scripts/test_ts.sh"
    if [ "$#" -eq 0 ]; then
      bash "$ROOT/scripts/test_vscode.sh"
    fi
    ;;
esac
