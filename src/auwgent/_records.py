"""``@record``: the package's one kind of data class, cheap to define.

``@dataclass(frozen=True, slots=True)`` costs about a millisecond per class at import time: it
inspects the class, compiles each generated method separately and then builds the class a
second time to add ``__slots__``. The syntax tree alone has sixty such classes, which made
importing ``nodes.py`` the largest part of the start-up of ``auwgent check``.

``record`` gives a class the behaviour of a slotted dataclass -- ``__init__`` (fields with
defaults last), ``__repr__``, ``__eq__`` and ``__hash__`` over the fields in order,
``__match_args__``, ``__slots__``, pickling and copying -- compiling only ``__init__`` (whose
code is shared by every record of the same shape); the other methods are closures. A
``__repr__``, ``__eq__`` or ``__hash__`` the class defines itself is kept (to compare by some
fields only, say). Type checkers see a dataclass (``dataclass_transform``).

- ``@record``: frozen (``FrozenInstanceError`` on assignment) and hashable.
- ``@record(frozen=False)``: mutable, and unhashable (``__hash__`` is ``None``) unless the class
  defines ``__hash__``, as a dataclass with ``eq=True``.
- ``@record(order=True)``: ``<``, ``<=``, ``>``, ``>=`` compare the fields in order.
- ``name: T = field(default_factory=f)``: a fresh default per instance (a plain default is
  shared, so it must be immutable); ``field(init=False)``: not a parameter of ``__init__``
  (set by ``__post_init__``, or from its default or factory).
- ``__post_init__(self)``, when the class defines it, runs at the end of ``__init__`` (a frozen
  record sets its fields there through ``object.__setattr__``).
- ``replace`` is ``dataclasses.replace`` for records; ``record_fields`` their
  ``dataclasses.fields()`` (the names); ``as_dict`` their ``dataclasses.asdict()`` (shallow).

What it does not do: inheritance between records, ``ClassVar`` aside every annotation of the
class is a field.

Importing this module needs neither ``dataclasses`` nor ``inspect`` (a tenth of the start-up
of ``auwgent check``): ``dataclasses`` is imported only when an assignment is refused, for the
exception a dataclass raises.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from operator import attrgetter, ge, gt, le, lt
from types import CodeType, FunctionType
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: object) -> Callable[[Any], Any]:
        return lambda decorated: decorated


__all__ = [
    "as_dict",
    "field",
    "frozen_delattr",
    "frozen_setattr",
    "is_record",
    "record",
    "record_fields",
    "replace",
]

T = TypeVar("T")

# The attributes that list a record's field names, and those ``__init__`` takes; ``is_record``
# looks for the first.
_FIELDS = "__record_fields__"
_INIT = "__record_init__"


def frozen_setattr(self: object, name: str, value: object) -> None:
    from dataclasses import FrozenInstanceError  # noqa: PLC0415 - only when refusing

    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def frozen_delattr(self: object, name: str) -> None:
    from dataclasses import FrozenInstanceError  # noqa: PLC0415 - only when refusing

    raise FrozenInstanceError(f"cannot delete field {name!r}")


class _Missing:
    """The default of a parameter whose field has a factory: "not given"."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_MISSING: Any = _Missing()


class _FieldSpec:
    """What ``field(...)`` returns, read (and removed) by ``record``."""

    __slots__ = ("default", "default_factory", "init")

    def __init__(self, default: object, default_factory: Callable[[], object] | None, init: bool):
        self.default = default
        self.default_factory = default_factory
        self.init = init


@overload
def field(*, default_factory: Callable[[], T], init: bool = True) -> T: ...
@overload
def field(*, default: T, init: bool = True) -> T: ...
@overload
def field(*, init: bool = ...) -> Any: ...
def field(
    *,
    default: object = _MISSING,
    default_factory: Callable[[], object] | None = None,
    init: bool = True,
) -> Any:
    """A field's default made per instance (``default_factory``), or a field ``__init__`` does
    not take (``init=False``)."""
    if default is not _MISSING and default_factory is not None:
        raise TypeError("field(): give a default or a default_factory, not both")
    return _FieldSpec(default, default_factory, init)


# How ``__init__`` fills each field: "p" a parameter (with a plain default or none), "f" a
# parameter whose default is made by a factory, "d" not a parameter: its default, "F" not a
# parameter: its factory's value, "x" not a parameter and left unset (``__post_init__`` sets it).
_Shape = tuple[str, ...]


