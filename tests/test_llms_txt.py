"""docs/llms.txt is the whole documentation in one file and must follow every edit of docs/."""

from __future__ import annotations

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
builder = runpy.run_path(str(ROOT / "scripts" / "build_llms_txt.py"))


def test_llms_txt_is_current() -> None:
    current = (ROOT / "docs" / "llms.txt").read_text(encoding="utf-8")
    assert current == builder["render"](), "run: python scripts/build_llms_txt.py"


def test_every_page_is_included_once() -> None:
    text = builder["render"]()
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert text.count(f"\ndocs/{page.name}\n") == 1, page.name


def test_index_order_is_kept(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("- [b](b.md)\n- [a](a.md)\n", encoding="utf-8")
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.md").write_text(f"# {name}\n", encoding="utf-8")
    names = [p.name for p in builder["pages"](tmp_path)]
    assert names == ["README.md", "b.md", "a.md", "c.md"]


def test_the_docs_test_notes_are_left_out() -> None:
    text = builder["render"]()
    assert "docs-test" in (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    assert not [line for line in text.splitlines() if line.startswith("<!-- docs-test")]
    assert "export mcp Files {" in text
