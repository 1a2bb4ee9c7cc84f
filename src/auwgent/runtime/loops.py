"""No-progress detection: a model that keeps making the same calls is stopped.

Each completed call of a run is reduced to a *step*: the agent that made it, the callable's
kind and name, its arguments and its outcome (result or error text), all as canonical JSON.
Two patterns mean the model is not getting anywhere:

- **repeats**: the same step ``repeats`` times (default 3) in one run;
- **ping-pong**: the last four steps of one agent alternate between two different steps
  (A, B, A, B).

The first time a pattern appears the model is told it is repeating itself (a runtime note after
the results); if a pattern appears again, the run ends with an ``error`` intent naming the call.
Tools marked ``@repeatable`` in the DSL (made to be polled) are exempt. The runtime config's
``"loopDetection": {"repeats": N}`` changes the count; ``"loopDetection": False`` turns the
detection off.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from auwgent.errors import ConfigError
from auwgent.runtime import jsontext

__all__ = ["DEFAULT_REPEATS", "LoopDetector", "Verdict", "parse_loop_detection"]

DEFAULT_REPEATS = 3

Verdict = Literal["warn", "stop"]


def parse_loop_detection(value: Any) -> int | None:
    """The ``loopDetection`` config: the repeat count, or ``None`` when turned off."""
    if value is None or value is True:
        return DEFAULT_REPEATS
    if value is False:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(f"loopDetection: expected an object or false, got {type(value).__name__}")
    for key in value:
        if key != "repeats":
            raise ConfigError(f"loopDetection.{key}: unknown key (valid keys: repeats)")
    repeats = value.get("repeats", DEFAULT_REPEATS)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 2:
        raise ConfigError(
            f"loopDetection.repeats: expected a whole number of at least 2, got {repeats!r}"
        )
    return int(repeats)


class LoopDetector:
    """Watches the steps of one run; ``observe`` says when to warn and when to stop.

    A plain class: the module is imported when an agent is built, and a dataclass costs more
    to define than the rest of the module (bench/bench_overhead.py, import time).
    """

    __slots__ = ("counts", "recent", "repeats", "warned")

    def __init__(self, repeats: int) -> None:
        self.repeats = repeats
        self.counts: Counter[tuple[str, ...]] = Counter()
        self.recent: dict[str, list[tuple[str, ...]]] = {}
        self.warned = False

    def observe(
        self, agent: str, steps: Sequence[tuple[str, str, Mapping[str, Any], Any]]
    ) -> tuple[Verdict, str] | None:
        """Record one round's steps ``(kind, name, args, outcome)``; the verdict, if any."""
        found: str | None = None
        history = self.recent.setdefault(agent, [])
        for kind, name, args, outcome in steps:
            step = (agent, kind, name, jsontext.canonical(args), jsontext.canonical(outcome))
            self.counts[step] += 1
            history.append(step)
            del history[:-4]
            if self.counts[step] >= self.repeats:
                found = (
                    f"{name} was called {self.counts[step]} times with the same arguments "
                    f"({step[3]}) and got the same result each time"
                )
            elif len(history) == 4 and history[0] == history[2] != history[1] == history[3]:
                first, second = history[0], history[1]
                found = (
                    f"{first[2]} {first[3]} and {second[2]} {second[3]} were called in turn, "
                    "twice, with the same results each time"
                )
        if found is None:
            return None
        if not self.warned:
            self.warned = True
            return "warn", found
        return "stop", found

    def watch(
        self,
        agent: str,
        tools: Sequence[Mapping[str, Any]],
        outcomes: Sequence[Any],
        problems: list[str],
    ) -> str | None:
        """Observe one round's call ``outcomes`` of ``agent`` (whose model sees ``tools``).

        Returns the error message when the run must stop; a first warning is added to
        ``problems``, which go back to the model after the results. Skipped calls and tools
        marked ``@repeatable`` are not steps.
        """
        repeatable = {t["name"] for t in tools if t.get("repeatable")}
        steps = [
            (o.kind, o.name, o.args, o.result if o.status == "ok" else o.error)
            for o in outcomes
            if o.status != "skipped" and not (o.kind == "tool" and o.name in repeatable)
        ]
        verdict = self.observe(agent, steps)
        if verdict is None:
            return None
        kind, reason = verdict
        if kind == "stop":
            return self.failure(reason)
        problems.append(self.note(reason))
        return None

    @staticmethod
    def note(reason: str) -> str:
        """What the model is told the first time."""
        return (
            f"You are repeating yourself: {reason}. Calling it again will not give a "
            "different answer. Use the results you already have, try something else, or "
            "answer the user."
        )

    @staticmethod
    def failure(reason: str) -> str:
        """The ``error`` intent's message when the model goes on repeating."""
        return f"no progress: {reason}, after being told it was repeating itself; the run stops"
