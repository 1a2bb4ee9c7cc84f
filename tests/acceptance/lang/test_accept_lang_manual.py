"""The manual's programs (made complete) through the public surface: check, generate, import.

The programs are the repository's copies of the manual's examples (``tests/data/parse/ok``,
each completed with its obvious neighbours, and the ``examples/`` projects). Each is copied to
a temporary folder, checked and generated with the real CLI, and every generated module is
imported in a fresh interpreter, so a program of the manual that stops compiling, or bindings
that stop importing, fail here.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from acceptance_lang_support import assert_no_traceback, diagnostics, run

REPO = Path(__file__).resolve().parents[3]
PROGRAMS = sorted((REPO / "tests" / "data" / "parse" / "ok").iterdir())
EXAMPLES = sorted(p for p in (REPO / "examples").iterdir() if (p / "auwgent.yml").is_file())


def _copy(program: Path, into: Path) -> Path:
    target = into / "project"
    if program.is_dir():
        shutil.copytree(
            program, target, ignore=shutil.ignore_patterns("generated", "__pycache__", "*.py")
        )
    else:
        target.mkdir()
        shutil.copy(program, target / program.name)
    return target


@pytest.mark.parametrize("program", PROGRAMS + EXAMPLES, ids=lambda p: p.name)
def test_manual_program_checks_generates_and_imports(program: Path, tmp_path: Path) -> None:
    project = _copy(program, tmp_path)
    checked = run("check", ".", cwd=project)
    assert_no_traceback(checked)
    assert checked.returncode == 0, checked.stderr
    assert all(d.severity == "warning" for d in diagnostics(checked.stderr))
    generated = run("generate", ".", cwd=project)
    assert generated.returncode == 0, generated.stderr
    out = project / "generated"
    modules = sorted(out.rglob("*_types.py"))
    assert modules, generated.stdout
    assert len(list(out.rglob("*.agent.json"))) == len(modules)
    names = [".".join(("generated", *m.relative_to(out).with_suffix("").parts)) for m in modules]
    script = (
        "import importlib\n"
        f"for name in {names!r}:\n"
        "    module = importlib.import_module(name)\n"
        "    for attr in ('auwgent', 'AuwgentBaseIntentHandler', 'AuwgentBasePartialIntentHandler',\n"
        "                 'AuwgentTools', 'AuwgentMiddleware', 'AuwgentConfig', 'AuwgentApiKeys',\n"
        "                 'AuwgentContext'):\n"
        "        assert hasattr(module, attr), (name, attr)\n"
    )
    imported = subprocess.run(
        [sys.executable, "-c", script], cwd=project, capture_output=True, text=True, timeout=120
    )
    assert imported.returncode == 0, imported.stderr
