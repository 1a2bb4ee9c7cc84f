"""Checks of the context budget's declarations (docs/context.md): ``contextWindow`` and
``maxOutputTokens`` in a ``model`` block, ``@maxOutput`` on a tool, and ``maxToolOutput`` and
``history { ... }`` in a config block. Codes E2140-E2143."""

from __future__ import annotations

from typing import Any

from .. import nodes as n
from ..diagnostics import did_you_mean
from ..source import Span
from .context import Context

#: The fields a ``model`` block takes besides ``provider``.
MODEL_LIMITS = ("contextWindow", "maxOutputTokens")
#: The keys of ``history { ... }``.
HISTORY_KEYS = ("keepLast", "compact", "summarizeWith", "trigger")
#: The values of ``history.compact``.
COMPACT_POLICIES = ("drop", "summarize", "clearToolResults")
_UNITS = ("tokens", "chars")


def _whole(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def check_model_limit(cx: Context, entry: n.ConfigEntry) -> Any:
    """``contextWindow: 128000`` / ``maxOutputTokens: 16384``: a whole number of tokens."""
    term = entry.value.terms[0] if len(entry.value.terms) == 1 else None
    value = term.value if isinstance(term, n.Literal) else None
    if not _whole(value, 1):
        cx.report(
            "E2141",
            f"`{entry.name.text}` must be a whole number of tokens, at least 1",
            entry.value.span,
            help=f"e.g. `{entry.name.text}: 128000`",
        )
        return None
    return value


def check_model_limits(cx: Context, entries: dict[str, n.ConfigEntry]) -> None:
    """Both limits of a model block, and the output limit inside the window."""
    window = check_model_limit(cx, entries["contextWindow"]) if "contextWindow" in entries else None
    output = entries.get("maxOutputTokens")
    most = check_model_limit(cx, output) if output is not None else None
    if output is not None and window is not None and most is not None and most >= window:
        cx.report(
            "E2141",
            f"`maxOutputTokens` ({most}) must be less than `contextWindow` ({window})",
            output.value.span,
            help="the window holds the request and the answer together",
        )


def check_max_output(cx: Context, annotations: tuple[n.Annotation, ...], what: str) -> None:
    """``@maxOutput`` at most once, with one argument, ``tokens`` or ``chars``, a whole
    number of at least 1."""
    found = [a for a in annotations if isinstance(a, n.MaxOutputAnnotation)]
    for extra in found[1:]:
        cx.report("E2140", f"{what} has more than one `@maxOutput`", extra.span)
    if not found:
        return
    annotation = found[0]
    if len(annotation.args) != 1 or annotation.args[0].name.text not in _UNITS:
        cx.report(
            "E2140",
            "`@maxOutput` takes one limit: a number of tokens, `tokens = N` or `chars = N`",
            annotation.span,
            help="e.g. `@maxOutput(4000)` (tokens) or `@maxOutput(chars = 16000)`",
        )
        return
    arg = annotation.args[0]
    value = arg.value.value if isinstance(arg.value, n.Literal) else None
    if not _whole(value, 1):
        cx.report(
            "E2140",
            f"`@maxOutput({arg.name.text} = ...)` must be a whole number, at least 1",
            arg.value.span,
        )


def check_max_tool_output(cx: Context, entry: n.ConfigEntry) -> None:
    """``maxToolOutput: 4000`` (tokens) or ``maxToolOutput: { chars: 16000 }``."""
    term = entry.value.terms[0] if len(entry.value.terms) == 1 else None
    if isinstance(term, n.Literal) and _whole(term.value, 1):
        return
    if isinstance(term, n.ObjectExpr) and len(term.entries) == 1:
        item = term.entries[0]
        value = item.value.value if isinstance(item.value, n.Literal) else None
        if item.key.text in _UNITS and _whole(value, 1):
            return
    cx.report(
        "E2143",
        "`maxToolOutput` must be a whole number of tokens or `{ tokens: N }` / `{ chars: N }`",
        entry.value.span,
        help="e.g. `maxToolOutput: 4000` or `maxToolOutput: { chars: 16000 }`",
    )


def check_history(cx: Context, entry: n.ConfigEntry) -> None:
    """``history: { keepLast: 6, compact: "drop", summarizeWith: Model, trigger: 0.8 }``."""
    term = entry.value.terms[0] if len(entry.value.terms) == 1 else None
    if not isinstance(term, n.ObjectExpr):
        cx.report(
            "E2142",
            "`history` must be an object",
            entry.value.span,
            help='e.g. `history: { keepLast: 6, compact: "clearToolResults", trigger: 0.8 }`',
        )
        return
    seen: dict[str, Span] = {}
    values: dict[str, Any] = {}
    for item in term.entries:
        key = item.key.text
        if cx.duplicate(item.key, seen, "`history` key"):
            continue
        if key not in HISTORY_KEYS:
            cx.report(
                "E2142",
                f"`history` has no key `{key}`",
                item.key.span,
                help=did_you_mean(key, HISTORY_KEYS) or "keys: " + ", ".join(HISTORY_KEYS),
            )
            continue
        values[key] = _history_value(cx, key, item.value)
    if "summarizeWith" in values and values.get("compact") != "summarize":
        cx.report(
            "E2142",
            '`summarizeWith` is only read with `compact: "summarize"`',
            seen["summarizeWith"],
        )


def _history_value(cx: Context, key: str, value: n.Expr) -> Any:
    if key == "summarizeWith":
        if isinstance(value, n.NameRef):
            cx.lookup_kind(value.name, value.span, "model")
            return value.name
        cx.report(
            "E2142",
            "`summarizeWith` must name a `model` block",
            value.span,
            help="declare `model Fast { provider: ... }` and write `summarizeWith: Fast`",
        )
        return None
    given = value.value if isinstance(value, n.Literal) else None
    if key == "keepLast" and not _whole(given, 0):
        cx.report("E2142", "`keepLast` must be a whole number of turns, 0 or more", value.span)
    elif key == "compact" and given not in COMPACT_POLICIES:
        cx.report(
            "E2142",
            "`compact` must be "
            + ", ".join(f'"{p}"' for p in COMPACT_POLICIES[:-1])
            + f' or "{COMPACT_POLICIES[-1]}"',
            value.span,
        )
    elif key == "trigger" and not (
        isinstance(given, int | float) and not isinstance(given, bool) and 0 < given <= 1
    ):
        cx.report(
            "E2142",
            "`trigger` must be a number above 0 and at most 1 (a share of the window)",
            value.span,
            help="e.g. `trigger: 0.8`: compact once a request would use 80 % of the budget",
        )
    return given
