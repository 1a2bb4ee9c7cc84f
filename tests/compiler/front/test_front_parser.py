"""The parser: the manual's programs parse, trees have the right shape, spans are exact."""

from __future__ import annotations

from pathlib import Path

import pytest

from auwgent.compiler import nodes as n
from auwgent.compiler.parser import parse
from auwgent.compiler.source import SourceFile, Span

DATA = Path(__file__).parents[2] / "data" / "parse"
OK_FILES = sorted((DATA / "ok").rglob("*.agent"))
EXAMPLES = sorted((Path(__file__).parents[3] / "examples").rglob("*.agent"))


def parse_ok(text: str) -> n.Module:
    module, diags = parse(SourceFile("t.agent", text))
    assert diags == [], [d.message for d in diags]
    return module


def agent_of(text: str) -> n.AgentDecl:
    agent = parse_ok(text).decls[-1]
    assert isinstance(agent, n.AgentDecl)
    return agent


def expr_of(text: str) -> n.Expr:
    agent = agent_of(f"agent A {{ workflow w(): string {{ return {text} }} }}")
    workflow = agent.members[0]
    assert isinstance(workflow, n.WorkflowDecl)
    stmt = workflow.body[0]
    assert isinstance(stmt, n.ReturnStmt) and stmt.value is not None
    return stmt.value


def show(expr: n.Expr) -> str:
    """A fully parenthesised rendering, to assert precedence."""
    if isinstance(expr, n.Binary):
        return f"({show(expr.left)} {expr.op} {show(expr.right)})"
    if isinstance(expr, n.Unary):
        return f"({expr.op}{show(expr.operand)})"
    if isinstance(expr, n.Literal):
        return repr(expr.value)
    if isinstance(expr, n.NameRef):
        return expr.name
    if isinstance(expr, n.CtxRef):
        return f"ctx.{expr.name.text}"
    if isinstance(expr, n.Member):
        return f"{show(expr.object)}.{expr.name.text}"
    if isinstance(expr, n.Index):
        return f"{show(expr.object)}[{show(expr.index)}]"
    if isinstance(expr, n.Call):
        return f"{expr.callee.text}({', '.join(show(a) for a in expr.args)})"
    if isinstance(expr, n.ArrayExpr):
        return f"[{', '.join(show(i) for i in expr.items)}]"
    assert isinstance(expr, n.ObjectExpr)
    return "{" + ", ".join(f"{e.key.text}: {show(e.value)}" for e in expr.entries) + "}"


