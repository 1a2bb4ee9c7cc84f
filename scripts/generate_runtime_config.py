"""Write the runtime config's types and key table from its one table.

``auwgent.runtime.config.KEYS`` (one entry per key) and its sections (``retry``, ``timeouts``,
``limits``, ``budget``, ``codeLimits``) produce:

- the ``RuntimeConfig`` TypedDict and its sections' TypedDicts in
  ``src/auwgent/runtime/bindings.py`` (between the ``generated`` marker comments);
- ``ts/src/runtime-config.ts``: the TypeScript runtime's ``CONFIG_KEYS`` and ``RuntimeConfig``
  (the keys it has: the table minus ``NOT_YET_IN_TYPESCRIPT``);
- the key table of ``docs/runtime.md`` (between the ``runtime-config-keys`` markers).

    python scripts/generate_runtime_config.py          # rewrite the three
    python scripts/generate_runtime_config.py --check  # exit 1 when one is stale

``tests/runtime/engine/test_config_table.py`` fails when a file differs from what this writes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from auwgent.ir.vocabulary import NOT_YET_IN_TYPESCRIPT
from auwgent.runtime.config import KEYS, SECTIONS
from auwgent.runtime.config_fields import Section

ROOT = Path(__file__).resolve().parent.parent
BINDINGS = ROOT / "src" / "auwgent" / "runtime" / "bindings.py"
TYPESCRIPT = ROOT / "ts" / "src" / "runtime-config.ts"
DOCS = ROOT / "docs" / "runtime.md"

PY_BEGIN = "# --- generated from auwgent.runtime.config.KEYS (scripts/generate_runtime_config.py)\n"
PY_END = "# --- end of generated runtime config\n"
MD_BEGIN = "<!-- runtime-config-keys: generated from auwgent.runtime.config.KEYS -->\n"
MD_END = "<!-- end of runtime-config-keys -->\n"


def _py_section(section: Section) -> list[str]:
    lines = [f"class {section.type_name}(TypedDict, total=False):", f'    """{section.doc}"""', ""]
    for field in section.fields:
        if field.doc:
            lines.append(f"    #: {field.doc}")
        kind = "int" if field.integer else "float"
        lines.append(f"    {field.key}: {kind}{' | None' if field.nullable else ''}")
    return [*lines, "", ""]


def python_block() -> str:
    """The generated part of bindings.py: the sections' TypedDicts, then RuntimeConfig."""
    lines: list[str] = []
    for section in SECTIONS:
        lines += _py_section(section)
    lines += [
        "class RuntimeConfig(TypedDict, total=False):",
        '    """The runtime config keys every agent accepts (docs/runtime.md); a generated',
        "    ``AuwgentConfig`` adds the keys typed by its agent (apiKeys, context, tools, ...).",
        '    """',
        "",
    ]
    for key in KEYS:
        if key.python is None:
            continue
        if key.comment:
            lines.append(f"    #: {key.comment}")
        lines.append(f"    {key.name}: {key.python}")
    return "\n".join(lines) + "\n"


def typescript_file() -> str:
    """ts/src/runtime-config.ts."""
    missing = set(NOT_YET_IN_TYPESCRIPT["runtime_config_keys"])
    keys = [key for key in KEYS if key.name not in missing]
    lines = [
        "// Generated from auwgent.runtime.config.KEYS by scripts/generate_runtime_config.py:",
        "// do not edit. The runtime config keys the TypeScript runtime reads, and their types.",
        "",
        'import type { Provider } from "./providers/base.js";',
        'import type { FetchLike } from "./providers/http.js";',
        "",
        "export const CONFIG_KEYS = [",
        *(f'  "{key.name}",' for key in keys),
        "] as const;",
        "",
    ]
    used = {key.typescript for key in keys}
    for section in SECTIONS:
        if section.type_name not in used:
            continue
        lines += [f"/** {section.doc} */", f"export interface {section.type_name} {{"]
        for field in section.fields:
            if field.doc:
                lines.append(f"  /** {field.doc} */")
            lines.append(f"  {field.key}?: number{' | null' if field.nullable else ''};")
        lines += ["}", ""]
    lines += ["/** The runtime config given to `auwgent({...})` (docs/runtime.md). */"]
    lines += ["export interface RuntimeConfig {"]
    for key in keys:
        if key.comment:
            lines.append(f"  /** {key.comment} */")
        lines.append(f"  {key.name}?: {key.typescript};")
    return "\n".join([*lines, "}", ""])


def docs_table() -> str:
    """The key table of docs/runtime.md."""
    rows = ["| key | meaning |", "|---|---|"]
    rows += [f"| `{key.name}` | {key.doc} |" for key in KEYS]
    return "\n".join(rows) + "\n"


def _between(text: str, begin: str, end: str, body: str, where: Path) -> str:
    head, found, rest = text.partition(begin)
    if not found or end not in rest:
        raise SystemExit(f"{where}: the markers {begin.strip()!r} ... {end.strip()!r} are missing")
    return head + begin + body + end + rest.partition(end)[2]


#: Each generated file and how its whole text is made from its current text.
OUTPUTS: dict[Path, Callable[[str], str]] = {
    BINDINGS: lambda text: _between(
        text, PY_BEGIN, PY_END, "\n\n" + python_block() + "\n\n", BINDINGS
    ),
    TYPESCRIPT: lambda _text: typescript_file(),
    DOCS: lambda text: _between(text, MD_BEGIN, MD_END, "\n" + docs_table() + "\n", DOCS),
}


def stale() -> list[Path]:
    """The generated files whose text differs from what the table makes."""
    return [
        path
        for path, make in OUTPUTS.items()
        if not path.is_file() or make(path.read_text(encoding="utf-8")) != path.read_text("utf-8")
    ]


def main(argv: list[str]) -> int:
    if "--check" in argv:
        for path in stale():
            print(
                f"{path.relative_to(ROOT)} is stale: run python scripts/generate_runtime_config.py"
            )
        return 1 if stale() else 0
    for path, make in OUTPUTS.items():
        current = path.read_text(encoding="utf-8") if path.is_file() else ""
        path.write_text(make(current), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
