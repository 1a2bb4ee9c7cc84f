#!/usr/bin/env bash
# Runs the whole test suite (sets up .venv on first use): Python, then TypeScript (ts/).
source "$(dirname "$0")/_env.sh"
ruff check src tests bench examples conformance ts/test
ruff format --check src tests bench examples conformance ts/test
mypy
python -m pytest "$@"
case " $* " in
  *" --co "* | *" --collect-only "*) ;;
  *) bash "$ROOT/scripts/test_ts.sh" ;;
esac
