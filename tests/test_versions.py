"""One version everywhere: src/auwgent/_version.py is the source, every manifest says it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from auwgent._version import __version__

ROOT = Path(__file__).resolve().parents[1]


def _json(relative: str) -> dict[str, object]:
    value = json.loads((ROOT / relative).read_text(encoding="utf-8"))
    assert isinstance(value, dict)
    return value


@pytest.mark.parametrize(
    "manifest", ["ts/package.json", "editors/vscode/package.json"], ids=["ts", "vscode"]
)
def test_the_npm_manifests_and_their_lockfiles_say_the_python_version(manifest: str) -> None:
    assert _json(manifest)["version"] == __version__, f"{manifest}: set it to {__version__}"
    lock = _json(manifest.replace("package.json", "package-lock.json"))
    packages = lock["packages"]
    assert isinstance(packages, dict)
    assert lock["version"] == packages[""]["version"] == __version__


def test_the_packages_are_named_auwgent() -> None:
    assert _json("ts/package.json")["name"] == "auwgent"
    extension = _json("editors/vscode/package.json")
    assert (extension["publisher"], extension["name"]) == ("auwgent", "auwgent")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'name = "auwgent"\n' in pyproject
    assert 'version = { attr = "auwgent._version.__version__" }' in pyproject


def test_the_command_prints_the_version() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "auwgent", "--version"], capture_output=True, text=True
    )
    assert (result.returncode, result.stdout) == (0, f"auwgent {__version__}\n")
