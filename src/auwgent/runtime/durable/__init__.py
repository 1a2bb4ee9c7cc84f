"""Durable runs: a run's model requests and tool calls as checkpointed steps of a durable
workflow engine, so that a run whose worker dies continues elsewhere without re-sending a
completed model request or re-running a completed tool call (docs/durable.md).

Only DBOS is supported (``"durable": "dbos"``, the ``auwgent[dbos]`` extra). Nothing here
imports ``dbos`` until a run asks for it: without the key a run pays nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from auwgent.errors import ConfigError
from auwgent.runtime.steps import IDEMPOTENCY_PARAM

if TYPE_CHECKING:
    from auwgent.runtime.steps import StepRunner

__all__ = ["IDEMPOTENCY_PARAM", "step_runner"]


def step_runner(engine: str) -> StepRunner:
    """The step runner of ``engine`` (the runtime config's ``"durable"``)."""
    if engine != "dbos":  # parse_options refuses anything else
        raise ConfigError(f"durable: expected 'dbos', got {engine!r}")
    try:
        from auwgent.runtime.durable.dbos import DBOSSteps
    except ImportError as exc:
        raise ConfigError(
            f'durable: "dbos" needs the dbos extra: pip install "auwgent[dbos]" ({exc})'
        ) from exc
    return DBOSSteps()
