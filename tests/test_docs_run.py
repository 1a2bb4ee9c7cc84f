"""Every code block of docs/ that is meant to run, run or type-checked as written.

How each fenced block is taken (the convention is in docs/README.md):

- ```ts blocks are ``.agent`` sources: each is compiled as ``auwgent check`` compiles it and
  must have no errors. A block marked ``<!-- docs-test: file NAME -->`` is the file NAME of a
  project made of every such block of its page, compiled together;
- ```ts blocks marked ``<!-- docs-test: typescript -->`` are TypeScript: all of them go
  through one ``tsc --strict --noEmit`` run, against the TypeScript runtime (``ts/src``) and
  the bindings ``auwgent generate`` writes for the agent a ``bindings`` comment holds;
- ```python blocks are compiled, then all of them go through one mypy run (undefined names,
  wrong imports, wrong calls); ``generated.*`` modules are those of the page's ``bindings``
  comment, or unknown (``Any``) without one;
- ```bash / ```sh lines that call ``auwgent`` are parsed by the command's own parser: every
  command, option and argument must exist (nothing is run);
- an ``.agent`` block whose comments name error codes (``// E2031: ...``) must give exactly
  those errors (the checker's pages show mistakes);
- a block marked ``<!-- docs-test: skip REASON -->`` is a fragment and is left out; json,
  yaml, text and unmarked fences are data or output, not code.

A ``<!-- docs-test: with ... -->`` comment supplies the declarations an ``.agent`` block
needs but does not show (appended to it); ``<!-- docs-test: in-agent ... -->`` puts the block
(members: tools, workflows) inside an agent, with the members the comment holds; ``<!-- docs-test: bindings NAME ... -->`` holds an
agent source whose bindings (``generated/NAME_types.py``, ``generated/NAME.agent.types.ts``)
the page's Python and TypeScript blocks are checked against; written with nothing but the
name right before an ``.agent`` block, that block is the source. A page's Python blocks are
one script, in order; ``<!-- docs-test: python-assumes a, b -->`` names the objects of the
application its snippets use without defining them (``db``, ``Tools``): they are ``Any``, and
any other undefined name is an error.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from auwgent.cli import build_parser
from auwgent.compiler.diagnostics import render_all
from auwgent.compiler.pipeline import compile_sources
from auwgent.generate import generate_path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
TS = ROOT / "ts"
PAGES = sorted(DOCS.glob("*.md"))

#: The names a ``<!-- docs-test: NAME ... -->`` comment may have.
DIRECTIVES = frozenset(
    ("skip", "file", "typescript", "with", "in-agent", "bindings", "python-assumes")
)
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
_DIRECTIVE = re.compile(
    r"<!--\s*docs-test:\s*(\w[\w-]*)[ \t]*([^\n]*?)[ \t]*(?:-->|\n(.*?)-->)", re.S
)


@dataclass
class Block:
    page: str
    line: int
    lang: str
    text: str
    marks: dict[str, str] = field(default_factory=dict)
    body: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"docs/{self.page}:{self.line}"

    @property
    def kind(self) -> str:
        if "skip" in self.marks:
            return "skip"
        if self.lang in ("ts", "typescript"):
            return "typescript" if "typescript" in self.marks else "agent"
        if self.lang in ("python", "py"):
            return "python"
        if self.lang in ("bash", "sh", "shell", "console"):
            return "shell"
        return "data"


@dataclass
class Page:
    name: str
    blocks: list[Block]
    bindings: dict[str, str | Block]
    assumes: list[str]


def _read(path: Path) -> Page:
    text = path.read_text(encoding="utf-8")
    blocks: list[Block] = []
    bindings: dict[str, str | Block] = {}
    assumes: list[str] = []
    for found in _DIRECTIVE.finditer(text):
        if found.group(1) == "bindings" and found.group(3):
            bindings[found.group(2)] = textwrap.dedent(found.group(3))
        if found.group(1) == "python-assumes":
            assumes += found.group(2).replace(",", " ").split()
    end = 0
    for fence in _FENCE.finditer(text):
        gap = text[end : fence.start()]
        end = fence.end()
        block = Block(path.name, text.count("\n", 0, fence.start()) + 1, fence[1], fence[2])
        # The directives between the previous block and this one, closest last.
        tail = gap.rstrip()
        while tail.endswith("-->"):
            opened = tail.rfind("<!--")
            directive = _DIRECTIVE.fullmatch(tail[opened:])
            if directive is None:
                break
            name, arg, body = directive.group(1), directive.group(2), directive.group(3) or ""
            if name != "bindings":
                block.marks[name] = arg
                block.body[name] = textwrap.dedent(body)
            elif not body.strip():  # the block itself is the bindings' source
                bindings[arg] = block
            tail = tail[:opened].rstrip()
        blocks.append(block)
    return Page(path.name, blocks, bindings, assumes)


READ = [_read(path) for path in PAGES]
BLOCKS = [block for page in READ for block in page.blocks]


def _ids(blocks: list[Block]) -> list[str]:
    return [block.where for block in blocks]


def test_every_docs_test_comment_is_a_known_one() -> None:
    """A misspelt comment would leave its block unchecked or checked the wrong way."""
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        for opened in re.finditer(r"<!--\s*docs-test", text):
            found = _DIRECTIVE.match(text, opened.start())
            assert found is not None and found.group(1) in DIRECTIVES, (
                f"docs/{path.name}:{text.count(chr(10), 0, opened.start()) + 1}: "
                f"unknown docs-test comment; known: {', '.join(sorted(DIRECTIVES))}"
            )


def test_the_docs_have_blocks_of_each_kind_and_few_are_skipped() -> None:
    kinds = [block.kind for block in BLOCKS]
    assert kinds.count("agent") >= 20 and kinds.count("python") >= 35
    assert kinds.count("typescript") >= 1 and kinds.count("shell") >= 6
    skipped = [block for block in BLOCKS if block.kind == "skip"]
    assert len(skipped) * 5 <= len(BLOCKS) - kinds.count("data"), _ids(skipped)
    for block in skipped:
        assert block.marks["skip"], f"{block.where}: say why the block is skipped"


# -- .agent blocks ---------------------------------------------------------------------------


_AGENT = 'agent DocsAgent {\n    default config {\n        model: gemini("m")\n        prompt: "p"\n    }\n'
_EXPECTED = re.compile(r"//.*?\b(E\d{4})\b")


def _agent_source(block: Block) -> str:
    text = block.text
    if "in-agent" in block.marks:
        members = textwrap.indent(block.body["in-agent"] + "\n" + text, "    ")
        text = _AGENT + members + "}\n"
    return text + ("\n" + block.body["with"] if "with" in block.marks else "")


SINGLE = [b for b in BLOCKS if b.kind == "agent" and "file" not in b.marks]


@pytest.mark.parametrize("block", SINGLE, ids=_ids(SINGLE))
def test_agent_blocks_compile(block: Block) -> None:
    """No errors, or exactly the codes the block's comments name (``// E2031: ...``)."""
    result = compile_sources({"doc.agent": _agent_source(block)})
    errors = [d for d in result.diagnostics if d.is_error]
    expected = set(_EXPECTED.findall(block.text))
    assert {d.code for d in errors} == expected, f"{block.where}:\n" + render_all(
        errors, color=False
    )


