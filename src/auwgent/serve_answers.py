"""What ``auwgent serve`` answers, shared by its plain and durable paths: JSON errors, and the
partial events as the stream sends them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["error_response", "partial_value", "unusable_session"]

_PARTIAL_KEYS = {
    "text": ("partial", "complete", "mode", "segment", "delta"),
    "structured": ("partial", "complete", "mode", "segment", "snapshot"),
}


def error_response(status: int, message: str, code: str) -> Any:
    """``{"error": {"code", "message"}}`` with ``status``."""
    from starlette.responses import JSONResponse  # the serve extra

    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def partial_value(value: Mapping[str, Any]) -> dict[str, Any]:
    """A partial as the stream sends it: a text partial carries only its ``delta`` (the client
    adds the deltas up), a structured one its snapshot; neither carries ``raw``. So a partial
    costs what is new, never the text so far again (docs/serve.md)."""
    keys = _PARTIAL_KEYS["text" if value.get("mode") == "text" else "structured"]
    return {key: value[key] for key in keys if key in value}


def unusable_session(conversation: Any, session: Mapping[str, Any], why: str) -> Any:
    """409: the stored session of ``conversation`` belongs to an agent this run cannot use."""
    agent = session.get("agent")
    return error_response(
        409, f"conversation {conversation!r} is a session of agent {agent!r}, {why}",
        "unusable_session",
    )  # fmt: skip
