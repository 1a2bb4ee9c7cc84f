"""Input parts: text, images and files (PDF) given to ``agent.run`` instead of a string.

A run's input is either a ``str`` or a list of parts, each a plain dict:

- ``{"type": "text", "text": "..."}``;
- ``{"type": "image", "data": "<base64>", "media_type": "image/png"}`` or
  ``{"type": "image", "url": "https://...", "media_type": "image/png"}`` (``media_type``
  optional with a URL; Gemini needs it);
- ``{"type": "file", "data": "<base64>", "media_type": "application/pdf", "filename": "a.pdf"}``
  or ``{"type": "file", "url": "https://...", ...}`` (``filename`` optional).

:func:`image`, :func:`file` and :func:`text` build them from bytes, a path or a URL.
:func:`check_input` validates an input before anything runs and raises :class:`InputError`
naming the part and the problem: an unknown type, a missing or unsupported media type, data
that is not base64, both or neither of ``data`` and ``url``, a binary past
:data:`MAX_PART_BYTES`. Each provider adapter turns the parts into its own wire shape and
refuses, before sending, a part its API cannot take (``ProviderError`` naming the provider
and the part).
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypedDict, cast

from auwgent._records import record
from auwgent.errors import AuwgentError

__all__ = [
    "FILE_MEDIA_TYPES",
    "IMAGE_MEDIA_TYPES",
    "INPUT_SCHEMA",
    "MAX_PART_BYTES",
    "FilePart",
    "ImagePart",
    "InputError",
    "Part",
    "WEB_SCHEMES",
    "TextPart",
    "ToolParts",
    "UnsupportedPart",
    "check_input",
    "check_part",
    "data_url",
    "describe_part",
    "file",
    "image",
    "input_text",
    "refuse",
    "stored_parts",
    "text",
    "tool_parts",
]

#: The largest binary one part may carry (decoded bytes): 20 MiB, the smallest of the
#: providers' inline limits. Checked on input and again by the session stores.
MAX_PART_BYTES = 20 * 1024 * 1024

IMAGE_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
FILE_MEDIA_TYPES = frozenset({"application/pdf"})
_MEDIA_TYPES = {"image": IMAGE_MEDIA_TYPES, "file": FILE_MEDIA_TYPES}
_BY_SUFFIX = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".pdf": "application/pdf",
}
#: The URL schemes every provider fetches; Gemini also reads ``gs://`` (Cloud Storage).
WEB_SCHEMES = ("http://", "https://")
_URL_SCHEMES = (*WEB_SCHEMES, "gs://")


class InputError(AuwgentError, ValueError):
    """A run's input is not a string or a valid list of parts; the message names the part."""


def _binary_schema(kind: str, media_types: frozenset[str]) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "type": {"const": kind},
        "data": {"type": "string", "contentEncoding": "base64"},
        "url": {"type": "string", "format": "uri"},
        "media_type": {"enum": sorted(media_types)},
    }
    if kind == "file":
        properties["filename"] = {"type": "string", "minLength": 1}
    return {
        "type": "object",
        "required": ["type"],
        "additionalProperties": False,
        "properties": properties,
        "oneOf": [{"required": ["data", "media_type"]}, {"required": ["url"]}],
    }


#: The JSON Schema of a run's input (a string or a list of parts), as ``auwgent serve`` and
#: the MCP ``run`` tool publish it.
INPUT_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {"type": "string"},
        {
            "type": "array",
            "minItems": 1,
            "items": {
                "oneOf": [
                    {
                        "type": "object",
                        "required": ["type", "text"],
                        "additionalProperties": False,
                        "properties": {"type": {"const": "text"}, "text": {"type": "string"}},
                    },
                    _binary_schema("image", IMAGE_MEDIA_TYPES),
                    _binary_schema("file", FILE_MEDIA_TYPES),
                ]
            },
        },
    ]
}


class UnsupportedPart(InputError):
    """A provider's API cannot take a part (raised while building the request, before
    anything is sent; the provider reports it as a ``ProviderError`` naming itself)."""