PROJECTS = [p for p in READ if any(b.kind == "agent" and "file" in b.marks for b in p.blocks)]


@pytest.mark.parametrize("page", PROJECTS, ids=[p.name for p in PROJECTS])
def test_multi_file_agent_examples_compile_together(page: Page) -> None:
    files = {
        b.marks["file"]: _agent_source(b)
        for b in page.blocks
        if b.kind == "agent" and "file" in b.marks
    }
    result = compile_sources(files)
    errors = [d for d in result.diagnostics if d.is_error]
    assert not errors, f"docs/{page.name}:\n{render_all(errors, color=False)}"


# -- shell blocks ----------------------------------------------------------------------------


def _commands(block: Block) -> list[list[str]]:
    """The ``auwgent`` command lines of a shell block (``$ `` prompts and comments off)."""
    found = []
    for raw in block.text.replace("\\\n", " ").splitlines():
        line = raw.strip().removeprefix("$ ")
        if not line.startswith("auwgent "):
            continue
        words = shlex.split(line, comments=True)
        cut = next((i for i, w in enumerate(words) if w in ("|", ">", "<", "&&", ";")), None)
        found.append(words[1:cut])
    return found


SHELL = [b for b in BLOCKS if b.kind == "shell" and _commands(b)]


@pytest.mark.parametrize("block", SHELL, ids=_ids(SHELL))
def test_shell_blocks_name_real_commands_and_options(block: Block) -> None:
    parser = build_parser()
    for words in _commands(block):
        try:
            parser.parse_args(words)
        except SystemExit as exc:  # argparse's way of saying no
            raise AssertionError(f"{block.where}: `auwgent {shlex.join(words)}` fails") from exc


# -- Python blocks ---------------------------------------------------------------------------

PYTHON = [b for b in BLOCKS if b.kind == "python"]


@pytest.mark.parametrize("block", PYTHON, ids=_ids(PYTHON))
def test_python_blocks_compile(block: Block) -> None:
    compile(block.text, block.where, "exec", flags=0x2000)  # PyCF_ALLOW_TOP_LEVEL_AWAIT


def _page_module(page: str) -> str:
    """The module a page's code is written to: ``doc_code_mode`` for code-mode.md."""
    return f"doc_{page.removesuffix('.md').replace('-', '_')}"


