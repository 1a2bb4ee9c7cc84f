"""The compiler: ``.agent`` sources to diagnostics and IR. Imports the standard library only.

This package is the compiler's public face: the command line, the language server, the MCP
importer, ``auwgent test``, ``auwgent fmt`` and ``auwgent serve`` import what they use from
here, never from the modules inside (``tests/test_layering.py`` holds them to it).
"""

from __future__ import annotations

from auwgent.compiler import nodes
from auwgent.compiler.checker import check
from auwgent.compiler.checker.agents import CONFIG_KEYS
from auwgent.compiler.checker.context import PROVIDERS
from auwgent.compiler.diagnostics import (
    Diagnostic,
    Severity,
    did_you_mean,
    error,
    listing,
    render_all,
    sort_key,
    suggest,
    use_color,
)
from auwgent.compiler.format import FormatError, format_source
from auwgent.compiler.lower import lower_mcp_server, lower_tool_in, name_clashes
from auwgent.compiler.members import agent_parts
from auwgent.compiler.modules import (
    SUFFIX,
    FileScope,
    ModuleGraph,
    Symbol,
    is_exported,
    kind_word,
    normalize_import,
    resolve_modules,
)
from auwgent.compiler.parser import DECL_WORDS, MEMBER_SYNTAX, STATEMENT_WORDS, parse
from auwgent.compiler.pipeline import CompileResult, compile_project
from auwgent.compiler.source import SourceFile, Span
from auwgent.compiler.testspec import collect_tests

__all__ = [
    "CONFIG_KEYS",
    "DECL_WORDS",
    "MEMBER_SYNTAX",
    "PROVIDERS",
    "STATEMENT_WORDS",
    "SUFFIX",
    "CompileResult",
    "Diagnostic",
    "FileScope",
    "FormatError",
    "ModuleGraph",
    "Severity",
    "SourceFile",
    "Span",
    "Symbol",
    "agent_parts",
    "check",
    "collect_tests",
    "compile_project",
    "did_you_mean",
    "error",
    "format_source",
    "is_exported",
    "kind_word",
    "listing",
    "lower_mcp_server",
    "lower_tool_in",
    "name_clashes",
    "nodes",
    "normalize_import",
    "parse",
    "render_all",
    "resolve_modules",
    "sort_key",
    "suggest",
    "use_color",
]