def refuse(index: int, part: Mapping[str, Any], why: str) -> UnsupportedPart:
    """The error for ``part`` (at ``index`` of its message) that an API cannot take."""
    return UnsupportedPart(f"{describe_part(index, part)} cannot be sent: {why}")


def data_url(part: Mapping[str, Any]) -> str:
    """A base64 part as a ``data:`` URL."""
    return f"data:{part['media_type']};base64,{part['data']}"


class TextPart(TypedDict):
    type: Literal["text"]
    text: str


class _BinaryPart(TypedDict, total=False):
    data: str  # base64 (standard alphabet, padded)
    url: str
    media_type: str


class ImagePart(_BinaryPart):
    type: Literal["image"]


class FilePart(_BinaryPart, total=False):
    type: Literal["file"]
    filename: str


Part = TextPart | ImagePart | FilePart


def text(value: str) -> TextPart:
    """A text part."""
    return {"type": "text", "text": value}


def image(source: bytes | str | os.PathLike[str], media_type: str | None = None) -> ImagePart:
    """An image part from bytes, a file path or an ``http(s)://`` / ``gs://`` URL.

    The media type is guessed from a path's or URL's suffix when not given; bytes need it.
    """
    return cast("ImagePart", _binary("image", source, media_type, None))


def file(
    source: bytes | str | os.PathLike[str],
    media_type: str | None = None,
    *,
    filename: str | None = None,
) -> FilePart:
    """A file part (a PDF) from bytes, a file path or a URL; ``filename`` defaults to the
    path's name."""
    return cast("FilePart", _binary("file", source, media_type, filename))


def _binary(kind: str, source: Any, media_type: str | None, filename: str | None) -> Part:
    part: dict[str, Any] = {"type": kind}
    if isinstance(source, (bytes, bytearray, memoryview)):
        part["data"] = base64.b64encode(bytes(source)).decode("ascii")
    elif isinstance(source, str) and source.startswith(_URL_SCHEMES):
        part["url"] = source
        media_type = media_type or _BY_SUFFIX.get(Path(source.split("?")[0]).suffix.lower())
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        try:
            raw = path.read_bytes()
        except OSError as error:
            raise InputError(f"{kind}({str(source)!r}): cannot read the file: {error}") from None
        part["data"] = base64.b64encode(raw).decode("ascii")
        media_type = media_type or _BY_SUFFIX.get(path.suffix.lower())
        if kind == "file":
            filename = filename or path.name
    else:
        raise InputError(f"{kind}(): expected bytes, a path or a URL, got {type(source).__name__}")
    if media_type is not None:
        part["media_type"] = media_type
    if filename is not None:
        part["filename"] = filename
    return check_part(part, f"{kind}()")