@pytest.mark.parametrize("path", OK_FILES + EXAMPLES, ids=lambda p: p.parent.name + "/" + p.name)
def test_every_program_of_the_manual_parses(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    module, diags = parse(SourceFile(path.name, text))
    assert diags == [], [d.message for d in diags]
    assert module.decls


@pytest.mark.parametrize("path", OK_FILES, ids=lambda p: p.name)
def test_spans_lie_inside_the_file_and_names_match_their_text(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    module, _ = parse(SourceFile(path.name, text))
    for node in n.walk(module):
        span = getattr(node, "span", None)
        assert isinstance(span, Span)
        assert 0 <= span.start <= span.end <= len(text), node
        if isinstance(node, n.Name) and text[span.start] not in "\"'":
            assert text[span.start : span.end] == node.text


def test_model_block_with_provider_options() -> None:
    module = parse_ok(
        'model M {\n provider: gemini("gemini-2.5-flash", {\n temperature: 0.7\n top_k: 40\n'
        ' stop: ["a", "b"], safety: { level: "high" }\n flag: true\n offset: -2 })\n}'
    )
    model = module.decls[0]
    assert isinstance(model, n.ModelDecl)
    (entry,) = model.entries
    assert entry.name.text == "provider"
    (call,) = entry.value.terms
    assert isinstance(call, n.Call) and call.callee.text == "gemini"
    assert show(call) == (
        "gemini('gemini-2.5-flash', {temperature: 0.7, top_k: 40, stop: ['a', 'b'], "
        "safety: {level: 'high'}, flag: True, offset: -2})"
    )


def test_config_entries_are_generic_and_prompt_composition_keeps_order() -> None:
    agent = agent_of(
        'agent A {\n default config {\n model: M\n embedding: gemini("e")\n maxToolLoops: 5\n'
        ' protocol: "native"\n prompt: G(ctx.name, ctx.vip) + W + "Inline {{ctx.name}}" + {\n'
        ' "block"\n }\n }\n config Strict { model: M\n prompt: "s" }\n}'
    )
    default, strict = agent.members
    assert isinstance(default, n.ConfigBlock) and default.is_default
    assert isinstance(strict, n.ConfigBlock) and strict.name is not None
    assert strict.name.text == "Strict"
    assert [e.name.text for e in default.entries] == [
        "model",
        "embedding",
        "maxToolLoops",
        "protocol",
        "prompt",
    ]
    assert default.entry("maxToolLoops") is not None
    loops = default.entry("maxToolLoops")
    assert loops is not None and loops.value.terms == (n.Literal(5, loops.value.terms[0].span),)
    prompt = default.entry("prompt")
    assert prompt is not None
    kinds = [type(t).__name__ for t in prompt.value.terms]
    assert kinds == ["Call", "NameRef", "PromptText", "PromptBlock"]
    inline = prompt.value.terms[2]
    assert isinstance(inline, n.PromptText)
    assert [type(t).__name__ for t in inline.template] == ["TText", "TExpr"]


def test_types_fields_optional_arrays_unions_and_literals() -> None:
    module = parse_ok(
        'type T {\n a?: string[] @desc "many"\n b: "low" | "high"\n c: { x: number, y: boolean }[]\n'
        " d: A | { z: string }\n e: (A | B)[]\n}"
    )
    decl = module.decls[0]
    assert isinstance(decl, n.TypeDecl)
    a, b, c, d, e = decl.fields
    assert a.optional and isinstance(a.type, n.ArrayType) and a.desc is not None
    assert a.desc.value == "many"
    assert isinstance(b.type, n.UnionType)
    assert [v.value for v in b.type.variants if isinstance(v, n.LiteralType)] == ["low", "high"]
    assert isinstance(c.type, n.ArrayType) and isinstance(c.type.element, n.ObjectType)
    assert [f.name.text for f in c.type.element.fields] == ["x", "y"]
    assert isinstance(d.type, n.UnionType)
    assert isinstance(d.type.variants[1], n.ObjectType)
    assert isinstance(e.type, n.ArrayType) and isinstance(e.type.element, n.UnionType)


def test_input_output_text_named_inline_and_union() -> None:
    agent = agent_of("agent A {\n input: Text\n output: Person | Org\n}")
    inp, out = agent.members
    assert isinstance(inp, n.InputDecl) and isinstance(inp.type, n.TextType)
    assert isinstance(out, n.OutputDecl) and isinstance(out.type, n.UnionType)
    helper = agent_of('helper H {\n input: {\n q: string @desc "d"\n }\n output: Report\n}')
    assert helper.is_helper
    inp = helper.members[0]
    assert isinstance(inp, n.InputDecl) and isinstance(inp.type, n.ObjectType)


def test_tools_with_annotations_in_any_order_and_repeated_examples() -> None:
    agent = agent_of(
        'agent A {\n tool t(a: string, b?: number): string\n @example(a = "x")\n'
        ' @desc "d"\n @example(a = "y", b = 2)\n tools {\n u(): number @example()\n'
        " v(list: string[]): boolean\n }\n}"
    )
    tool, block = agent.members
    assert isinstance(tool, n.ToolDecl)
    assert tool.desc is not None and tool.desc.value == "d"
    assert [[(a.name.text, show(a.value)) for a in e.args] for e in tool.examples] == [
        [("a", "'x'")],
        [("a", "'y'"), ("b", "2")],
    ]
    assert tool.params[1].optional
    assert isinstance(block, n.ToolsBlock)
    assert [t.name.text for t in block.tools] == ["u", "v"]
    assert block.tools[0].examples[0].args == ()


def test_workflow_statements_scoped_tools_and_trailing_example() -> None:
    agent = agent_of(
        "agent A {\n workflow w(id: number, tag?: string): string {\n"
        ' description: "d"\n tool f(x: number): string\n let a = f(id)\n a = a + "!"\n'
        " if (id > 1) {\n return a\n } else if (ctx.ok) {\n f(2)\n } else {\n return\n }\n"
        ' tools { g(): string }\n return "end"\n } @example(id = 1) @example()\n}'
    )
    workflow = agent.members[0]
    assert isinstance(workflow, n.WorkflowDecl)
    assert workflow.description is not None and workflow.description.text.value == "d"
    assert [t.name.text for t in workflow.tools] == ["f", "g"]
    kinds = [type(s).__name__ for s in workflow.body]
    assert kinds == ["LetStmt", "AssignStmt", "IfStmt", "ReturnStmt"]
    if_stmt = workflow.body[2]
    assert isinstance(if_stmt, n.IfStmt)
    assert [show(b.cond) for b in if_stmt.branches] == ["(id > 1)", "ctx.ok"]
    assert isinstance(if_stmt.branches[1].body[0], n.ExprStmt)
    assert if_stmt.else_body is not None
    (ret,) = if_stmt.else_body
    assert isinstance(ret, n.ReturnStmt) and ret.value is None
    assert len(workflow.examples) == 2
    assert workflow.params[1].optional


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("a + b * c == d && !e || f", "((((a + (b * c)) == d) && (!e)) || f)"),
        ("-1 - -x", "(-1 - (-x))"),
        ("(a + b) % 3 / 2", "(((a + b) % 3) / 2)"),
        ("a.b[0].c", "a.b[0].c"),
        ("ctx.items[ctx.i]", "ctx.items[ctx.i]"),
        ("f(1, [2, 3], {k: null})", "f(1, [2, 3], {k: None})"),
        ("a < b != c >= d", "((a < b) != (c >= d))"),
        ("'s' + 1.5", "('s' + 1.5)"),
    ],
)
def test_expression_precedence(text: str, shape: str) -> None:
    assert show(expr_of(text)) == shape


