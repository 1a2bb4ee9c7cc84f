"""The exception tree of Auwgent.

    AuwgentError
    ├── CompileError        .agent sources that do not compile (carries diagnostics)
    ├── ConfigError         a runtime config, auwgent.yml or generated module that cannot be used
    │   └── ContextError    a context value of the wrong type, or an undeclared required key
    ├── ApprovalError       agent.resume() given a session with nothing pending, or bad decisions
    ├── ConflictError       a save based on a stale revision (another run saved first)
    ├── IngestionError      background memory ingestion failed (reported, never raised by run)
    ├── ProviderError       a model provider failed after its retries
    │   └── FallbackError   a model and every fallback model failed before answering
    ├── ToolError           a tool implementation failed or broke its contract
    │   └── McpError        an MCP server failed to start, died, timed out or answered an error
    └── WorkflowError       a workflow failed while running (names the .agent file and line)

Nothing a model, a tool or a handler does escapes ``Agent.run``: those failures become
``error`` / ``tool_error`` intents. The exceptions here are raised for mistakes made by the
application (configuration, construction) and carried inside intents otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence


class AuwgentError(Exception):
    """Root of every exception raised by Auwgent."""


class CompileError(AuwgentError):
    """One or more .agent sources failed to compile."""


class ConfigError(AuwgentError):
    """A configuration value is missing or malformed; the message names the key path."""


class ConflictError(AuwgentError):
    """A save was based on a stale revision: another run or process changed the stored session first."""


class ContextError(ConfigError):
    """A context value does not match the declared ``context`` block."""


class ApprovalError(AuwgentError):
    """``agent.resume()`` cannot continue: nothing is pending, or the decisions do not fit."""


_API_LABELS = {"openai": "OpenAI", "gemini": "Gemini", "anthropic": "Anthropic"}


class ProviderError(AuwgentError):
    """A model provider request failed (after retries, where the failure was retryable)."""

    def __init__(
        self,
        provider: str,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
    ) -> None:
        self.provider = provider
        self.status = status
        self.retryable = retryable
        self.provider_message = message
        # The message names the API as people write it ("OpenAI API error (401): ...", as in
        # the manual); ``provider`` keeps the id (a custom provider's id is shown as is).
        label = _API_LABELS.get(provider, provider)
        where = f"{label} API error" + (f" ({status})" if status is not None else "")
        super().__init__(f"{where}: {message}")


class FallbackError(ProviderError):
    """A model and each of its ``fallback`` models failed before answering.

    ``attempts`` holds each model tried (``"provider:model"``) with its error, in order; the
    message lists them all. ``provider``, ``status`` and ``retryable`` are the last attempt's.
    """

    def __init__(self, attempts: Sequence[tuple[str, ProviderError]]) -> None:
        last = attempts[-1][1]
        self.attempts = list(attempts)
        self.provider = last.provider
        self.status = last.status
        self.retryable = last.retryable
        self.provider_message = last.provider_message
        tried = "; ".join(f"{model}: {error}" for model, error in attempts)
        AuwgentError.__init__(
            self, f"the model and its fallbacks all failed before answering: {tried}"
        )


class IngestionError(AuwgentError):
    """Memory ingestion after a run failed; logged and passed to middleware ``onError``."""


class ToolError(AuwgentError):
    """A tool call failed: missing implementation, invalid arguments, or an exception."""


class McpError(ToolError):
    """An ``@mcp`` tool's server failed: it did not start, died, timed out or answered with an
    error. The message begins with the server's name."""

    def __init__(self, server: str, message: str) -> None:
        self.server = server
        self.detail = message
        super().__init__(f"MCP server {server}: {message}")


class WorkflowError(AuwgentError):
    """A workflow failed while running."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None) -> None:
        self.file = file
        self.line = line
        where = f"{file}:{line}: " if file and line else ""
        super().__init__(f"{where}{message}")


def describe_error(error: BaseException) -> str:
    """How a failure reads in an intent or a log: an Auwgent error's own message, anything
    else prefixed with its type (``KeyError: 'x'``)."""
    if isinstance(error, AuwgentError):
        return str(error)
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
