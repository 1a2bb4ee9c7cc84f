"""The one switch that rewrites golden files: ``AUWGENT_UPDATE_GOLDEN=1``.

Every golden comparison in the suite goes through here: run with the variable set, review the
diff, commit it. Without it a missing or different golden file fails the test and says how to
regenerate it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

UPDATE = os.environ.get("AUWGENT_UPDATE_GOLDEN") == "1"
_HINT = "review, then run with AUWGENT_UPDATE_GOLDEN=1"


def assert_golden(path: Path, actual: str) -> None:
    """``actual`` must be the text of ``path`` (which the switch rewrites)."""
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    assert path.exists(), f"missing golden file {path}; run with AUWGENT_UPDATE_GOLDEN=1"
    assert actual == path.read_text(encoding="utf-8"), f"{path.name} differs; {_HINT}"


def assert_golden_json(path: Path, actual: Any) -> None:
    """``actual`` must equal the JSON value of ``path`` (written indented by the switch)."""
    if UPDATE:
        path.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    assert path.exists(), f"missing golden file {path}; run with AUWGENT_UPDATE_GOLDEN=1"
    assert actual == json.loads(path.read_text(encoding="utf-8")), f"{path.name} differs; {_HINT}"
