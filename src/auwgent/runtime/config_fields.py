"""The pieces runtime config values are checked with: numbers, sub-objects and their fields.

A sub-object of the runtime config (``retry``, ``timeouts``, ``limits``, ``budget``,
``codeLimits``) is a :class:`Section`: its fields, each a number with a minimum, and the key
path its errors name. The classes these sections build read themselves from the config with a
``from_config`` class method (given the object itself, they return it), so that the rule for a
key lives beside the value it makes. The generated config types (``RuntimeConfig`` in Python
and TypeScript, docs/runtime.md) read the same sections.

This module imports nothing of the runtime: :mod:`auwgent.runtime.policy` uses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from auwgent._records import record
from auwgent.errors import ConfigError

__all__ = ["Field", "Section", "number", "unknown_key"]


def unknown_key(path: str, key: str, valid: tuple[str, ...]) -> ConfigError:
    """The error for a key no table holds, with a "did you mean" when one is close."""
    from auwgent._names import suggest  # only on this error path

    hint = suggest(key, valid)
    tip = f"; did you mean {hint!r}?" if hint else f" (valid keys: {', '.join(valid)})"
    return ConfigError(f"{path}{key}: unknown config key{tip}")


def number(path: str, value: object, *, integer: bool = False, minimum: float = 0) -> float:
    """``value`` checked as a number (an integer when ``integer``) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        kind = "an integer" if integer else "a number"
        raise ConfigError(f"{path}: expected {kind}, got {value!r}")
    if integer and not isinstance(value, int):
        raise ConfigError(f"{path}: expected an integer, got {value!r}")
    if value < minimum:
        raise ConfigError(f"{path}: must be at least {minimum}, got {value!r}")
    return value


@record
class Field:
    """One numeric field of a sub-object: its config key, the attribute it sets, its rule."""

    key: str
    attr: str
    integer: bool = False
    minimum: float = 0
    doc: str = ""
    #: ``None`` given for it means "not set" (else ``None`` is an error, like any non-number).
    nullable: bool = False


@record
class Section:
    """A sub-object of the runtime config: its key, its fields and what it is (for docs)."""

    name: str
    fields: tuple[Field, ...]
    #: The generated TypedDict / interface's name and its one-line description.
    type_name: str
    doc: str

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(f.key for f in self.fields)

    def mapping(self, value: object) -> Mapping[str, object]:
        """``value`` as an object of this section's keys (``None`` or empty: ``{}``)."""
        given = value or {}
        if not isinstance(given, Mapping):
            raise ConfigError(f"{self.name}: expected an object, got {type(given).__name__}")
        for key in given:
            if key not in self.keys:
                raise unknown_key(f"{self.name}.", str(key), self.keys)
        return given

    def read(self, value: object) -> dict[str, Any]:
        """The checked fields ``value`` gives, by attribute (those left out are not there): the
        keyword arguments of the value's ``_replace``."""
        given = self.mapping(value)
        return {
            f.attr: number(
                f"{self.name}.{f.key}", given[f.key], integer=f.integer, minimum=f.minimum
            )
            for f in self.fields
            if f.key in given and not (f.nullable and given[f.key] is None)
        }
