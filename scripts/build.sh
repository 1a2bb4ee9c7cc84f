#!/usr/bin/env bash
# Builds everything Auwgent ships into dist/ (or the folder given as the first argument):
#   auwgent-<v>.tar.gz, auwgent-<v>-py3-none-any.whl   the Python distribution (python -m build)
#   auwgent-<v>.tgz                                     the TypeScript runtime with `npx auwgent`
#   auwgent-<platform>-<v>.tgz                          the standalone compiler for this machine
#   auwgent-<v>.vsix                                    the VS Code extension
# The dev console's files (src/auwgent/dev/static, in the wheel) are built first; they are
# committed, so this changes nothing unless console/ changed since they were built.
# The standalone compiler is frozen with PyInstaller from a fresh venv that holds only the
# wheel just built and its `exe` extra, so it carries what the wheel carries. Needs Python
# and Node.js 20+; packages come from the registries. docs/install.md says how release CI
# builds the other platforms.
OUT="$(realpath -m "${1:-$(dirname "$0")/../dist}")"  # before _env.sh changes the folder
source "$(dirname "$0")/_env.sh"
VERSION="$(python -c 'from auwgent._version import __version__; print(__version__)')"
PLATFORM="$(node -p 'process.platform + "-" + process.arch')"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"
# One build at a time in this tree: the sdist is staged in the project folder.
exec 9>"$ROOT/.build.lock"
flock 9
rm -f "$OUT"/auwgent-*  # the previous build's files

step() { printf '== %s\n' "$*"; }

# quiet COMMAND...: its output only when it fails.
quiet() {
  "$@" >"$WORK/step.log" 2>&1 || { cat "$WORK/step.log" >&2; echo "failed: $*" >&2; exit 1; }
}

step "dev console (console/ into src/auwgent/dev/static)"
bash "$ROOT/scripts/build_console.sh" >/dev/null

step "sdist and wheel"
quiet python -m build --outdir "$OUT" "$ROOT"

step "npm package auwgent (ts/)"
(cd "$ROOT/ts" && npm_ci && npx tsc -p tsconfig.json)
python "$ROOT/scripts/npm_packages.py" runtime "$WORK/auwgent"
(cd "$WORK/auwgent" && npm pack --silent --pack-destination "$OUT" >/dev/null)

step "VS Code extension"
(cd "$ROOT/editors/vscode" && npm_ci && npm run --silent package >/dev/null)
cp "$ROOT/editors/vscode/auwgent.vsix" "$OUT/auwgent-$VERSION.vsix"

step "standalone compiler auwgent-$PLATFORM (PyInstaller)"
python -m venv "$WORK/venv"
quiet "$WORK/venv/bin/python" -m pip install -q --disable-pip-version-check \
  "$OUT/auwgent-$VERSION-py3-none-any.whl[exe]"
quiet "$WORK/venv/bin/pyinstaller" --noconfirm --log-level WARN --onedir --name auwgent \
  --collect-data auwgent --distpath "$WORK/exe" --workpath "$WORK/pyinstaller" \
  --specpath "$WORK" "$ROOT/scripts/auwgent_exe.py"
shown="$("$WORK/exe/auwgent/auwgent" --version)"
[ "$shown" = "auwgent $VERSION" ] || { echo "the frozen compiler says: $shown" >&2; exit 1; }
python "$ROOT/scripts/npm_packages.py" platform "auwgent-$PLATFORM" "$WORK/exe/auwgent" \
  "$WORK/auwgent-$PLATFORM"
(cd "$WORK/auwgent-$PLATFORM" && npm pack --silent --pack-destination "$OUT" >/dev/null)

step "built in $OUT"
ls -l "$OUT" | sed 1d
