"""The wheel: what it carries, and the quickstart from a fresh venv with each extra."""

from __future__ import annotations

import email
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from auwgent._version import __version__

from .conftest import ROOT, clean_env, one

# One build per pytest process: --dist loadgroup keeps the artifact tests in one worker (a
# marker given at collection, which xdist reads when it groups).
pytestmark = pytest.mark.xdist_group("artifacts")

PACKAGE = ROOT / "src" / "auwgent"

#: Per extra: modules of its dependencies and the auwgent modules that use them.
EXTRAS: dict[str, tuple[str, ...]] = {
    "": ("auwgent.runtime",),
    "serve": ("starlette", "uvicorn", "auwgent.serve"),
    "redis": ("redis", "auwgent.runtime.stores.redis"),
    "postgres": ("psycopg", "psycopg_pool", "auwgent.runtime.stores.postgres"),
    "otel": ("opentelemetry.sdk.trace", "auwgent.runtime.tracing"),
    "lsp": ("pygls", "lsprotocol", "auwgent.lsp.server"),
    "code": ("pydantic_monty", "auwgent.runtime.code_mode"),
    "mcp": ("mcp", "auwgent.mcp.serve"),
    "console": ("starlette", "opentelemetry.sdk.trace", "auwgent.dev.server"),
}


def _run(argv: list[str | Path], cwd: Path) -> str:
    result = subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=900,
    )
    assert result.returncode == 0, f"{argv}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_the_wheel_carries_the_package_and_its_data_and_nothing_else(dist: Path) -> None:
    wheel = one(dist, f"auwgent-{__version__}-py3-none-any.whl")
    names = zipfile.ZipFile(wheel).namelist()
    info = f"auwgent-{__version__}.dist-info"
    assert {name.split("/")[0] for name in names} == {"auwgent", info}
    expected = {
        f"auwgent/{path.relative_to(PACKAGE).as_posix()}"
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert {
        "auwgent/ir/schema.json",
        "auwgent/py.typed",
        "auwgent/dev/static/console.js",
    } <= expected
    assert {name for name in names if name.startswith("auwgent/")} == expected
    assert not [name for name in names if "tests/" in name or "conftest" in name]
    entry_points = zipfile.ZipFile(wheel).read(f"{info}/entry_points.txt").decode()
    assert "auwgent = auwgent.cli:main" in entry_points
    assert "auwgent = auwgent.testing.pytest_plugin" in entry_points
    metadata = email.message_from_bytes(zipfile.ZipFile(wheel).read(f"{info}/METADATA"))
    assert (metadata["Name"], metadata["Version"]) == ("auwgent", __version__)
    assert set(metadata.get_all("Provides-Extra") or ()) >= set(EXTRAS) - {""}


def test_the_sdist_builds_the_same_package(dist: Path) -> None:
    sdist = one(dist, f"auwgent-{__version__}.tar.gz")
    listing = subprocess.run(["tar", "tzf", sdist], capture_output=True, text=True, check=True)
    files = set(listing.stdout.split())
    top = f"auwgent-{__version__}"
    assert {f"{top}/pyproject.toml", f"{top}/src/auwgent/ir/schema.json"} <= files


@pytest.mark.parametrize("extra", list(EXTRAS), ids=[e or "core" for e in EXTRAS])
def test_the_quickstart_runs_from_the_installed_wheel(
    extra: str, dist: Path, tmp_path: Path
) -> None:
    wheel = one(dist, f"auwgent-{__version__}-py3-none-any.whl")
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], tmp_path)
    python = venv / "bin" / "python"
    requirement = f"{wheel}[{extra}]" if extra else str(wheel)
    pip = [sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check"]
    _run([*pip, "install", "-q", requirement], tmp_path)
    _run([*pip, "check"], tmp_path)
    shown = _run([*pip, "show", "auwgent"], tmp_path)
    assert "Name: auwgent\n" in shown and "Summary: Compiler-first framework" in shown

    project = tmp_path / "quickstart"
    shutil.copytree(
        ROOT / "examples" / "quickstart", project, ignore=shutil.ignore_patterns("generated")
    )
    # The installed package, not the checkout: imported from the venv's site-packages.
    where = _run([python, "-c", "import auwgent; print(auwgent.__file__)"], project)
    assert Path(where.strip()).is_relative_to(venv), where
    _run([python, "-c", "import " + ", ".join(EXTRAS[extra])], project)
    _run([venv / "bin" / "auwgent", "generate"], project)
    out = _run([python, "app.py", "good", "morning"], project)
    assert "running on the offline model" in out
    assert '[Main] response_text: Offline reply to "good morning".' in out
