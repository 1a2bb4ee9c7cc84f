"""The entry points: a whole body (:func:`parse_body`), one value (:func:`parse_value`), and
the tests of what a text holds (:func:`looks_structured`, :func:`embedded_object`,
:func:`loads_loose`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from auwgent.runtime.evaluate.schema import IRField, IRType, Types, object_type, resolve
from auwgent.runtime.protocol.values.align import Reader
from auwgent.runtime.protocol.values.common import (
    MAX_BODY_CHARS,
    MAX_DEPTH,
    BodyError,
    Repair,
)
from auwgent.runtime.protocol.values.lines import (
    ANY_FENCE,
    KEY_LINE,
    LineParser,
    Raw,
    strip_fence,
    unquote_key,
)
from auwgent.runtime.protocol.values.loose import Loose
from auwgent.runtime.protocol.values.stream import JsonPrefix, JsonSnapshot, Stale, fast_partial


def parse_body(
    text: str,
    fields: Sequence[IRField],
    types: Types,
    *,
    partial: bool = False,
    stream: JsonSnapshot | None = None,
    repairs: list[Repair] | None = None,
) -> dict[str, Any]:
    """Read a block body into a dict aligned to ``fields``.

    With ``partial=True`` (a body still streaming) nothing raises: only what is certain is
    read (the line still being typed is left out unless it is plain text for a text field),
    and conflicting duplicates keep the later value. ``stream``, the body's
    :class:`JsonSnapshot`, reads a streaming JSON body incrementally (it may raise
    :class:`Stale`, see there). ``repairs`` collects what the reader repaired (final reads
    only).
    """
    if partial:
        if stream is not None and len(text) <= MAX_BODY_CHARS:
            snapshot = stream.read(text, fields, types)
            if snapshot is not None:
                return snapshot
            if not stream.fresh:
                raise Stale
        prefix = stream.prefix(text) if stream is not None else None
        try:
            read = _guarded(_parse_body, text, fields, types, True, prefix, None)
        except BodyError:
            return {}  # too broken to show yet; the final read will say why
    else:
        read = _guarded(_parse_body, text, fields, types, False, None, repairs)
    return dict(read)


def _guarded(read: Any, text: str, *args: Any) -> Any:
    """Run ``read`` on ``text`` within the documented limits: anything hostile is a
    :class:`BodyError` for the model, never another exception."""
    if len(text) > MAX_BODY_CHARS:
        raise BodyError(
            f"the body is {len(text)} characters long; at most {MAX_BODY_CHARS} are read"
        )
    try:
        return read(text, *args)
    except RecursionError:
        raise BodyError(f"values are nested deeper than {MAX_DEPTH} levels") from None


def _parse_body(
    text: str,
    fields: Sequence[IRField],
    types: Types,
    partial: bool,
    json_prefix: JsonPrefix | None,
    repairs: list[Repair] | None,
) -> dict[str, Any]:
    target = object_type(fields)
    body = strip_fence(text.replace("\r\n", "\n")).strip()
    if not body:
        return {}
    reader = Reader(types, partial, repairs)
    if body[0] == "{":
        value = fast_partial(text, json_prefix) if partial and json_prefix else None
        value = reader.loose(body, target) if value is None else value
        if not isinstance(value, dict):
            raise BodyError("the body must be an object: `name: value` lines or a JSON object")
        if reader.plain(target)(value, 1):
            return value  # already what aligning and coercing would make of it
        result = reader.align(list(value.items()), target)
    else:
        open_tail = partial and not text.endswith("\n")
        result = reader.align(LineParser(body, partial, open_tail).entries(), target)
    return dict(reader.coerce(result, target))


def parse_value(
    text: str,
    type_: IRType,
    types: Types,
    *,
    partial: bool = False,
    stream: JsonSnapshot | None = None,
    repairs: list[Repair] | None = None,
) -> Any:
    """Read a body holding one value of ``type_`` (an object type reads as in ``parse_body``)."""
    resolved = resolve(type_, types)
    if resolved["kind"] == "object":
        return parse_body(
            text, resolved["fields"], types, partial=partial, stream=stream, repairs=repairs
        )
    return _guarded(_parse_scalar, text, type_, types, partial, repairs)


def _parse_scalar(
    text: str, type_: IRType, types: Types, partial: bool, repairs: list[Repair] | None
) -> Any:
    reader = Reader(types, partial, repairs)
    body = strip_fence(text.replace("\r\n", "\n")).strip()
    return reader.coerce(reader.interpret(Raw(body), type_), type_)


def looks_structured(text: str, name: str) -> bool:
    """True when a body reads as fields rather than as plain text: it is an object or list
    (also in a code fence), its first line is a ``key: value`` line, or a line names the
    parameter ``name`` itself. A lone string parameter takes a body as its raw value only when
    this is False."""
    body = strip_fence(text.replace("\r\n", "\n")).strip()
    if body[:1] in ("{", "["):
        return True
    first, _, rest = body.partition("\n")
    if KEY_LINE.fullmatch(first):
        return True
    for line in rest.split("\n"):
        match = KEY_LINE.fullmatch(line)
        if match and unquote_key(match.group("key")) == name:
            return True
    return False


def embedded_object(text: str) -> str:
    """The object in an answer that wraps it in prose: the first code fence's content, else
    the text from the first ``{`` to the last ``}``; the text itself when it is neither."""
    fence = ANY_FENCE.search(text)
    if fence:
        return fence.group("body")
    start, end = text.find("{"), text.rfind("}")
    if 0 < start < end and not KEY_LINE.match(text):
        return text[start : end + 1]
    return text


def loads_loose(text: str, *, partial: bool = False) -> Any:
    """Parse JSON, or failing that a JS-style value (see the module docstring) in which bare
    words stay strings (except ``null``) for the declared type to interpret. With
    ``partial=True`` an unfinished value is closed where it stops."""
    return _guarded(lambda t: Loose(t, partial).document(), text)
