"""Random well-formed workflows: the checker never crashes, and what passes lowers to valid IR.

Expressions are drawn from the whole expression grammar over a few names of different types,
so most programs have type errors and some do not; either way the pipeline must answer with
diagnostics or a document, never an exception.
"""

from __future__ import annotations

from check_support import assert_valid_ir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auwgent.compiler.pipeline import compile_sources

ATOMS = st.sampled_from(
    [
        "count",
        "name",
        "ok",
        "items",
        "rec",
        "ctx.flag",
        "ctx.label",
        "1",
        "2.5",
        '"a"',
        "true",
        "null",
        "nope",
        "ctx.missing",
    ]
)


def _expr(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.tuples(
        children,
        st.sampled_from(["+", "-", "*", "/", "%", "==", "!=", "<", ">=", "&&", "||"]),
        children,
    ).map(lambda t: f"({t[0]} {t[1]} {t[2]})")
    return st.one_of(
        binary,
        children.map(lambda e: f"!{e}"),
        children.map(lambda e: f"-{e}"),
        children.map(lambda e: f"{e}.score"),
        children.map(lambda e: f"{e}.length"),
        children.map(lambda e: f"{e}[0]"),
        st.lists(children, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.tuples(children, children).map(lambda t: f"{{ a: {t[0]}, b: {t[1]} }}"),
        st.lists(children, max_size=3).map(lambda xs: "lookup(" + ", ".join(xs) + ")"),
    )


EXPRS = st.recursive(ATOMS, _expr, max_leaves=6)


def _stmt(expr: str, kind: int) -> str:
    return [
        f"let v{abs(hash(expr)) % 3} = {expr}",
        f"count = {expr}",
        f"if ({expr}) {{\n            return name\n        }}",
        f"return {expr}",
        f"lookup({expr})",
    ][kind]


PROGRAM = """
type Rec {{
    score: number
    tags: string[]
}}

agent Main {{
    default config {{
        model: gemini("gemini-2.5-flash")
        prompt: "Hi."
    }}
    context {{
        flag: boolean
        label?: string
    }}
    tool lookup(key: string, limit?: number): Rec

    workflow w(count: number, name: string, ok: boolean, items: Rec[], rec: Rec): string {{
        description: "Fuzzed"
        {body}
        return name
    }}
}}
"""


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(EXPRS, st.integers(min_value=0, max_value=4)), min_size=1, max_size=4))
def test_random_workflows_are_answered_not_crashed(stmts: list[tuple[str, int]]) -> None:
    body = "\n        ".join(_stmt(expr, kind) for expr, kind in stmts)
    result = compile_sources({"main.agent": PROGRAM.format(body=body)})
    for doc in result.documents.values():
        assert_valid_ir(doc)
    for diag in result.diagnostics:
        assert diag.code[:2] in ("E0", "E2", "W2"), diag


def _typed(kind: str) -> st.SearchStrategy[str]:
    """Expressions of one type (number, string, boolean) over the program's names."""
    leaves = {
        "number": [
            "count",
            "rec.score",
            "items.length",
            "items[0].score",
            "1",
            "2.5",
            'lookup("k").score',
            "name.length",
        ],
        "string": ['"a"', "name", "items[0].tags[0]", "rec.tags[1]"],
        "boolean": ["true", "ok", "ctx.flag", "false"],
    }[kind]
    base = st.sampled_from(leaves)
    if kind == "number":
        return st.one_of(
            base,
            st.tuples(base, st.sampled_from(["+", "-", "*", "/", "%"]), base).map(" ".join),
            base.map(lambda e: f"-{e}"),
        )
    if kind == "string":
        return st.one_of(
            base,
            st.tuples(base, st.sampled_from(leaves + ["count", "ok"])).map(
                lambda t: f"{t[0]} + {t[1]}"
            ),
        )
    number = _typed("number")
    return st.one_of(
        base,
        base.map(lambda e: f"!{e}"),
        st.tuples(number, st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), number).map(
            " ".join
        ),
        st.tuples(base, st.sampled_from(["&&", "||"]), base).map(" ".join),
        st.sampled_from(['name == "x"', "ctx.label != null", "rec == null"]),
    )


TYPED_STMTS = st.one_of(
    _typed("number").map(lambda e: f"count = {e}"),
    st.tuples(_typed("boolean"), _typed("string")).map(
        lambda t: f"if ({t[0]}) {{\n            return {t[1]}\n        }}"
    ),
    _typed("string").map(lambda e: f"lookup({e})"),
    st.tuples(_typed("string"), _typed("number")).map(lambda t: f"lookup({t[0]}, {t[1]})"),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TYPED_STMTS, min_size=1, max_size=5))
def test_well_typed_workflows_are_accepted(stmts: list[str]) -> None:
    body = "\n        ".join(stmts)
    result = compile_sources({"main.agent": PROGRAM.format(body=body)})
    assert result.ok, [d.message for d in result.errors]
    assert_valid_ir(result.documents["main.agent"])