def _write_bindings(page: Page, folder: Path, targets: str) -> None:
    """Generate the bindings of the page's ``bindings`` comments into ``folder/generated``."""
    if not page.bindings:
        return
    source = folder / "src"
    source.mkdir(parents=True, exist_ok=True)
    for name, text in page.bindings.items():
        source_text = text if isinstance(text, str) else _agent_source(text)
        (source / f"{name}.agent").write_text(source_text, encoding="utf-8")
    (folder / "auwgent.yml").write_text(
        f'source: "src"\noutput: "generated"\ntargets: [{targets}]\n', encoding="utf-8"
    )
    result = generate_path(folder)
    assert result.ok, (page.name, result.errors, [d.message for d in result.diagnostics])


def test_python_blocks_type_check(tmp_path: Path) -> None:
    """One mypy run per group of pages that share no ``generated`` package (one per page
    with bindings, one for all the others)."""
    plain = tmp_path / "plain"
    plain.mkdir()
    folders: list[Path] = []
    for page in READ:
        blocks = [b for b in page.blocks if b.kind == "python"]
        if not blocks:
            continue
        folder = plain
        if page.bindings:
            folder = tmp_path / page.name.removesuffix(".md")
            _write_bindings(page, folder, '"py"')
            folders.append(folder)
        # A page's blocks are one script, in order: a later block uses what an earlier one
        # defined (blank lines keep each block's lines where mypy reports them).
        assumed = "; ".join(f"{name}: _Any" for name in page.assumes)
        lines = [f"from typing import Any as _Any; {assumed}" if assumed else ""]
        for block in blocks:
            lines += [""] * (block.line - len(lines)) + block.text.splitlines()
        (folder / f"{_page_module(page.name)}.py").write_text(
            "\n".join(lines) + "\n", encoding="utf-8"
        )
    (tmp_path / "mypy.ini").write_text(
        "[mypy]\nwarn_unused_configs = True\ncheck_untyped_defs = True\n"
        # Snippets run inside an application's async function, stubs show signatures, and a
        # page may define a class again to show a variant.
        "disable_error_code = top-level-await, empty-body, no-redef\n"
        "[mypy-generated.*]\nignore_missing_imports = True\n"
        # redis-py's annotations make every awaited command "Awaitable[T] | T".
        "[mypy-redis.*]\nfollow_imports = skip\n",
        encoding="utf-8",
    )
    failures = []
    for folder in [plain, *folders]:
        files = sorted(str(p.relative_to(folder)) for p in folder.glob("doc_*.py"))
        done = subprocess.run(
            [sys.executable, "-m", "mypy", "--config-file", str(tmp_path / "mypy.ini"),
             "--cache-dir", str(ROOT / ".mypy_cache" / "docs"), "--no-error-summary",
             "--hide-error-context", *files],
            cwd=folder, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        errors = [line for line in done.stdout.splitlines() if ": error:" in line]
        # Exit 1 is "errors found"; anything else (or 1 without one) is mypy failing to run.
        assert done.returncode == (1 if errors else 0), done.stdout + done.stderr
        failures += errors
    assert not failures, "\n".join(_where(line) for line in failures)


def _where(line: str) -> str:
    """A mypy line about ``doc_<page>.py`` pointed back at the page."""
    found = re.match(r"doc_(\w+)\.py:(\d+): (.*)", line)
    if found is None:
        return line
    page, at, message = found.groups()
    return f"docs/{page.replace('_', '-')}.md:{at}: {message}"


# -- TypeScript blocks -----------------------------------------------------------------------


def test_typescript_blocks_type_check(tmp_path: Path) -> None:
    tsc = TS / "node_modules" / ".bin" / "tsc"
    if not tsc.exists():
        pytest.skip("the TypeScript compiler is not installed: cd ts && npm ci")
    files = []
    for page in READ:
        blocks = [b for b in page.blocks if b.kind == "typescript"]
        if not blocks:
            continue
        folder = tmp_path / page.name.removesuffix(".md")
        folder.mkdir()
        _write_bindings(page, folder, '"ts"')
        for block in blocks:
            file = folder / f"{_page_module(page.name)}_{block.line}.ts"
            # A module of its own (top-level await), its lines where the page has them.
            file.write_text("export {}" + "\n" * block.line + block.text, encoding="utf-8")
            files.append(str(file.relative_to(tmp_path)))
    options = {
        "target": "ES2022", "module": "ESNext", "moduleResolution": "Bundler",
        "lib": ["ES2022", "DOM"], "strict": True, "noEmit": True, "skipLibCheck": True,
        "types": ["node"], "typeRoots": [str(TS / "node_modules" / "@types")],
        "paths": {"auwgent": [str(TS / "src" / "index.ts")],  # the runtime, from source
                  "@opentelemetry/*": [str(TS / "node_modules" / "@opentelemetry" / "*")]},
    }  # fmt: skip
    config = {"compilerOptions": options, "files": files}
    (tmp_path / "tsconfig.json").write_text(json.dumps(config), encoding="utf-8")
    done = subprocess.run(
        [str(tsc), "-p", str(tmp_path / "tsconfig.json")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