def test_call_on_the_next_line_is_a_new_statement() -> None:
    agent = agent_of("agent A { workflow w(): string {\n let a = b\n (c)\n} }")
    workflow = agent.members[0]
    assert isinstance(workflow, n.WorkflowDecl)
    assert [type(s).__name__ for s in workflow.body] == ["LetStmt", "ExprStmt"]


def test_prompts_param_and_plain_with_examples_and_js_if() -> None:
    module = parse_ok(
        "prompt P(name: string, vip: boolean) {\n \"Hi {{name}}\"\n 'single'\n"
        ' """\n  triple\n """\n example {\n user: "u"\n assistant: "a {{name}}"\n }\n'
        ' if (vip) { return "V" } else if (name == "x") { return "X" } else { "plain" }\n}\n'
        'prompt Q { "static" }'
    )
    p, q = module.decls
    assert isinstance(p, n.PromptDecl) and isinstance(q, n.PromptDecl)
    assert p.params is not None and [f.name.text for f in p.params] == ["name", "vip"]
    assert q.params is None
    kinds = [type(i).__name__ for i in p.items]
    assert kinds == ["PromptText", "PromptText", "PromptText", "PromptExample", "PromptIf"]
    assert [i.string.kind.name for i in p.items[:3] if isinstance(i, n.PromptText)] == [
        "DOUBLE",
        "SINGLE",
        "TRIPLE",
    ]
    example = p.items[3]
    assert isinstance(example, n.PromptExample)
    assert isinstance(example.assistant.template[1], n.TExpr)
    js_if = p.items[4]
    assert isinstance(js_if, n.PromptIf) and js_if.else_ is not None
    nested = js_if.else_[0]
    assert isinstance(nested, n.PromptIf) and nested.else_ is not None
    assert isinstance(nested.else_[0], n.PromptText)


def test_templates_become_trees_with_spans_inside_the_string() -> None:
    text = (
        'prompt P(a: string) {\n "A {{ a }} {{#if a == \\"x\\" && !ctx.off}}Y{{#if ctx.n > 1}}N{{/if}}'
        '{{else}}Z{{/if}} {{@schema(output)}} {{@schema( context )}}"\n}'
    )
    module, diags = parse(SourceFile("t", text))
    assert diags == []
    prompt = module.decls[0]
    assert isinstance(prompt, n.PromptDecl)
    item = prompt.items[0]
    assert isinstance(item, n.PromptText)
    nodes_ = item.template
    assert [type(t).__name__ for t in nodes_] == [
        "TText",
        "TExpr",
        "TText",
        "TIf",
        "TText",
        "TSchema",
        "TText",
        "TSchema",
    ]
    expr = nodes_[1]
    assert isinstance(expr, n.TExpr)
    assert text[expr.expr.span.start : expr.expr.span.end] == "a"
    assert text[expr.span.start : expr.span.end] == "{{ a }}"
    cond_if = nodes_[3]
    assert isinstance(cond_if, n.TIf)
    assert show(cond_if.cond) == "((a == 'x') && (!ctx.off))"
    cond_text = text[cond_if.cond.span.start : cond_if.cond.span.end]
    assert cond_text == 'a == \\"x\\" && !ctx.off'
    inner = cond_if.then[1]
    assert isinstance(inner, n.TIf) and inner.else_ is None
    assert cond_if.else_ is not None and isinstance(cond_if.else_[0], n.TText)
    schemas = [t for t in nodes_ if isinstance(t, n.TSchema)]
    assert [s.target for s in schemas] == ["output", "context"]


