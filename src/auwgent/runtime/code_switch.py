"""Whether an agent runs in code mode, and whether the sandbox is there: what building an agent
asks of code mode, without importing it (:mod:`.code_mode` is the run's machinery)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from auwgent.errors import ConfigError
from auwgent.runtime.config import RuntimeOptions

__all__ = ["INSTALL_HINT", "enabled", "require", "wanted"]

INSTALL_HINT = (
    "code mode needs the Monty sandbox (pydantic-monty), the auwgent[code] extra: "
    'pip install "auwgent[code]"'
)


def enabled(options: RuntimeOptions, agent: Mapping[str, Any], config_name: str) -> bool:
    """Whether ``agent`` runs in code mode: the runtime config's ``codeMode`` when given,
    else its DSL config's ``codeMode``."""
    if options.code_mode is not None:
        return options.code_mode
    return bool(agent["configs"][config_name].get("codeMode"))


def wanted(options: RuntimeOptions, doc: Mapping[str, Any]) -> bool:
    """Whether any agent of ``doc`` may run in code mode with these options."""
    if options.code_mode is not None:
        return options.code_mode
    return any(
        cfg.get("codeMode") for agent in doc["agents"].values() for cfg in agent["configs"].values()
    )


def require() -> None:
    """Construction fails, saying what to install, when the sandbox is missing."""
    try:
        import pydantic_monty  # noqa: F401
    except ImportError:
        raise ConfigError(INSTALL_HINT) from None
