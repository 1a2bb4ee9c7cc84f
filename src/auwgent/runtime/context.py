"""Context values: type checks where values enter, and the context section of the prompt.

One context dict serves the root agent and its helpers. A key declared by any agent of the
document is checked against that declaration wherever a value enters (construction,
``agent.set_context``, a middleware's ``set_context``); undeclared keys are allowed.

What the model sees: a declared value reaches it only through a prompt that references it
(a workflow may test ``ctx.is_admin`` without the model ever seeing it). Keys that no agent
declares are data the application chose to show (the manual's RAG pattern, retrieved chunks
added with ``set_context``): each agent's system prompt lists them in a context section,
except those its own prompt already references.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from auwgent.errors import ContextError
from auwgent.runtime.protocol.section import (
    frame,
)

__all__ = ["ContextSchema"]


class ContextSchema:
    """The context declarations of every agent of a document."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self._types: Mapping[str, Any] = doc["types"]
        # key -> [(agent name, field)]: the same key may be declared by several agents.
        self._declared: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
        for agent in doc["agents"].values():
            for f in agent["context"]:
                self._declared.setdefault(f["name"], []).append((agent["name"], f))

    def check(self, data: Any, path: str = "context") -> dict[str, Any]:
        """Check ``data`` (a mapping of context values); raise ``ContextError`` on a mismatch."""
        if not isinstance(data, Mapping):
            raise ContextError(
                f"{path}: expected an object of context values, got {type(data).__name__}"
            )
        for key, value in data.items():
            if not isinstance(key, str):
                raise ContextError(f"{path}: context keys must be strings, got {key!r}")
            for agent, f in self._declared.get(key, ()):
                from auwgent.runtime.evaluate import schema  # first needed here, not at import

                errors = schema.validate(value, f["type"], self._types, path=f"{path}.{key}")
                if errors:
                    expected = schema.describe(f["type"], self._types)
                    raise ContextError(
                        f"{path}.{key}: expected {expected} (declared in {agent}'s context), "
                        f"got {_given(value)}"
                        # Inside an object or array, say which part is wrong.
                        + (f": {errors[0]}" if len(errors) > 1 or _nested(value) else "")
                    )
        return dict(data)

    def missing(self, agent: Mapping[str, Any], values: Mapping[str, Any]) -> list[str]:
        """The required context keys of ``agent`` that ``values`` lacks."""
        return [
            f["name"] for f in agent["context"] if not f.get("optional") and f["name"] not in values
        ]

    def section(self, values: Mapping[str, Any], referenced: set[str]) -> str:
        """The context section: undeclared keys the prompt does not reference (may be empty)."""
        lines = [
            f"- {frame(key)}: {frame(value)}"
            for key, value in values.items()
            if key not in self._declared and key not in referenced
        ]
        if not lines:
            return ""
        return "Context (values supplied by the application):\n" + "\n".join(lines)


def _nested(value: Any) -> bool:
    return isinstance(value, (list, Mapping))


def _given(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"number {value!r}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__
