"""``auwgent._records.record`` behaves like ``@dataclass(frozen=True, slots=True)``, for the
syntax tree and for the runtime's events and contract."""

from __future__ import annotations

import ast
import dataclasses
import pickle
from pathlib import Path
from typing import ClassVar

import pytest

from auwgent._records import as_dict, field, is_record, record, record_fields, replace
from auwgent.compiler import nodes as n
from auwgent.compiler.source import Span


@record
class Pair:
    left: int
    right: str
    note: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class DataPair:
    left: int
    right: str
    note: str | None = None


def test_init_positional_keyword_and_default() -> None:
    assert Pair(1, "a").note is None
    assert Pair(left=1, right="a", note="x").note == "x"
    with pytest.raises(TypeError):
        Pair(1)  # type: ignore[call-arg]


def test_eq_hash_and_repr_match_a_dataclass() -> None:
    assert Pair(1, "a") == Pair(1, "a")
    assert Pair(1, "a") != Pair(1, "b")
    other: object = DataPair(1, "a")
    assert Pair(1, "a") != other
    assert len({Pair(1, "a"), Pair(1, "a"), Pair(2, "a")}) == 2
    assert repr(Pair(1, "a")) == repr(DataPair(1, "a")).replace("DataPair", "Pair")


def test_frozen_and_slotted() -> None:
    pair = Pair(1, "a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        pair.left = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del pair.left
    assert not hasattr(pair, "__dict__")
    assert getattr(Pair, "__slots__") == ("left", "right", "note")  # noqa: B009


def test_match_args_and_fields() -> None:
    match Pair(1, "a"):
        case Pair(left, right):
            assert (left, right) == (1, "a")
        case _:
            pytest.fail("positional pattern did not match")
    assert record_fields(Pair(1, "a")) == ("left", "right", "note")
    assert is_record(Pair(1, "a"))
    assert not is_record(Pair)
    assert not is_record(DataPair(1, "a"))


def test_nodes_are_records_with_the_same_methods() -> None:
    name = n.Name("x", Span(0, 1))
    assert name == n.Name("x", Span(0, 1))
    assert repr(name) == "Name(text='x', span=Span(start=0, end=1))"
    assert n.Name.__init__.__qualname__ == "Name.__init__"
    assert n.Name.__doc__ and "identifier" in n.Name.__doc__


def test_replace_copies_with_changes_records_and_dataclasses() -> None:
    pair = Pair(1, "a", note="x")
    assert replace(pair, right="b") == Pair(1, "b", note="x")
    assert pair == Pair(1, "a", note="x")  # the original is untouched
    assert replace(DataPair(1, "a"), left=2) == DataPair(2, "a")
    with pytest.raises(TypeError, match="no field 'middle'"):
        replace(pair, middle=3)


@record
class ByKey:
    key: str
    extra: str | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ByKey) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)


def test_methods_the_class_defines_are_kept() -> None:
    assert ByKey("a", "x") == ByKey("a", "y")
    assert len({ByKey("a", "x"), ByKey("a", "y")}) == 1
    assert repr(ByKey("a")) == "ByKey(key='a', extra=None)"


def test_pickle_and_copy_rebuild_a_record() -> None:
    import copy
    import pickle

    from auwgent.runtime.providers.base import Finish, Message, ToolCall

    message = Message("assistant", "hi", (ToolCall("1", "f", "{}"),))
    assert pickle.loads(pickle.dumps(message)) == message
    assert copy.deepcopy(message) == message and copy.copy(message) == message
    finish = pickle.loads(pickle.dumps(Finish("stop", raw="STOP", message="done")))
    assert (finish.raw, finish.message) == ("STOP", "done")


@record(frozen=False)
class Tally:
    name: str
    seen: list[str] = field(default_factory=list)
    count: int = 0


def test_a_mutable_record_takes_assignments_and_is_unhashable() -> None:
    tally = Tally("a")
    tally.count += 2
    tally.seen.append("x")
    assert tally == Tally("a", ["x"], 2)
    assert repr(tally) == "Tally(name='a', seen=['x'], count=2)"
    with pytest.raises(TypeError, match="unhashable"):
        hash(tally)
    assert not hasattr(tally, "__dict__")
    with pytest.raises(AttributeError):
        tally.other = 1  # type: ignore[attr-defined]


def test_a_default_factory_makes_a_fresh_value_per_instance() -> None:
    first, second = Tally("a"), Tally("b")
    first.seen.append("x")
    assert second.seen == []
    given = ["y"]
    assert Tally("c", given).seen is given
    assert Tally("c", seen=given).seen is given


