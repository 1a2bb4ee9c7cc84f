"""Lay out the npm packages that scripts/build.sh packs, the pattern esbuild uses.

``python scripts/npm_packages.py runtime OUT_DIR`` copies the built runtime (ts/: package.json,
README.md, dist/, bin/) to OUT_DIR and adds to its package.json one optional dependency per
platform package, at auwgent's own version: npm installs only the one whose ``os``/``cpu``
match the machine, and ``npx auwgent`` (ts/bin/auwgent.js) runs its executable. The list is
added at packing time, not kept in ts/package.json, because the packages of an unreleased
version are on no registry and ``npm ci`` would refuse the checkout's lockfile.

``python scripts/npm_packages.py platform NAME EXE_DIR OUT_DIR`` lays out platform package
NAME (``auwgent-linux-x64``, say) around EXE_DIR, PyInstaller's one-folder output (the
``auwgent`` executable and its ``_internal`` folder), as OUT_DIR/bin.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from auwgent._version import __version__  # noqa: E402

#: The platforms a release builds, as Node names them (process.platform-process.arch).
PLATFORMS = ("darwin-arm64", "darwin-x64", "linux-arm64", "linux-x64", "win32-x64")
_LIBC = {"linux": ["glibc"]}


def _write_json(path: Path, value: object) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


def runtime(out: Path) -> None:
    """Stage the runtime package ``auwgent`` with its optional platform packages."""
    source = ROOT / "ts"
    manifest = json.loads((source / "package.json").read_text(encoding="utf-8"))
    if manifest["version"] != __version__:
        raise SystemExit(f"ts/package.json says {manifest['version']}, auwgent {__version__}")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for name in manifest["files"]:
        if (source / name).is_dir():
            shutil.copytree(source / name, out / name)
        else:
            shutil.copy2(source / name, out / name)
    manifest["scripts"].pop("prepack", None)  # dist/ is built; the stage has no sources
    manifest["optionalDependencies"] = {f"auwgent-{p}": __version__ for p in PLATFORMS}
    _write_json(out / "package.json", manifest)


def platform(name: str, exe_dir: Path, out: Path) -> None:
    """Stage platform package NAME around the frozen compiler in EXE_DIR."""
    target = name.removeprefix("auwgent-")
    if target not in PLATFORMS:
        raise SystemExit(f"{name}: not a platform package (auwgent-{{{','.join(PLATFORMS)}}})")
    os_name, cpu = target.split("-")
    runtime_manifest = json.loads((ROOT / "ts" / "package.json").read_text(encoding="utf-8"))
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(exe_dir, out / "bin", symlinks=True)
    manifest: dict[str, object] = {
        "name": name,
        "version": __version__,
        "description": f"The Auwgent compiler (check, generate, fmt, lsp, test) for {target} as "
        "a standalone executable; the npm package auwgent installs and runs it.",
        "license": runtime_manifest["license"],
        "os": [os_name],
        "cpu": [cpu],
        "files": ["bin"],
        "preferUnplugged": True,
    }
    if os_name in _LIBC:
        manifest["libc"] = _LIBC[os_name]
    _write_json(out / "package.json", manifest)
    (out / "README.md").write_text(
        f"# {name}\n\nThe Auwgent compiler for {target}. Install the npm package `auwgent`, "
        "which depends on this one, and run `npx auwgent`.\n",
        encoding="utf-8",
    )


def main(argv: list[str]) -> int:
    if argv[:1] == ["runtime"] and len(argv) == 2:
        runtime(Path(argv[1]))
    elif argv[:1] == ["platform"] and len(argv) == 4:
        platform(argv[1], Path(argv[2]), Path(argv[3]))
    else:
        raise SystemExit(__doc__)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
