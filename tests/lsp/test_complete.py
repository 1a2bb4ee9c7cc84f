"""Completion at each kind of place, on a buffer being typed (``|`` marks the cursor)."""

from __future__ import annotations

from pathlib import Path

import pytest

from auwgent.lsp.complete import complete
from auwgent.lsp.workspace import Workspace

LIB = """export type Ticket {
    title: string
}
export model Fast {
    provider: gemini("m")
}
export prompt Hello(name: string) {
    "Hello {{name}}."
}
export intent Planning {
    description: "a plan"
    fields {
        step: string
    }
}
export helper Writer {
    description: "writes"
    default config {
        model: Fast
        prompt: "Write."
    }
}
type Private {
    x: string
}
"""

MAIN = """import { Ticket, Fast, Hello, Planning, Writer } from "./lib"

agent Main {
    default config {
        model: Fast
        prompt: Hello(ctx.user)
    }
    context {
        user: string
        count: number
    }
    output: Ticket
    tool lookup(id: string): Ticket
    workflow run(id: string): string {
        tool store(key: string): string
        let found = lookup(id)
        return "ok"
    }
    helpers {
        Writer with tools { lookup }
    }
    intent: Planning
}
"""

CASES = [
    # (what replaces the marked text in MAIN, the marked text, expected, not expected)
    ("return ctx.|", 'return "ok"', {"user", "count"}, {"lookup"}),
    ("|", "    output: Ticket", {"tool", "workflow", "context", "helpers", "output:"}, set()),
    ("    output: T|", "    output: Ticket", {"Text", "string", "Ticket"}, {"Fast"}),
    ("count: n|", "count: number", {"number", "string", "Ticket"}, {"Text", "Fast"}),
    ("lookup(id: s|", "lookup(id: string", {"string", "Ticket"}, {"lookup"}),
    ("): T|", "): Ticket\n    workflow", {"Ticket", "string"}, set()),
    (
        "        |",
        '        return "ok"',
        {"let", "return", "if", "found", "id", "store", "lookup", "run", "ctx"},
        {"Fast"},
    ),
    ("model: F|", "model: Fast", {"Fast", "gemini", "openai", "custom"}, {"Ticket", "Hello"}),
    ("prompt: H|", "prompt: Hello(ctx.user)", {"Hello", "ctx"}, {"Fast"}),
    (
        "        m|",
        "        model: Fast",
        {"model", "prompt", "maxToolLoops", "embedding", "protocol"},
        {"Fast"},
    ),
    ("        W|", "        Writer with tools { lookup }", {"Writer"}, {"Fast", "Ticket"}),
    ("Writer with |", "Writer with tools { lookup }", {"all tools", "tools"}, set()),
    ("Writer with tools { l|", "Writer with tools { lookup }", {"lookup"}, {"run", "store"}),
    ("intent: P|", "intent: Planning", {"Planning"}, {"Ticket", "Writer"}),
    ("@|", "    tool lookup", {"desc", "example"}, set()),
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "auwgent.yml").write_text("source: .\n")
    (tmp_path / "lib.agent").write_text(LIB)
    (tmp_path / "main.agent").write_text(MAIN)
    return tmp_path


def _labels(root: Path, text: str, name: str = "main.agent") -> set[str]:
    project, rel = Workspace().project_for(root / name)
    offset = text.index("|")
    project.update(rel, text.replace("|", "", 1))
    project.check()
    return {c.label for c in complete(project, rel, offset)}


@pytest.mark.parametrize(("typed", "replaced", "expected", "absent"), CASES)
def test_completion_in_place(
    root: Path, typed: str, replaced: str, expected: set[str], absent: set[str]
) -> None:
    assert replaced in MAIN
    labels = _labels(root, MAIN.replace(replaced, typed, 1))
    assert expected <= labels, sorted(labels)
    assert not absent & labels, sorted(labels)


def test_tool_groups_in_a_tools_block(root: Path) -> None:
    group = "tools FilesTools {\n    read(path: string): string\n}\n"
    text = group + MAIN.replace("agent Main {", "agent Main {\n    tools {\n        |\n    }", 1)
    assert "FilesTools" in _labels(root, text)


def test_top_level_import_export_and_templates(root: Path) -> None:
    top = _labels(root, MAIN + "\n|")
    assert {"agent", "helper", "type", "model", "prompt", "intent", "import", "export"} <= top
    assert _labels(root, MAIN + "\nexport |") == {
        "model",
        "mcp",
        "type",
        "prompt",
        "persona",
        "intent",
        "helper",
        "tools",
    }
    assert "tools" in top
    imports = _labels(root, 'import { | } from "./lib"\n' + MAIN)
    assert {"Ticket", "Fast", "Hello", "Planning", "Writer"} <= imports
    assert "Private" not in imports  # not exported
    template = _labels(root, LIB.replace('"Hello {{name}}."', '"Hello {{n|}}"'), "lib.agent")
    assert {"name", "ctx", "#if", "@schema(input)"} <= template
    prompt = _labels(root, LIB.replace('    "Hello {{name}}."', "    |"), "lib.agent")
    assert {"Example", "if"} <= prompt
