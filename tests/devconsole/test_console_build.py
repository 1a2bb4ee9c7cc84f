"""The console's built files are committed (src/auwgent/dev/static, shipped in the wheel): they
must be the build of the sources as they are now (tests/artifacts/test_wheel.py checks that
the wheel carries them)."""

from __future__ import annotations

import hashlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONSOLE = ROOT / "console"
STATIC = ROOT / "src" / "auwgent" / "dev" / "static"
BUILT = ("index.html", "console.js", "console.css", "SOURCE_HASH")


def source_hash() -> str:
    """The hash console/build.mjs writes: every input, by path, in path order."""
    files = [p.relative_to(CONSOLE).as_posix() for p in (CONSOLE / "src").rglob("*") if p.is_file()]
    files += ["index.html", "build.mjs", "package-lock.json", "tsconfig.json"]
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0")
        digest.update((CONSOLE / name).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def test_the_committed_build_is_the_build_of_the_sources() -> None:
    for name in BUILT:
        assert (STATIC / name).is_file(), f"{name} is missing: run bash scripts/build_console.sh"
    recorded = (STATIC / "SOURCE_HASH").read_text().strip()
    assert recorded == source_hash(), (
        "the console's sources changed since src/auwgent/dev/static was built: "
        "run bash scripts/build_console.sh and commit its output"
    )
