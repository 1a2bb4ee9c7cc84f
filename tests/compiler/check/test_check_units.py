"""Small units: type assignability and display, example selection, robustness."""

from __future__ import annotations

from pathlib import Path

from check_support import DATA, assert_valid_ir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auwgent.compiler.checker.types import (
    BOOLEAN,
    NUMBER,
    STRING,
    TEXT,
    UNKNOWN,
    Arr,
    FieldTy,
    Lit,
    Named,
    Obj,
    UnionTy,
    assignable,
    display,
    union_of,
    widen,
)
from auwgent.compiler.pipeline import compile_sources

PERSON = Obj((FieldTy("name", STRING), FieldTy("age", NUMBER, optional=True)))
TABLE = {"m::Person": PERSON, "m::Node": Obj((FieldTy("children", Arr(Named("Node", "m::Node"))),))}


def test_literals_fit_strings_and_unions_of_literals() -> None:
    level = union_of([Lit("low"), Lit("high")])
    assert assignable(Lit("low"), level, TABLE)
    assert not assignable(Lit("mid"), level, TABLE)
    assert not assignable(STRING, level, TABLE)
    assert assignable(level, STRING, TABLE)
    assert assignable(TEXT, STRING, TABLE) and assignable(STRING, TEXT, TABLE)


def test_objects_are_structural_and_optional_fields_may_be_missing() -> None:
    person = Named("Person", "m::Person")
    assert assignable(Obj((FieldTy("name", Lit("Ama")),)), person, TABLE)
    assert not assignable(Obj((FieldTy("age", NUMBER),)), person, TABLE)
    assert not assignable(Obj((FieldTy("name", STRING), FieldTy("age", STRING))), person, TABLE)


def test_recursive_types_compare_without_looping() -> None:
    node = Named("Node", "m::Node")
    assert assignable(node, node, TABLE)
    assert assignable(Obj((FieldTy("children", Arr(node)),)), node, TABLE)


def test_unknown_is_compatible_with_everything() -> None:
    for ty in (STRING, NUMBER, Arr(BOOLEAN), PERSON):
        assert assignable(UNKNOWN, ty, TABLE) and assignable(ty, UNKNOWN, TABLE)
    assert union_of([STRING, UNKNOWN]) == UNKNOWN


def test_union_of_flattens_and_deduplicates() -> None:
    nested = union_of([STRING, union_of([NUMBER, STRING])])
    assert nested == UnionTy((STRING, NUMBER))
    assert union_of([NUMBER]) == NUMBER


def test_widen_turns_literals_into_string() -> None:
    assert widen(Lit("a")) == STRING
    assert widen(union_of([Lit("a"), Lit("b")])) == STRING
    assert widen(NUMBER) == NUMBER


def test_display_reads_like_the_dsl() -> None:
    assert display(Arr(union_of([Lit("a"), NUMBER]))) == '("a" | number)[]'
    assert display(PERSON) == "{ name: string, age?: number }"
    assert display(TEXT) == "Text" and display(Obj(())) == "{}"


def _examples_of(body: str) -> dict[str, list[dict[str, object]]]:
    source = (
        'agent Main {\n    default config {\n        model: gemini("g")\n'
        '        prompt: "Hi."\n    }\n' + body + "\n}\n"
    )
    result = compile_sources({"main.agent": source})
    assert result.ok, result.diagnostics
    agent = result.documents["main.agent"]["agents"]["Main"]
    return {"kept": agent["examples"], "dropped": agent["dropped_examples"]}


def test_example_selection_prefers_breadth_then_arguments_then_source_order() -> None:
    found = _examples_of(
        """
    tool a(x: string): string @example(x = "a1") @example(x = "a2")
    tool b(): string @example()
    tool c(x: number): string @example(x = 1) @example(x = 2)
    tool d(x: boolean): string @example(x = true)
    workflow e(): string {
        description: "E"
        return "e"
    } @example()
    tool f(x: string): string @example(x = "f1")
"""
    )
    kept = [(e["target"], e["args"]) for e in found["kept"]]
    assert kept == [
        ("a", {"x": "a1"}),
        ("c", {"x": 1}),
        ("d", {"x": True}),
        ("f", {"x": "f1"}),
        ("b", {}),
    ]
    assert [(e["kind"], e["target"]) for e in found["dropped"]] == [
        ("tool", "a"),
        ("tool", "c"),
        ("workflow", "e"),
    ]


def test_five_examples_or_fewer_are_all_kept_in_source_order_of_rank() -> None:
    found = _examples_of('    tool a(x: string): string @example(x = "1") @example(x = "2")')
    assert [e["args"] for e in found["kept"]] == [{"x": "1"}, {"x": "2"}]
    assert found["dropped"] == []


SEEDS = [p.read_text(encoding="utf-8") for p in sorted((DATA / "ir").glob("*.agent"))]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.sampled_from(SEEDS),
    cut=st.integers(min_value=0, max_value=4000),
    length=st.integers(min_value=0, max_value=40),
    insert=st.sampled_from(["", "x", "}", "{", "(", ")", '"', "ctx.", "return", "\n", "+", "1"]),
)
def test_mutated_programs_never_crash_the_compiler(
    seed: str, cut: int, length: int, insert: str
) -> None:
    cut = min(cut, len(seed))
    mutated = seed[:cut] + insert + seed[cut + length :]
    result = compile_sources({"main.agent": mutated})
    for diag in result.diagnostics:
        assert 0 <= diag.span.start <= diag.span.end <= len(mutated)
    for doc in result.documents.values():
        assert_valid_ir(doc)


def test_seeds_exist() -> None:
    assert len(SEEDS) >= 10 and all(isinstance(s, str) for s in SEEDS)
    assert Path(DATA / "ir").is_dir()


def test_the_built_in_intent_names_agree_across_checker_runtime_and_bindings() -> None:
    # The checker and the runtime read auwgent.ir.vocabulary, the bindings' generator its own
    # table; E2074 is only right while the checker refuses exactly the names the runtime emits.
    from auwgent.codegen.python import BUILTIN_INTENTS as BINDINGS
    from auwgent.compiler.checker.agents import BUILTIN_INTENTS as CHECKER
    from auwgent.runtime.intents import BUILTIN_INTENTS as RUNTIME

    assert CHECKER == set(RUNTIME) == {name for name, _, _ in BINDINGS}
    assert len(RUNTIME) == len(BINDINGS) == len(CHECKER)
