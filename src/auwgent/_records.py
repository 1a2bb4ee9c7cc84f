"""``@record``: a frozen, slotted data class that is cheap to define.

``@dataclass(frozen=True, slots=True)`` costs about a millisecond per class at import time: it
inspects the class, compiles each generated method separately and then builds the class a
second time to add ``__slots__``. The syntax tree alone has sixty such classes, which made
importing ``nodes.py`` the largest part of the start-up of ``auwgent check``.

``record`` gives a class the same behaviour -- ``__init__`` (fields with defaults last),
``__repr__``, ``__eq__`` and ``__hash__`` over the fields in order, ``__match_args__``,
``__slots__``, pickling and copying, and ``FrozenInstanceError`` on assignment -- compiling
only ``__init__``; the other methods are closures; a ``__repr__``, ``__eq__`` or ``__hash__``
the class defines itself is kept (to compare by some fields only, say). Type checkers see a frozen dataclass
(``dataclass_transform``); ``replace`` is ``dataclasses.replace`` for records.
What it does not do: inheritance between records, ``field(...)`` specifiers (a default must be
immutable: it is shared), ``dataclasses.fields()`` (use ``record_fields``).

The compiler's syntax tree and the runtime's records (the provider events, the codec contract)
are records: importing the runtime then needs neither ``dataclasses`` nor ``inspect``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import FrozenInstanceError
from functools import cache
from operator import attrgetter
from types import CodeType, FunctionType
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: object) -> Callable[[Any], Any]:
        return lambda decorated: decorated


__all__ = [
    "frozen_delattr",
    "frozen_setattr",
    "is_record",
    "record",
    "record_fields",
    "replace",
]

T = TypeVar("T")

# The attribute that lists a record's field names; ``is_record`` looks for it.
_FIELDS = "__record_fields__"


# dataclasses (and the inspect module it imports, a tenth of the start-up of `auwgent check`)
# is imported only when an assignment is refused: the same exception dataclass raises.


def frozen_setattr(self: object, name: str, value: object) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def frozen_delattr(self: object, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


@dataclass_transform(frozen_default=True, eq_default=True)
def record(cls: type[T]) -> type[T]:
    """Make ``cls`` (a class with annotated fields) a frozen, slotted record."""
    names = tuple(cls.__dict__.get("__annotations__", {}))
    defaults = {name: cls.__dict__[name] for name in names if name in cls.__dict__}
    namespace = {
        key: value
        for key, value in cls.__dict__.items()
        if key not in defaults and key not in ("__dict__", "__weakref__")
    }
    methods = {
        key: method  # the class's own methods win (to leave a bulky field out, say)
        for key, method in _value_methods(names).items()
        if key not in cls.__dict__
    }
    namespace.update(
        __slots__=names,
        __match_args__=names,
        __setattr__=frozen_setattr,
        __delattr__=frozen_delattr,
        **methods,
    )
    namespace[_FIELDS] = names
    # __slots__ only takes effect when the class is created, so build it again (as dataclass
    # does for slots=True).
    built = type(cls.__name__, cls.__bases__, namespace)
    built.__init__ = _make_init(built, names, defaults)  # type: ignore[misc]
    return cast("type[T]", built)


def _make_init(cls: type, names: tuple[str, ...], defaults: dict[str, Any]) -> Any:
    # Only __init__ needs its own code (it must take the fields by position and by keyword);
    # the other methods are closures, which cost nothing to make. It fills each slot through
    # the slot's own descriptor, which skips the attribute lookup of object.__setattr__ (the
    # parser makes a node every few tokens). Its code is the shared one for that many fields
    # with the parameters renamed: compiling is most of the cost of defining a record.
    code = _init_code(len(names)).replace(co_varnames=("self", *names))
    setters = {f"_set{index}": cls.__dict__[name].__set__ for index, name in enumerate(names)}
    # Function defaults fill the last parameters, so fields with defaults must come last (as
    # in a dataclass).
    if any(name in defaults for name in names[: len(names) - len(defaults)]):
        raise TypeError(f"{cls.__name__}: a field without a default follows one with a default")
    init = FunctionType(code, setters, "__init__", tuple(defaults.values()) or None)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


@cache
def _init_code(count: int) -> CodeType:
    """``__init__(self, f0, ..., fN)`` storing each ``fI`` through the global ``_setI``."""
    params = "".join(f", f{index}" for index in range(count))
    body = "".join(f"    _set{index}(self, f{index})\n" for index in range(count)) or "    pass\n"
    scope: dict[str, Any] = {}
    exec(f"def __init__(self{params}):\n{body}", scope)  # noqa: S102 - built from numbers
    code: CodeType = scope["__init__"].__code__
    return code


def _value_methods(names: tuple[str, ...]) -> dict[str, Any]:
    """``__eq__``, ``__hash__`` and ``__repr__`` over the fields ``names``, in order."""

    # attrgetter runs in C: a tuple of the values for several names, the bare value for one
    # (which compares and hashes as well as a one-element tuple would).
    values: Callable[[object], object] = attrgetter(*names) if names else (lambda item: ())

    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    def __hash__(self: object) -> int:
        return hash(values(self))

    def __repr__(self: object) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__qualname__}({shown})"

    def __reduce__(self: object) -> tuple[type, tuple[object, ...]]:
        # pickle and copy rebuild it through __init__ (setting slots would be refused)
        return self.__class__, tuple(getattr(self, name) for name in names)

    return {"__eq__": __eq__, "__hash__": __hash__, "__repr__": __repr__, "__reduce__": __reduce__}


def is_record(value: object) -> bool:
    """True for an instance of a ``record`` class (not for the class itself)."""
    return not isinstance(value, type) and hasattr(type(value), _FIELDS)


def record_fields(value: object) -> tuple[str, ...]:
    """The field names of a record instance or class, in order."""
    fields: tuple[str, ...] = getattr(value, _FIELDS)
    return fields


def replace(value: T, **changes: Any) -> T:
    """A copy of the record (or dataclass) ``value`` with ``changes`` to some of its fields."""
    if not is_record(value):
        import dataclasses  # a dataclass: only then is the module needed

        return dataclasses.replace(value, **changes)  # type: ignore[type-var]
    unknown = set(changes) - set(record_fields(value))
    if unknown:
        raise TypeError(f"{type(value).__name__} has no field {sorted(unknown)[0]!r}")
    kept = {name: getattr(value, name) for name in record_fields(value)}
    return type(value)(**{**kept, **changes})
