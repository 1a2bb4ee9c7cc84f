"""Write docs/llms.txt: the whole user documentation as one plain-text file.

The file is meant for pasting into a model's context. It holds docs/README.md and then every
page it links to, in the order the index lists them (pages not linked from the index follow in
name order), each under a banner naming its path, without the ``<!-- docs-test: ... -->``
comments that tell tests/test_docs_run.py how to run a code block. Run it after editing
anything under docs/:

    python scripts/build_llms_txt.py          # rewrite docs/llms.txt
    python scripts/build_llms_txt.py --check  # exit 1 when docs/llms.txt is stale
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"
OUTPUT = DOCS / "llms.txt"
_LINK = re.compile(r"\]\(([\w.-]+\.md)\)")
_TEST_NOTE = re.compile(r"^<!--\s*docs-test:.*?-->\n", re.S | re.M)


def pages(docs: Path = DOCS) -> list[Path]:
    """docs/README.md first, then the pages in the index's order, then any others."""
    index = docs / "README.md"
    ordered = [index]
    for name in _LINK.findall(index.read_text(encoding="utf-8")):
        page = docs / name
        if page.is_file() and page not in ordered:
            ordered.append(page)
    ordered += sorted(p for p in docs.glob("*.md") if p not in ordered)
    return ordered


def render(docs: Path = DOCS) -> str:
    parts = [
        "Auwgent for Python: the user documentation in one file.\n"
        "Generated from docs/ by scripts/build_llms_txt.py; do not edit by hand.\n"
    ]
    for page in pages(docs):
        banner = f"docs/{page.name}"
        text = _TEST_NOTE.sub("", page.read_text(encoding="utf-8")).strip("\n")
        parts.append(f"{'=' * 78}\n{banner}\n{'=' * 78}\n\n{text}\n")
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print("docs/llms.txt is stale: run python scripts/build_llms_txt.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
