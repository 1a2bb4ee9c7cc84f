"""What approvals decide and what a paused workflow remembers: :class:`Verdict`,
:class:`StepPaused` and the :class:`Journal` of a workflow's steps.

The call runner and the approval gate both use these; this module imports neither.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from auwgent._records import field, record
from auwgent.errors import ToolError

__all__ = ["Journal", "StepPaused", "Verdict", "json_value"]


@record
class Verdict:
    """The gate's answer for one call."""

    approved: bool
    args: Mapping[str, Any]
    reason: str | None = None
    deferred: bool = False
    request_id: str = ""

    def denial(self, name: str) -> str:
        """What the caller (the model, a workflow) is told about a denied call."""
        text = f"{name} was not approved, so it did not run"
        return f"{text}: {self.reason}" if self.reason else text


class StepPaused(BaseException):
    """A workflow step's approval was deferred: it unwinds the workflow to its caller.

    A BaseException, so that the interpreter (which turns a failing step into a failed
    workflow) lets it through.
    """

    def __init__(self, request_id: str) -> None:
        super().__init__(request_id)
        self.request_id = request_id


@record(frozen=False)
class Journal:
    """The tool calls of one workflow run, so that a resumed run replays those it made before
    the pause instead of running them again."""

    done: list[dict[str, Any]] = field(default_factory=list)  # recorded before the pause
    decided: tuple[Mapping[str, Any], Verdict] | None = None  # the paused step's request
    steps: list[dict[str, Any]] = field(default_factory=list)  # this run's, in order

    def replayed(self, name: str, args: Mapping[str, Any]) -> tuple[bool, Any]:
        """``(True, result)`` for a step made before the pause, else ``(False, None)``."""
        if len(self.steps) >= len(self.done):
            return False, None
        step = self.done[len(self.steps)]
        self._same(step, name, args)
        self.steps.append(step)
        return True, step["result"]

    def decision(self, name: str, args: Mapping[str, Any]) -> Verdict | None:
        """The decision for the step that paused, when this is that step."""
        if self.decided is None:
            return None
        request, verdict = self.decided
        self.decided = None
        self._same(request, name, args)
        return verdict

    def add(self, name: str, args: Mapping[str, Any], result: Any) -> None:
        self.steps.append({"name": name, "args": dict(args), "result": json_value(result)})

    def _same(self, recorded: Mapping[str, Any], name: str, args: Mapping[str, Any]) -> None:
        if recorded["name"] != name or recorded["args"] != dict(args):
            raise ToolError(
                f"on resume the workflow asked for {name} where it had asked for "
                f"{recorded['name']} before the pause (its context or tools changed); "
                "nothing more of it runs"
            )


def json_value(value: Any) -> Any:
    """``value`` as JSON reads it back (unknown objects as strings; NaN and the like as text)."""
    try:
        return json.loads(json.dumps(value, default=str))
    except ValueError:  # NaN and the like
        return str(value)