class _Plan:
    """A class's fields read once: names, how ``__init__`` fills each, defaults."""

    __slots__ = ("defaults", "init_names", "names", "shape", "values")

    def __init__(self, cls: type) -> None:
        annotations: dict[str, object] = cls.__dict__.get("__annotations__", {})
        self.names = tuple(name for name, note in annotations.items() if not _is_class_var(note))
        shape: list[str] = []
        defaults: list[object] = []  # of the parameters, in order (None: a factory's)
        values: dict[str, object] = {}  # per field: the default, or the factory
        for name in self.names:
            given = cls.__dict__.get(name, _MISSING)
            kind, value = _kind(given)
            shape.append(kind)
            if kind in "pf" and (value is not _MISSING or kind == "f"):
                defaults.append(_MISSING if kind == "f" else value)
            elif kind in "pf" and defaults:
                raise TypeError(
                    f"{cls.__name__}: a field without a default follows one with a default"
                )
            if value is not _MISSING:
                values[name] = value
        self.shape: _Shape = tuple(shape)
        self.defaults = tuple(defaults)
        self.values = values
        self.init_names = tuple(n for n, k in zip(self.names, shape, strict=True) if k in "pf")


def _is_class_var(note: object) -> bool:
    text = note if isinstance(note, str) else getattr(note, "__name__", repr(note))
    return text.startswith(("ClassVar", "typing.ClassVar"))


def _kind(given: object) -> tuple[str, object]:
    """How ``__init__`` fills a field whose class attribute is ``given``, and its default or
    factory (``_MISSING``: none)."""
    if not isinstance(given, _FieldSpec):
        return "p", given
    if given.default_factory is not None:
        return ("f" if given.init else "F"), given.default_factory
    if given.init:
        return "p", given.default
    return ("x" if given.default is _MISSING else "d"), given.default


@overload
def record(cls: type[T], /) -> type[T]: ...
@overload
def record(*, frozen: bool = True, order: bool = False) -> Callable[[type[T]], type[T]]: ...
@dataclass_transform(frozen_default=True, eq_default=True, field_specifiers=(field,))
def record(
    cls: type[T] | None = None, /, *, frozen: bool = True, order: bool = False
) -> type[T] | Callable[[type[T]], type[T]]:
    """Make ``cls`` (a class with annotated fields) a slotted record: frozen unless
    ``frozen=False``, ordered when ``order=True``."""

    def build(cls: type[T]) -> type[T]:
        return _build(cls, frozen=frozen, order=order)

    return build if cls is None else build(cls)


def _build(cls: type[T], *, frozen: bool, order: bool) -> type[T]:
    plan = _Plan(cls)
    names = plan.names
    namespace = {
        key: value
        for key, value in cls.__dict__.items()
        if key not in names and key not in ("__dict__", "__weakref__")
    }
    # The class's own methods win (to leave a bulky field out, say); a class that defines
    # __eq__ alone has __hash__ None in its namespace (Python's doing): it gets the record's.
    own = {key for key in cls.__dict__ if key != "__hash__" or cls.__dict__[key] is not None}
    methods = {
        key: method
        for key, method in _value_methods(names, plan, frozen=frozen, order=order).items()
        if key not in own
    }
    namespace.update(__slots__=names, __match_args__=plan.init_names, **methods)
    if frozen:
        namespace.update(__setattr__=frozen_setattr, __delattr__=frozen_delattr)
    namespace[_FIELDS] = names
    namespace[_INIT] = plan.init_names
    # __slots__ only takes effect when the class is created, so build it again (as dataclass
    # does for slots=True).
    built = type(cls.__name__, cls.__bases__, namespace)
    built.__init__ = _make_init(built, plan)  # type: ignore[misc]
    return cast("type[T]", built)


def _make_init(cls: type, plan: _Plan) -> Any:
    # Only __init__ needs its own code (it must take the fields by position and by keyword);
    # the other methods are closures, which cost nothing to make. It fills each slot through
    # the slot's own descriptor, which skips the attribute lookup of object.__setattr__ (the
    # parser makes a node every few tokens). Its code is the shared one for records of that
    # shape, with the parameters renamed: compiling is most of the cost of defining a record.
    post_init = "__post_init__" in cls.__dict__
    code = _init_code(plan.shape, post_init).replace(co_varnames=("self", *plan.init_names))
    scope: dict[str, Any] = {"_MISSING": _MISSING}
    for index, (name, kind) in enumerate(zip(plan.names, plan.shape, strict=True)):
        scope[f"_set{index}"] = cls.__dict__[name].__set__
        if kind in "fFd":
            scope[f"_val{index}"] = plan.values[name]
    init = FunctionType(code, scope, "__init__", plan.defaults or None)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