def test_escaped_braces_are_literal_text() -> None:
    module = parse_ok('prompt P { "use \\{\\{name\\}\\} literally" }')
    prompt = module.decls[0]
    assert isinstance(prompt, n.PromptDecl)
    item = prompt.items[0]
    assert isinstance(item, n.PromptText)
    assert item.template == (n.TText("use {{name}} literally", item.template[0].span),)


def test_helpers_lines_and_helper_descriptions() -> None:
    agent = agent_of(
        "agent A {\n helpers {\n One\n Two with all tools\n Three with tools { a, b } handoff user\n"
        " Four handoff user then continue\n Five with tools { c } handoff user then continue\n }\n}"
    )
    block = agent.members[0]
    assert isinstance(block, n.HelpersBlock)
    summary = [(u.name.text, type(u.grant).__name__, u.handoff) for u in block.uses]
    assert summary == [
        ("One", "ToolGrantNone", "none"),
        ("Two", "ToolGrantAll", "none"),
        ("Three", "ToolGrantList", "user"),
        ("Four", "ToolGrantNone", "user_then_continue"),
        ("Five", "ToolGrantList", "user_then_continue"),
    ]
    grant = block.uses[2].grant
    assert isinstance(grant, n.ToolGrantList)
    assert [g.text for g in grant.names] == ["a", "b"]
    helper = agent_of(
        'helper H {\n description: "top"\n default config { description: "inner" }\n}'
    )
    assert isinstance(helper.members[0], n.DescriptionEntry)


def test_intents_declared_attached_and_inline() -> None:
    module = parse_ok(
        'export intent P {\n description: "d"\n fields {\n step: string\n n?: number\n }\n}\n'
        "agent A {\n intent: P + Q\n}\n"
        'agent B {\n intent: {\n X { fields { a: string } }\n Y { description: "y" }\n }\n}'
    )
    intent, a, b = module.decls
    assert isinstance(intent, n.IntentDecl) and intent.export_span is not None
    assert intent.description is not None and [f.name.text for f in intent.fields] == ["step", "n"]
    assert isinstance(a, n.AgentDecl) and isinstance(b, n.AgentDecl)
    attach = a.members[0]
    assert isinstance(attach, n.IntentAttach)
    assert [i.name for i in attach.items if isinstance(i, n.NameRef)] == ["P", "Q"]
    inline = b.members[0]
    assert isinstance(inline, n.IntentAttach)
    assert [i.name.text for i in inline.items if isinstance(i, n.IntentDecl)] == ["X", "Y"]


def test_imports_and_exports() -> None:
    module = parse_ok(
        "import { A, B } from \"./models\"\nimport { C } from '../x.agent'\n"
        'export model M { provider: openai("gpt-4o") }\nexport type T { a: string }\n'
        'export prompt P { "p" }\nexport helper H { }\nexport tool t(): string\n'
    )
    first, second, model, type_, prompt, helper, tool = module.decls
    assert isinstance(first, n.ImportDecl)
    assert [x.text for x in first.names] == ["A", "B"] and first.path.value == "./models"
    assert isinstance(second, n.ImportDecl) and second.path.value == "../x.agent"
    for decl in (model, type_, prompt, helper, tool):
        assert getattr(decl, "export_span", None) is not None
    assert module.imports == (first, second)
    assert [a.name.text for a in module.agents] == ["H"]


def test_recovery_reports_every_error_and_keeps_later_declarations() -> None:
    text = (
        "type A {\n x string\n}\n"
        'agent B {\n toool y(): string\n default config { model: M prompt: "p" }\n}\n'
        'prompt C { "{{#if}}" }\n'
        'model D { provider: gemini("g") }\n'
    )
    module, diags = parse(SourceFile("t", text))
    assert len(diags) >= 3
    names = [d.name.text for d in module.decls if hasattr(d, "name")]
    assert names == ["A", "B", "C", "D"]
    agent = module.decls[1]
    assert isinstance(agent, n.AgentDecl)
    assert any(isinstance(m, n.ConfigBlock) for m in agent.members)


def test_unclosed_block_names_the_open_block() -> None:
    _, diags = parse(SourceFile("t", "agent Main {\n tool x(): string\n"))
    (diag,) = diags
    assert diag.code == "E0101"
    assert "`agent Main`" in diag.message and "end of file" in diag.message
    assert diag.notes[0].span == Span(0, 5)


