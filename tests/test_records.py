"""``auwgent._records.record`` behaves like ``@dataclass(frozen=True, slots=True)``, for the
syntax tree and for the runtime's events and contract."""

from __future__ import annotations

import dataclasses

import pytest

from auwgent._records import is_record, record, record_fields, replace
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
