"""Helpers on the syntax tree: walking it, and mapping string characters back to the file."""

from __future__ import annotations

from auwgent.compiler import nodes as n
from auwgent.compiler.parser import parse
from auwgent.compiler.source import SourceFile, Span


def test_walk_visits_every_node_once_in_source_order() -> None:
    text = 'type T { a: string @desc "x" }\nagent A { output: T }'
    module, diags = parse(SourceFile("t", text))
    assert diags == []
    kinds = [type(node).__name__ for node in n.walk(module)]
    assert kinds[:8] == [
        "Module",
        "TypeDecl",
        "Name",
        "Field",
        "Name",
        "PrimitiveType",
        "DescAnnotation",
        "StringLit",
    ]
    assert kinds.count("Name") == 3
    starts = [node.span.start for node in n.walk(module) if isinstance(node, n.Name)]
    assert starts == sorted(starts)


def test_span_of_handles_edges() -> None:
    lit = n.StringLit("ab", n.StringKind.DOUBLE, Span(10, 14), (11, 12, 13))
    assert lit.span_of(0, 2) == Span(11, 13)
    assert lit.span_of(1, 1) == Span(12, 12)
    assert lit.span_of(2, 2) == Span(13, 13)
    assert lit.span_of(-5, 99) == Span(11, 13)
    empty = n.StringLit("", n.StringKind.DOUBLE, Span(0, 2), (1,))
    assert empty.span_of(0, 0) == Span(1, 1)


def test_annotation_and_config_helpers() -> None:
    text = (
        'agent A {\n default config { model: M\n prompt: "p"\n model: N }\n'
        ' tool t(): string @example() @desc "first" @desc "second" @example(a = 1)\n}'
    )
    module, diags = parse(SourceFile("t", text))
    assert diags == []
    agent = module.agents[0]
    config, tool = agent.members
    assert isinstance(config, n.ConfigBlock) and isinstance(tool, n.ToolDecl)
    model = config.entry("model")
    assert model is not None and model.value.terms == (n.NameRef("M", model.value.span),)
    assert config.entry("embedding") is None
    assert tool.desc is not None and tool.desc.value == "first"
    assert [len(e.args) for e in tool.examples] == [0, 1]
    assert not agent.is_helper