def check_input(value: Any, where: str = "run()") -> str | list[Part]:
    """``value`` checked: a ``str`` as it is, a list of parts as a fresh list of valid parts.

    Raises :class:`InputError` naming the part (``run(): part 2 (image): ...``).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, Mapping)) or not isinstance(value, Sequence):
        raise InputError(
            f"{where}: the input must be a string or a list of parts, got {type(value).__name__}"
        )
    if not value:
        raise InputError(f"{where}: the list of parts is empty")
    return [check_part(part, f"{where}: part {i + 1}") for i, part in enumerate(value)]


def check_part(part: Any, where: str) -> Part:
    """One part checked and copied (only its own keys); :class:`InputError` otherwise."""
    if not isinstance(part, Mapping):
        raise InputError(f"{where}: expected a part (a dict with 'type'), got {_kind(part)}")
    kind = part.get("type")
    if kind == "text":
        if not isinstance(part.get("text"), str):
            raise InputError(f"{where} (text): 'text' must be a string")
        _no_extra(part, {"type", "text"}, f"{where} (text)")
        return {"type": "text", "text": part["text"]}
    if kind in _MEDIA_TYPES:
        return cast("ImagePart | FilePart", _check_binary(part, str(kind), f"{where} ({kind})"))
    raise InputError(f"{where}: unknown part type {kind!r} (expected 'text', 'image' or 'file')")


def _check_binary(part: Mapping[str, Any], kind: str, where: str) -> dict[str, Any]:
    allowed = {"type", "data", "url", "media_type"} | ({"filename"} if kind == "file" else set())
    _no_extra(part, allowed, where)
    has_data, has_url = "data" in part, "url" in part
    if has_data == has_url:
        raise InputError(f"{where}: give exactly one of 'data' (base64) and 'url'")
    out: dict[str, Any] = {"type": kind}
    if has_data:
        out["data"] = _check_base64(part["data"], where)
    else:
        url = part["url"]
        if not isinstance(url, str) or not url.startswith(_URL_SCHEMES):
            raise InputError(f"{where}: 'url' must be an http(s):// or gs:// URL, got {url!r}")
        out["url"] = url
    media_type = part.get("media_type")
    if media_type is None and has_data:
        raise InputError(f"{where}: 'media_type' is missing (needed with 'data')")
    if media_type is not None:
        supported = _MEDIA_TYPES[kind]
        if media_type not in supported:
            raise InputError(
                f"{where}: unsupported media type {media_type!r} "
                f"(supported: {', '.join(sorted(supported))})"
            )
        out["media_type"] = media_type
    if "filename" in part:
        if not isinstance(part["filename"], str) or not part["filename"]:
            raise InputError(f"{where}: 'filename' must be a non-empty string")
        out["filename"] = part["filename"]
    return out


def _check_base64(data: Any, where: str) -> str:
    if not isinstance(data, str):
        raise InputError(f"{where}: 'data' must be a base64 string, got {_kind(data)}")
    if len(data) // 4 * 3 > MAX_PART_BYTES + 2:
        raise InputError(f"{where}: {_too_large(len(data) // 4 * 3)}")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise InputError(f"{where}: 'data' is not valid base64") from None
    if len(raw) > MAX_PART_BYTES:
        raise InputError(f"{where}: {_too_large(len(raw))}")
    return data


def _too_large(size: int) -> str:
    return f"the data is {size} bytes, past the limit of {MAX_PART_BYTES} bytes (MAX_PART_BYTES)"


def _no_extra(part: Mapping[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(str(k) for k in part if k not in allowed)
    if extra:
        raise InputError(f"{where}: unknown key(s) {', '.join(map(repr, extra))}")


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def stored_parts(data: Iterable[Mapping[str, Any]]) -> tuple[Part, ...]:
    """Parts read back from a session or a turn the runtime wrote: they were checked when they
    were given (:func:`check_input`), so they are copied, not checked again."""
    return tuple(cast("Part", dict(part)) for part in data)


@record
class ToolParts:
    """A tool's result with images for the model to see (:func:`tool_parts`)."""

    result: Any
    parts: tuple[Part, ...]


def tool_parts(result: Any, *images: Mapping[str, Any]) -> ToolParts:
    """What a tool returns to show the model images along with its ``result``.

    ``result`` is checked against the tool's declared return type as usual; ``images`` are
    image parts (:func:`image`), checked here (:class:`InputError`).
    """
    checked = []
    for i, part in enumerate(images):
        where = f"tool_parts(): part {i + 1}"
        if not isinstance(part, Mapping) or part.get("type") != "image":
            raise InputError(f"{where}: a tool returns image parts only")
        checked.append(check_part(part, where))
    if not checked:
        raise InputError("tool_parts(): give at least one image part")
    return ToolParts(result, tuple(checked))


def input_text(value: str | Sequence[Mapping[str, Any]]) -> str:
    """The text of an input: the string, or the text parts joined by blank lines (memory
    recall, transcripts and logs read this)."""
    if isinstance(value, str):
        return value
    return "\n\n".join(str(p["text"]) for p in value if p.get("type") == "text")


def describe_part(index: int, part: Mapping[str, Any]) -> str:
    """How an error names a part: ``part 2 (file, url https://x/a.pdf)``."""
    how = f"url {part['url']}" if "url" in part else str(part.get("media_type", "data"))
    return f"part {index + 1} ({part.get('type')}, {how})"
