"""The built artifacts (scripts/build.sh), installed and used as a user would.

Every test here carries the ``artifacts`` marker (``scripts/test.sh --fast`` leaves them out)
and shares one build per pytest process: ``bash scripts/build.sh`` into a temporary folder, or
the folder named by ``AUWGENT_DIST`` when that is set (a build made beforehand, as CI may).
The installs reach the package registries for the dependencies, nothing else.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(pytest.mark.artifacts)


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    given = os.environ.get("AUWGENT_DIST")
    if given:
        yield Path(given)
        return
    out = tmp_path_factory.mktemp("dist")
    build = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build.sh"), str(out)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    yield out
    shutil.rmtree(out, ignore_errors=True)


def one(folder: Path, pattern: str) -> Path:
    """The one file of ``folder`` that matches ``pattern``."""
    found = sorted(folder.glob(pattern))
    assert len(found) == 1, f"{folder}: {pattern} matches {[p.name for p in found]}"
    return found[0]


def clean_env(path: str | None = None) -> dict[str, str]:
    """The environment for an installed program: no API keys, no PYTHONPATH, no venv."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.endswith("_API_KEY") and key not in ("PYTHONPATH", "VIRTUAL_ENV")
    }
    env.pop("AUWGENT_PROVIDER", None)
    if path is not None:
        env["PATH"] = path
    return env
