"""``auwgent lsp`` on the command line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from auwgent.cli import main


def test_without_the_extra_it_says_what_to_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pygls", None)
    assert main(["lsp"]) == 2
    err = capsys.readouterr().err
    assert "`auwgent lsp` needs pygls: pip install 'auwgent[lsp]'" in err


def test_it_stops_when_its_input_ends() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "auwgent", "lsp", "--stdio"],
        input=b"",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
