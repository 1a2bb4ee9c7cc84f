"""The run's budgets (config ``budget``): checked before each model request, counted after.

:class:`Budgets` holds what this run spent and what the conversation had spent before it;
:meth:`Budgets.check` says why the next model call must not be made, :meth:`Budgets.count`
records one model call in the turn and the totals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from auwgent.runtime.config import Budget
from auwgent.runtime.session import TokenUsage, Turn

__all__ = ["Budgets", "total_usage"]


class Budgets:
    """What one run spent on model calls, against the config's ``budget``."""

    def __init__(self, budget: Budget | None) -> None:
        self._budget = budget
        self.spent = {"requests": 0, "tokens": 0}  # this run's model calls
        self.earlier = {"requests": 0, "tokens": 0}  # the conversation's, before this run

    def start(self, earlier_turns: Sequence[Mapping[str, Any]]) -> None:
        """Take the conversation's spending so far from its earlier turns."""
        calls = [
            c for t in earlier_turns for c in t.get("model_calls", ()) if isinstance(c, Mapping)
        ]
        tokens = sum((c.get("usage") or {}).get("total_tokens", 0) for c in calls)
        self.earlier = {"requests": len(calls), "tokens": tokens}

    def check(self) -> str | None:
        """Before a model request: why it must not be made, or ``None`` (and it is counted
        now, before it starts, so that concurrent helpers see it)."""
        over = self._over()
        if over is None:
            self.spent["requests"] += 1
        return over

    def count(
        self, turn: Turn | None, model: str, finish: str | None, usage: TokenUsage | None
    ) -> None:
        """After a model call: record it in the turn and add its tokens to the totals."""
        self.spent["tokens"] += usage["total_tokens"] if usage is not None else 0
        if turn is not None:
            turn["model_calls"].append({"model": model, "finish_reason": finish, "usage": usage})

    def _over(self) -> str | None:
        budget = self._budget
        if budget is None:
            return None
        spent, earlier = self.spent, self.earlier
        limits = (
            ("requests", budget.requests, spent["requests"], "run"),
            ("tokens", budget.tokens, spent["tokens"], "run"),
            ("conversationRequests", budget.conversation_requests,
             earlier["requests"] + spent["requests"], "conversation"),
            ("conversationTokens", budget.conversation_tokens,
             earlier["tokens"] + spent["tokens"], "conversation"),
        )  # fmt: skip
        for key, limit, used, scope in limits:
            if limit is not None and used >= limit:
                what = "model requests" if "equests" in key else "tokens"
                return (
                    f"budget exceeded: this {scope} has used {used} {what} of its "
                    f"{limit} (budget.{key}); no further model request is made"
                )
        return None


def total_usage(turns: Sequence[Mapping[str, Any]]) -> TokenUsage:
    """The token usage of every recorded model call of the session."""
    total: TokenUsage = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    for turn in turns:
        for call in turn.get("model_calls") or ():
            usage = call.get("usage") or {}
            for key in ("input_tokens", "output_tokens", "total_tokens"):
                count = usage.get(key)
                if isinstance(count, int):
                    total[key] += count
    return total