def test_empty_and_comment_only_files_parse_to_nothing() -> None:
    for text in ("", "   \n", "// only a comment\n/* and another */"):
        module = parse_ok(text)
        assert module.decls == ()


@pytest.mark.parametrize(
    "text",
    [
        "agent A { workflow w(): string { return " + "(" * 5000 + "1" + ")" * 5000 + " } }",
        "agent A { workflow w(): string { return " + "!" * 5000 + "x } }",
        "agent A { workflow w(): string { return " + "[" * 5000 + " } }",
        "type T { a: " + "{ b: " * 3000 + "string" + "}" * 3000 + "}",
        "prompt P { " + "if (x) { " * 3000 + "}" * 3000 + "}",
        'prompt P { "{{' + "(" * 3000 + "x" + ")" * 3000 + '}}" }',
        "agent A {" * 3000,
    ],
    ids=["parens", "bangs", "brackets", "objects", "prompt-ifs", "template", "agents"],
)
def test_deep_nesting_is_a_diagnostic_not_a_crash(text: str) -> None:
    _, diags = parse(SourceFile("t", text))
    assert diags
    assert all(0 <= d.span.start <= d.span.end <= len(text) for d in diags)


def test_moderate_nesting_is_fine() -> None:
    assert show(expr_of("(" * 40 + "1" + ")" * 40)) == "1"


def test_windows_line_breaks() -> None:
    module = parse_ok('prompt P {\r\n  """\r\n  a\r\n    b\r\n  """\r\n  "c"\r\n}\r\n')
    prompt = module.decls[0]
    assert isinstance(prompt, n.PromptDecl)
    texts = [i.string.value for i in prompt.items if isinstance(i, n.PromptText)]
    assert texts == ["a\n  b", "c"]


def test_tool_keyword_is_optional_inside_tools_blocks() -> None:
    agent = agent_of("agent A {\n tools {\n tool a(): string\n b(): number\n }\n}")
    block = agent.members[0]
    assert isinstance(block, n.ToolsBlock)
    assert [t.name.text for t in block.tools] == ["a", "b"]


def test_unicode_names_and_strings() -> None:
    text = 'agent Müller {\n default config { prompt: "Grüße, {{ctx.näme}} 👋" }\n}'
    module = parse_ok(text)
    agent = module.agents[0]
    assert agent.name.text == "Müller"
    assert text[agent.name.span.start : agent.name.span.end] == "Müller"
    config = agent.members[0]
    assert isinstance(config, n.ConfigBlock)
    prompt = config.entry("prompt")
    assert prompt is not None
    (term,) = prompt.value.terms
    assert isinstance(term, n.PromptText)
    expr = term.template[1]
    assert isinstance(expr, n.TExpr) and isinstance(expr.expr, n.CtxRef)
    assert text[expr.expr.span.start : expr.expr.span.end] == "ctx.näme"


def test_diagnostics_come_back_in_file_order() -> None:
    text = 'prompt P { "{{#if x}}" }\nagnt A {}\ntype T { a string }\n"stray'
    _, diags = parse(SourceFile("t", text))
    starts = [d.span.start for d in diags]
    assert starts == sorted(starts) and len(diags) >= 4


# One member of each kind an agent may hold, as written in an agent.
MEMBERS = {
    "default config": 'default config {\n        model: gemini("m")\n    }',
    "config": 'config Other {\n        model: gemini("m")\n    }',
    "context": "context {\n        x: string\n    }",
    "input:": "input: string",
    "output:": "output: string",
    "tool": "tool t(): string",
    "tools": "tools {\n        u(): string\n    }",
    "workflow": 'workflow w(): string {\n        description: "d"\n        return ""\n    }',
    "helpers": "helpers {\n        H\n    }",
    "personas": "personas { P }",
    "intent:": "intent: I",
    "description:": 'description: "d"',
}


@pytest.mark.parametrize("member", sorted(MEMBERS))
def test_the_unknown_member_error_lists_every_member(member: str) -> None:
    """E0103 names each kind of member, and each one it names parses as a member."""
    good = f"agent A {{\n    {MEMBERS[member]}\n}}\n"
    assert not [d for d in parse(SourceFile("a.agent", good))[1] if d.is_error]
    bad = parse(SourceFile("a.agent", "agent A {\n    nonsense\n}\n"))[1]
    (error,) = [d for d in bad if d.code == "E0103"]
    assert f"`{member}`" in error.message
