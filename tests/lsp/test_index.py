"""The index behind hover, definition, references and rename, over the repository's projects."""

from __future__ import annotations

from pathlib import Path

import pytest

from auwgent.compiler import nodes as n
from auwgent.lsp.workspace import ProjectState, Workspace

REPO = Path(__file__).resolve().parents[2]
CLEAN = sorted(
    p
    for folder in ("examples", "tests/data/ir", "tests/data/check")
    for p in (REPO / folder).rglob("*.agent")
    if "/check/" not in str(p) or p.name.startswith("ok_")
)


def _project(path: Path) -> tuple[ProjectState, str]:
    project, rel = Workspace().project_for(path)
    project.check()
    return project, rel


@pytest.mark.parametrize("path", CLEAN, ids=lambda p: str(p.relative_to(REPO)))
def test_every_reference_has_its_definition(path: Path) -> None:
    project, rel = _project(path)
    assert not any(d.is_error for d in project.diagnostics.get(rel, []))
    keys = {d.key for index in project.all_indexes() for d in index.definitions}
    index = project.index(rel)
    assert index is not None
    dangling = [r for r in index.references if r.key not in keys]
    assert dangling == []
    # Every written type name and helper line resolves.
    spans = {r.span for r in index.references}
    module = project.module(rel)
    assert module is not None
    for node in n.walk(module):
        if isinstance(node, n.NamedType):
            assert node.span in spans, node
        elif isinstance(node, n.HelperUse):
            assert node.name.span in spans, node
        elif isinstance(node, n.McpAnnotation) and node.server is not None:
            assert node.server.span in spans, node  # @mcp(Files) leads to the server


def test_names_across_the_multi_file_example() -> None:
    main = REPO / "examples" / "multi_file" / "auwgent_src" / "main.agent"
    project, rel = _project(main)
    index = project.index(rel)
    assert index is not None
    text = main.read_text(encoding="utf-8")

    def key_at(needle: str, nth: int = 0) -> str | None:
        at = -1
        for _ in range(nth + 1):
            at = text.index(needle, at + 1)
        return index.at(at)

    assert key_at("DataAnalyzer", 1) == "helpers/data_analyzer.agent::DataAnalyzer"
    assert key_at("PersonalisedPrompt", 1) == "prompts.agent::PersonalisedPrompt"
    assert key_at("MyGemini", 1) == "models.agent::MyGemini"
    assert key_at("ctx.name", 0) is None  # `ctx` itself is no name
    assert key_at("name, ctx.is_vip") == "main.agent::Main.ctx.name"
    assert key_at("db_query_users }") == "main.agent::Main.db_query_users"
    lib = project.index("prompts.agent")
    assert lib is not None
    prompt = next(d for d in lib.definitions if d.name == "PersonalisedPrompt")
    assert prompt.signature.startswith("export prompt PersonalisedPrompt(")
    assert prompt.signature.endswith(")")
