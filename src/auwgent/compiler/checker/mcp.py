"""Checks of MCP servers (``mcp Name { ... }``) and of ``@mcp(Name)`` on tools.

A server is either launched (``command``, with optional ``args`` and ``env``) or reached over
streamable HTTP (``url``). Every value is a literal: the IR carries it as written, and secrets
come from the runtime config (``"mcp": {"Name": {"env": ..., "headers": ...}}``), never from
the source.
"""

from __future__ import annotations

from .. import nodes as n
from ..diagnostics import Note, did_you_mean
from ..source import Span
from .context import Context

SERVER_FIELDS = ("command", "args", "env", "url")
_STDIO_ONLY = ("args", "env")


def check_mcp_decl(cx: Context, decl: n.McpDecl) -> None:
    """Known fields, once each, literal values of the right shape; ``command`` xor ``url``."""
    seen: dict[str, Span] = {}
    for entry in decl.entries:
        if cx.duplicate(entry.name, seen, "field"):
            continue
        key = entry.name.text
        if key not in SERVER_FIELDS:
            cx.report(
                "E2110",
                f"unknown field `{key}` in `mcp {decl.name.text}`",
                entry.name.span,
                help=did_you_mean(key, SERVER_FIELDS)
                or "a server has `command:` (with `args:` and `env:`) or `url:`",
            )
            continue
        _server_value(cx, entry)
    label = f"mcp server `{decl.name.text}`"
    command, url = decl.entry("command"), decl.entry("url")
    if command is None and url is None:
        cx.report(
            "E2110",
            f"{label} has neither `command` nor `url`",
            decl.name.span,
            help='launch it with `command: "npx", args: [...]`, or reach it with '
            '`url: "https://..."`',
        )
    elif command is not None and url is not None:
        cx.report(
            "E2110",
            f"{label} has both `command` and `url`",
            url.name.span,
            notes=[Note("`command` is here", command.name.span)],
            help="a server is either launched (`command`) or reached over HTTP (`url`)",
        )
    if url is not None:
        for key in _STDIO_ONLY:
            extra = decl.entry(key)
            if extra is not None:
                cx.report(
                    "E2110",
                    f"`{key}` applies only to a launched server (`command:`), not to `url:`",
                    extra.name.span,
                    help='HTTP headers (tokens) go in the runtime config: "mcp": '
                    f'{{"{decl.name.text}": {{"headers": {{...}}}}}}',
                )


def _server_value(cx: Context, entry: n.ConfigEntry) -> None:
    key = entry.name.text
    value = entry.value
    term = value.terms[0] if len(value.terms) == 1 else None
    expected = {
        "command": "a plain string (no `{{ }}` templates)",
        "url": 'a string such as "https://example.com/mcp"',
        "args": "a list of strings",
        "env": "an object of strings",
    }[key]
    if key in ("command", "url"):
        text = _plain_string(term)
        ok = bool(text)
        if ok and key == "url" and not text.startswith(("http://", "https://")):
            ok = False
            expected = "an http:// or https:// address"
    elif key == "args":
        ok = isinstance(term, n.ArrayExpr) and all(_is_string(i) for i in term.items)
    else:
        ok = isinstance(term, n.ObjectExpr) and all(_is_string(e.value) for e in term.entries)
        if ok and isinstance(term, n.ObjectExpr):
            seen: dict[str, Span] = {}
            for item in term.entries:
                cx.duplicate(item.key, seen, "environment variable")
    if not ok:
        cx.report("E2110", f"`{key}` must be {expected}", value.span)


def check_mcp_use(cx: Context, annotations: tuple[n.Annotation, ...], what: str) -> None:
    """``@mcp(Name)`` or ``@mcp(Name, "tool-name")`` on a tool: once, naming a declared
    ``mcp`` server, and a tool name that is not empty."""
    uses = [a for a in annotations if isinstance(a, n.McpAnnotation)]
    for extra in uses[1:]:
        cx.report(
            "E2112",
            f"{what} has more than one `@mcp`",
            extra.span,
            notes=[Note("first `@mcp` here", uses[0].span)],
            help="a tool lives on one server",
        )
    if not uses:
        return
    server = uses[0].server
    if server is None:
        cx.report(
            "E2112",
            "`@mcp` needs the name of a server",
            uses[0].span,
            help="write `@mcp(Name)` with the name of an `mcp Name { ... }` declaration",
        )
        return
    cx.lookup_kind(server.text, server.span, "mcp")
    remote = uses[0].remote
    if remote is not None and not remote.value.strip():
        cx.report(
            "E2112",
            "the tool's name on the MCP server is empty",
            uses[0].span,
            help=f'write `@mcp({server.text}, "tool-name")` with the name the server lists, '
            f"or `@mcp({server.text})` when it is the declared name",
        )


def _plain_string(term: n.ConfigTerm | None) -> str:
    """The text of a string without template parts, else ``""``."""
    if isinstance(term, n.PromptText) and all(isinstance(t, n.TText) for t in term.template):
        return term.string.value
    return ""


def _is_string(expr: n.Expr) -> bool:
    return isinstance(expr, n.Literal) and isinstance(expr.value, str)