@record
class Derived:
    base: int
    doubled: int = field(init=False)
    extra: tuple[int, ...] = field(default=(), init=False)
    kind: ClassVar[str] = "derived"

    def __post_init__(self) -> None:
        object.__setattr__(self, "doubled", self.base * 2)


def test_init_false_fields_post_init_and_class_vars() -> None:
    value = Derived(3)
    assert (value.doubled, value.extra) == (6, ())
    assert record_fields(Derived) == ("base", "doubled", "extra")
    assert Derived.kind == "derived"
    with pytest.raises(TypeError):
        Derived(3, 4)  # type: ignore[call-arg]
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.base = 1  # type: ignore[misc]
    assert replace(value, base=5).doubled == 10
    with pytest.raises(TypeError, match="no init field 'doubled'"):
        replace(value, doubled=1)
    assert pickle.loads(pickle.dumps(value)) == value
    assert as_dict(value) == {"base": 3, "doubled": 6, "extra": ()}


def test_post_init_may_refuse_values() -> None:
    from auwgent.runtime.policy import Limits, RetryPolicy

    with pytest.raises(ValueError, match="at least 1"):
        RetryPolicy(attempts=0)
    with pytest.raises(ValueError, match="at least 1 byte"):
        Limits(event_bytes=0)
    assert RetryPolicy(2).attempts == 2 and Limits().event_bytes > 1


@record(order=True)
class Point:
    x: int
    y: int


def test_an_ordered_record_compares_its_fields_in_order() -> None:
    assert Point(1, 2) < Point(1, 3) < Point(2, 0)
    assert Point(1, 2) <= Point(1, 2) and Point(2, 0) >= Point(1, 9) > Point(1, 8)
    assert sorted([Point(2, 0), Point(1, 5), Point(1, 2)]) == [
        Point(1, 2),
        Point(1, 5),
        Point(2, 0),
    ]
    with pytest.raises(TypeError):
        assert Pair(1, "a") < Pair(2, "a")  # type: ignore[operator]
    other: object = (1, 2)
    with pytest.raises(TypeError):
        assert Point(1, 2) < other  # type: ignore[operator]


@record
class OwnEq:
    key: str

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OwnEq) and other.key.lower() == self.key.lower()


def test_a_class_defining_only_eq_still_gets_the_records_hash() -> None:
    assert OwnEq("A") == OwnEq("a")
    assert hash(OwnEq("a")) == hash(OwnEq("a"))


def test_a_span_equals_and_hashes_as_its_tuple() -> None:
    assert Span(1, 2) == (1, 2) and hash(Span(1, 2)) == hash((1, 2))
    assert Span(1, 2) != (1, 3) and Span(1, 2) < Span(1, 3)


def test_fields_without_defaults_must_come_first() -> None:
    with pytest.raises(TypeError, match="without a default follows one with a default"):

        @record
        class Wrong:
            first: int = 0
            second: int  # type: ignore[misc]

    with pytest.raises(TypeError, match="not both"):
        field(default=1, default_factory=list)  # type: ignore[call-overload]


# -- one record kind: the package defines no dataclass and no named tuple ---------------------

SRC = Path(__file__).resolve().parents[1] / "src"


def other_record_kinds(text: str) -> list[str]:
    """The ``@dataclass`` classes and named tuples ``text`` (a module's source) defines."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if ast.unparse(target).split(".")[-1] == "dataclass":
                    found.append(f"{node.name}: @dataclass")
            for base in node.bases:
                if ast.unparse(base).split(".")[-1] == "NamedTuple":
                    found.append(f"{node.name}: NamedTuple")
        elif isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "namedtuple":
            found.append(f"line {node.lineno}: namedtuple()")
    return found


def test_the_package_has_one_record_kind() -> None:
    found = {
        str(path.relative_to(SRC)): kinds
        for path in sorted(SRC.rglob("*.py"))
        if (kinds := other_record_kinds(path.read_text(encoding="utf-8")))
    }
    assert found == {}, "use auwgent._records.record"


def test_the_record_kind_rule_finds_each_other_kind() -> None:
    text = (
        "import dataclasses, typing, collections\n"
        "from dataclasses import dataclass\n"
        "@dataclass\nclass A:\n    x: int\n"
        "@dataclasses.dataclass(frozen=True)\nclass B:\n    x: int\n"
        "class C(typing.NamedTuple):\n    x: int\n"
        "D = collections.namedtuple('D', 'x')\n"
        "@record\nclass E:\n    x: int\n"
    )
    assert other_record_kinds(text) == [
        "A: @dataclass",
        "B: @dataclass",
        "C: NamedTuple",
        "line 11: namedtuple()",
    ]
