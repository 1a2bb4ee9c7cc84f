"""`npx auwgent` (ts/bin/auwgent.js): which compiler it runs, and what it says without one.

The shim is run straight from the checkout, where no platform package is installed; the
built packages are tested in tests/artifacts/test_npm.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from auwgent._version import __version__

ROOT = Path(__file__).resolve().parents[1]
SHIM = ROOT / "ts" / "bin" / "auwgent.js"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="needs Node.js")


def _folder(path: Path, **links: str | Path) -> str:
    """A PATH folder holding only the given commands (symbolic links)."""
    path.mkdir()
    for name, target in links.items():
        (path / name).symlink_to(target)
    return str(path)


def _shim(path: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    assert NODE is not None
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AUWGENT_")}
    return subprocess.run(
        [NODE, str(SHIM), *args],
        capture_output=True,
        text=True,
        env={**clean, "PATH": path, **env},
        timeout=120,
    )


def test_without_a_compiler_it_says_what_to_install(tmp_path: Path) -> None:
    result = _shim(_folder(tmp_path / "bin"), "generate")
    assert result.returncode == 127
    assert "optional package auwgent-" in result.stderr
    assert "pip install auwgent" in result.stderr


def test_it_falls_back_to_the_python_command_on_path(tmp_path: Path) -> None:
    python_bin = Path(sys.executable).parent
    assert (python_bin / "auwgent").exists()
    result = _shim(_folder(tmp_path / "bin", auwgent=python_bin / "auwgent"), "--version")
    assert (result.returncode, result.stdout) == (0, f"auwgent {__version__}\n")
    assert "is not installed; using" in result.stderr


def test_an_auwgent_on_path_that_is_this_shim_is_not_started_again(tmp_path: Path) -> None:
    # npm links node_modules/.bin/auwgent to the shim and puts that folder on PATH.
    result = _shim(_folder(tmp_path / "bin", auwgent=SHIM), "check")
    assert result.returncode == 127 and "no Auwgent compiler" in result.stderr


def test_auwgent_binary_names_the_compiler_and_its_exit_code_passes_through(
    tmp_path: Path,
) -> None:
    fake = tmp_path / "compiler"
    fake.write_text('#!/bin/sh\necho "args: $*"\nexit 3\n', encoding="utf-8")
    fake.chmod(0o755)
    result = _shim(_folder(tmp_path / "bin"), "check", "a b", AUWGENT_BINARY=str(fake))
    assert (result.returncode, result.stdout) == (3, "args: check a b\n")
    missing = _shim(str(tmp_path / "bin"), "check", AUWGENT_BINARY=str(tmp_path / "nothing"))
    assert missing.returncode == 127
    assert "AUWGENT_BINARY is" in missing.stderr and "not an executable" in missing.stderr
