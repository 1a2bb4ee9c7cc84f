"""Auwgent for Python: a compiler-first framework for AI agents."""

from auwgent._version import IR_VERSION, __version__
from auwgent.errors import (
    AuwgentError,
    CompileError,
    ConfigError,
    ContextError,
    ProviderError,
    ToolError,
    WorkflowError,
)

__all__ = [
    "IR_VERSION",
    "AuwgentError",
    "CompileError",
    "ConfigError",
    "ContextError",
    "ProviderError",
    "ToolError",
    "WorkflowError",
    "__version__",
]
