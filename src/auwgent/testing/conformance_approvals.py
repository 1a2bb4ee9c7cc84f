"""The ``"approvals"`` key of an engine scenario (conformance/gen_approvals.py): the
approver's scripted answers, the resumes after the inputs, and the ids written as ``<id>``.

The TypeScript runner does the same in ts/test/conformance.test.mjs.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from auwgent.errors import AuwgentError

__all__ = ["Gated", "approver", "normal_ids", "resume_all"]

_HEX_ID = re.compile(r"\b[0-9a-f]{32}\b")
_DECIDED_AT = re.compile(r'"decided_at": "[^"]*"')


class Gated:
    """A scenario's ``"approvals"`` key (``None``: the scenario has none, nothing changes)."""

    def __init__(self, spec: Mapping[str, Any] | None, config: dict[str, Any]) -> None:
        self.spec = spec
        self.asked: list[dict[str, Any]] = []
        if spec is not None and spec.get("approver") is not None:
            config["approver"] = approver(spec["approver"], self.asked)

    async def resume(self, agent: Any, session: Any) -> tuple[Any, dict[str, str] | None]:
        """The scenario's resumes after its inputs (none without the key), the paused session
        edited first as ``"edit"`` says (``[[path, value], ...]``: a stored pause tampered with)."""
        if self.spec is None:
            return session, None
        for path, value in self.spec.get("edit", ()):
            _set(session, path, json.loads(json.dumps(value)))
        return await resume_all(agent, session, self.spec.get("resume", ()))

    def output(self, out: dict[str, Any]) -> dict[str, Any]:
        """``out`` with the requests the approver was shown, ids and times normalised."""
        if self.spec is None:
            return out
        result: dict[str, Any] = normal_ids({**out, "asked": self.asked})
        return result


class ApproverFailure(Exception):
    """What a scripted approver raises (the TypeScript runner throws an Error so named)."""


def _set(value: Any, path: Sequence[str | int], new: Any) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = new


def approver(
    answers: Sequence[Any], asked: list[dict[str, Any]]
) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    """An async approver giving ``answers`` in order (``None`` once they run out), noting
    every request it is shown in ``asked``."""
    left = list(answers)

    async def decide(request: dict[str, Any]) -> Any:
        asked.append(json.loads(json.dumps(request)))
        answer = left.pop(0) if left else None
        if isinstance(answer, Mapping) and "raise" in answer:
            raise ApproverFailure(answer["raise"])
        if isinstance(answer, Mapping) and answer.get("hang"):
            await asyncio.Event().wait()  # never answers: the timeout decides
        return json.loads(json.dumps(answer))

    return decide


async def resume_all(
    agent: Any, session: Any, entries: Sequence[Any]
) -> tuple[Any, dict[str, str] | None]:
    """One ``agent.resume`` per entry: decisions for the pending requests in order, or
    ``{"raw": decisions}``; stops at the first refusal (returned as ``raised``)."""
    for entry in entries:
        if isinstance(entry, Mapping):
            decisions = json.loads(json.dumps(entry["raw"]))
        else:
            pending = (session or {}).get("pending_approvals") or []
            requests = (
                [p for p in pending if isinstance(p, Mapping)] if isinstance(pending, list) else []
            )
            decisions = {p.get("id"): d for p, d in zip(requests, entry, strict=False)}
        try:
            session = await agent.resume(session, decisions)
        except AuwgentError as exc:
            return session, {"error": type(exc).__name__, "message": str(exc)}
    return session, None


def normal_ids(value: Any) -> Any:
    """``value`` with the random ids and the decision times written as ``<id>`` / ``<time>``."""
    text = json.dumps(value, ensure_ascii=False)
    text = _DECIDED_AT.sub('"decided_at": "<time>"', _HEX_ID.sub("<id>", text))
    return json.loads(text)
