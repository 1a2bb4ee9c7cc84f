#!/usr/bin/env bash
# Runs every test suite (sets up .venv on first use) and reports each one, even when an
# earlier one fails: ruff check, ruff format --check, mypy --strict, pytest (in parallel with
# pytest-xdist, in a random order with pytest-randomly), the TypeScript runtime (ts/), the dev
# console's component tests (console/) and the VS Code extension (editors/vscode/, which also
# builds its .vsix). Prints one line per suite (name, pass or fail, time), the total wall
# time, and exits 1 when any suite failed.
#
#   bash scripts/test.sh                 everything (what CI runs)
#   bash scripts/test.sh --fast          pytest without the tests marked servers, load, corpus,
#                                        artifacts, slow, real_model or browser (see pyproject.toml)
#   bash scripts/test.sh [--fast] ARGS   ARGS go to pytest (a path, -k PATTERN, -p no:randomly)
#
# AUWGENT_TEST_WORKERS sets the number of pytest workers (default: auto, one per core; 0 runs
# them in this process).
source "$(dirname "$0")/_env.sh"
set +e
FAST_MARKERS="not servers and not load and not corpus and not artifacts and not slow and not real_model and not browser"
fast=0
if [ "${1:-}" = "--fast" ]; then
  fast=1
  shift
fi
LOGS="$ROOT/.test-logs"
mkdir -p "$LOGS"
names=()
results=()
started_all=$SECONDS

# suite NAME COMMAND...: runs COMMAND, its output shown as it comes and kept in .test-logs/.
suite() {
  local name="$1" started=$SECONDS code
  shift
  printf '\n== %s: %s\n' "$name" "$*"
  "$@" 2>&1 | tee "$LOGS/$name.log"
  code=${PIPESTATUS[0]}
  names+=("$name")
  results+=("$code $((SECONDS - started))")
}

run_pytest() {
  local workers="${AUWGENT_TEST_WORKERS:-auto}" args=() code
  if [ "$workers" != "0" ]; then
    # loadgroup: the tests of one xdist_group (the artifact tests share a build) stay together.
    args+=(-n "$workers" --dist loadgroup)
  fi
  if [ "$fast" = 1 ]; then
    args+=(-m "$FAST_MARKERS")
  fi
  case " $* " in
    *" no:randomly "* | *"--randomly-seed"*) ;;
    *)
      # The order is random each run; the seed is printed so that a failure can be repeated.
      local seed="$((RANDOM * 32768 + RANDOM))"
      echo "pytest: random order, seed $seed (repeat it: bash scripts/test.sh --randomly-seed=$seed)"
      args+=("--randomly-seed=$seed")
      ;;
  esac
  python -m pytest "${args[@]}" "$@"
  code=$?
  if [ "$code" = 5 ]; then
    echo "pytest collected no test (exit 5): nothing was tested, so this suite fails"
    return 1
  fi
  return "$code"
}

# The store and serve tests start real Redis and PostgreSQL servers on 127.0.0.1: install them
# from the system's packages when they are missing and this user may (CI runs them, never
# skips). The fast tier does not need them.
if [ "$fast" = 0 ]; then
  suite servers bash scripts/_servers.sh
fi
suite ruff ruff check src tests bench examples conformance ts/test
suite format ruff format --check src tests bench examples conformance ts/test
suite mypy mypy
# tests/test_docs_run.py type-checks the docs' TypeScript with ts/'s tsc, and the MCP tests
# launch the real file-system server from tests/mcptools/node, and the UI stream tests run the
# real AI SDK and AG-UI clients from tests/ui_clients/node: install them when npm is there.
node_deps() {
  local dir
  command -v npm >/dev/null 2>&1 || { echo "npm is not installed: the tests that need it skip"; return 0; }
  for dir in ts tests/mcptools/node tests/ui_clients/node; do
    (cd "$ROOT/$dir" && npm_ci) || return 1
  done
}
suite node-deps node_deps
suite pytest run_pytest "$@"
suite typescript bash "$ROOT/scripts/test_ts.sh"
suite console bash "$ROOT/scripts/test_console.sh"
suite vscode bash "$ROOT/scripts/test_vscode.sh"

total=$((SECONDS - started_all))
failed=0
printf '\n== summary%s\n' "$([ "$fast" = 1 ] && echo " (--fast)")"
for i in "${!names[@]}"; do
  read -r code seconds <<<"${results[$i]}"
  if [ "$code" = 0 ]; then verdict=pass; else verdict="FAIL (exit $code)"; failed=$((failed + 1)); fi
  printf '%-11s %-15s %4ds\n' "${names[$i]}" "$verdict" "$seconds"
done
printf 'total wall time %dm%02ds; logs in .test-logs/\n' $((total / 60)) $((total % 60))
echo "suites: $((${#names[@]} - failed)) passed, $failed failed"
[ "$failed" = 0 ]