@cache
def _init_code(shape: _Shape, post_init: bool) -> CodeType:
    """``__init__(self, f0, ..., fN)`` storing each field ``I`` through the global ``_setI``:
    from its parameter ``fI``, or from ``_valI`` (a default or a factory) as ``shape`` says."""
    params = "".join(f", f{index}" for index, kind in enumerate(shape) if kind in "pf")
    lines = []
    for index, kind in enumerate(shape):
        value = {
            "p": f"f{index}",
            "f": f"_val{index}() if f{index} is _MISSING else f{index}",
            "d": f"_val{index}",
            "F": f"_val{index}()",
        }.get(kind)
        if value is not None:
            lines.append(f"    _set{index}(self, {value})\n")
    if post_init:
        lines.append("    self.__post_init__()\n")
    body = "".join(lines) or "    pass\n"
    scope: dict[str, Any] = {}
    exec(f"def __init__(self{params}):\n{body}", scope)  # noqa: S102 - built from numbers
    code: CodeType = scope["__init__"].__code__
    return code


def _value_methods(
    names: tuple[str, ...], plan: _Plan, *, frozen: bool, order: bool
) -> dict[str, Any]:
    """``__eq__``, ``__hash__``, ``__repr__`` and ``__reduce__`` over the fields ``names``, in
    order; ``__lt__`` and the rest with ``order``."""

    # attrgetter runs in C: a tuple of the values for several names, the bare value for one
    # (which compares and hashes as well as a one-element tuple would).
    values: Callable[[object], Any] = attrgetter(*names) if names else (lambda item: ())

    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is self.__class__:
            return values(self) == values(other)  # type: ignore[no-any-return]
        return NotImplemented

    def __hash__(self: object) -> int:
        return hash(values(self))

    def __repr__(self: object) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__qualname__}({shown})"

    methods: dict[str, Any] = {
        "__eq__": __eq__,
        "__hash__": __hash__ if frozen else None,
        "__repr__": __repr__,
        "__reduce__": _reducer(names, plan),
    }
    if order:
        methods.update(_order_methods(values))
    return methods


def _reducer(names: tuple[str, ...], plan: _Plan) -> Callable[[object], tuple[Any, ...]]:
    if plan.init_names == names:

        def __reduce__(self: object) -> tuple[type, tuple[object, ...]]:
            # pickle and copy rebuild it through __init__ (setting slots would be refused)
            return self.__class__, tuple(getattr(self, name) for name in names)

        return __reduce__

    def __reduce_fields__(self: object) -> tuple[Any, ...]:
        # a field __init__ does not take: rebuilt slot by slot, without running __init__
        state = {name: getattr(self, name) for name in names if hasattr(self, name)}
        return _rebuild, (self.__class__, state)

    return __reduce_fields__


def _rebuild(cls: type[T], state: dict[str, object]) -> T:
    made = object.__new__(cls)
    for name, value in state.items():
        object.__setattr__(made, name, value)
    return made


def _order_methods(values: Callable[[object], Any]) -> dict[str, Any]:
    def compare(test: Callable[[Any, Any], Any]) -> Callable[[object, object], Any]:
        def method(self: object, other: object) -> Any:
            if other.__class__ is self.__class__:
                return test(values(self), values(other))
            return NotImplemented

        return method

    return {
        "__lt__": compare(lt),
        "__le__": compare(le),
        "__gt__": compare(gt),
        "__ge__": compare(ge),
    }


def is_record(value: object) -> bool:
    """True for an instance of a ``record`` class (not for the class itself)."""
    return not isinstance(value, type) and hasattr(type(value), _FIELDS)


def record_fields(value: object) -> tuple[str, ...]:
    """The field names of a record instance or class, in order."""
    fields: tuple[str, ...] = getattr(value, _FIELDS)
    return fields


def as_dict(value: object) -> dict[str, Any]:
    """A record's fields and their values (not copied, nor converted)."""
    return {name: getattr(value, name) for name in record_fields(value)}


def replace(value: T, **changes: Any) -> T:
    """A copy of the record (or dataclass) ``value`` with ``changes`` to some of its fields."""
    if not is_record(value):
        import dataclasses  # noqa: PLC0415 - a dataclass: only then is the module needed

        return dataclasses.replace(value, **changes)  # type: ignore[type-var]
    init_names: tuple[str, ...] = getattr(value, _INIT)
    unknown = set(changes) - set(init_names)
    if unknown:
        name = sorted(unknown)[0]
        what = "no field" if name not in record_fields(value) else "no init field"
        raise TypeError(f"{type(value).__name__} has {what} {name!r}")
    kept = {name: getattr(value, name) for name in init_names}
    return type(value)(**{**kept, **changes})
