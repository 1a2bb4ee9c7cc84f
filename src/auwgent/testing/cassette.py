"""Cassettes: record real HTTP exchanges with a model provider once, replay them forever.

A :class:`Cassette` is an ``httpx.AsyncClient``, so it goes straight into the runtime config
(``"httpClient": Cassette("tests/cassettes/weather.json")``); its ``transport`` can also be
given to a client of your own. Modes:

- ``"replay"`` (the default): every request is answered from the file; a request that is not in
  it raises :class:`CassetteMiss`, whose message shows a diff against the nearest recorded
  request. Nothing reaches the network.
- ``"record"``: requests go to the real server (the ``transport`` given, else httpx's own) and
  every exchange is written to the file, which is started afresh.
- ``"auto"``: replay what the file has, record what it lacks.

Requests are matched on their normalised form: method, path, query and the JSON body with
sorted keys. Only what the runtime itself puts in a request and changes from run to run is
normalised, never what a message says:

- the date-and-time line that ends the system prompt (the OpenAI ``system`` message, Gemini's
  ``systemInstruction``) becomes ``Current date and time: <now>``;
- a call id the runtime made for a call the provider sent without one (``auwgent_call_`` and
  24 hex digits, in the ``id`` of an assistant message's ``tool_calls`` and in a ``tool``
  message's ``tool_call_id``) becomes ``<made call id N>``, numbered by first appearance;
- the ``key`` query parameter is dropped, and headers are not part of the match.

Everything else must match exactly: a UUID or a date in the user's text is content.

Identical requests are answered in the order they were recorded. Responses are kept byte for
byte, streaming ones as the chunks that arrived, so a replayed stream is decoded exactly as the
live one was. API keys never reach the file: request headers are not stored, the ``key`` query
parameter is dropped, and the values of the ``Authorization``, ``x-goog-api-key`` and
``api-key`` headers are blanked out wherever else they appear. The file is indented JSON with
sorted keys, one exchange after another, so that a change reviews well as a diff.
"""

from __future__ import annotations

import base64
import difflib
import json
import re
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, Literal

import httpx

from auwgent.errors import AuwgentError

__all__ = ["CASSETTE_VERSION", "Cassette", "CassetteMiss", "normalise_request"]

CASSETTE_VERSION = 1
Mode = Literal["replay", "record", "auto"]
_MODES = ("replay", "record", "auto")

_SECRET_HEADERS = ("authorization", "x-goog-api-key", "api-key")
_KEPT_RESPONSE_HEADERS = ("content-type", "retry-after")
# The line the runtime ends every system prompt with (runtime.clock.now_line).
_DATE_LINE = re.compile(r"(?:\A|(?<=\n\n))Current date and time: [^\n]*\Z")
_NOW = "Current date and time: <now>"
_MADE_ID = re.compile(r"auwgent_call_[0-9a-f]{24}")


class CassetteMiss(AuwgentError):
    """A request in replay mode that the cassette has no (unused) answer for."""


def normalise_request(method: str, url: httpx.URL, body: bytes) -> dict[str, Any]:
    """The part of a request a cassette matches on (see the module docstring)."""
    query = [(k, v) for k, v in url.params.multi_items() if k != "key"]
    text = body.decode("utf-8", errors="replace")
    try:
        parsed: Any = json.loads(text) if text else None
    except ValueError:
        parsed = text
    if isinstance(parsed, dict):
        parsed = _normalise(parsed)
    return {
        "method": method.upper(),
        "path": url.path,
        "query": "&".join(f"{k}={v}" for k, v in sorted(query)),
        "body": parsed,
    }


def _normalise(body: dict[str, Any]) -> dict[str, Any]:
    """A copy of a request body with the runtime's volatile values replaced."""
    body = json.loads(json.dumps(body))
    made: dict[str, str] = {}

    def made_id(value: Any) -> Any:
        if isinstance(value, str) and _MADE_ID.fullmatch(value):
            return made.setdefault(value, f"<made call id {len(made) + 1}>")
        return value

    system = body.get("systemInstruction")  # Gemini
    if isinstance(system, dict):
        _undate_last(system.get("parts"), "text")
    messages = body.get("messages")  # OpenAI Chat Completions
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, dict):
            continue
        if message.get("role") == "system":
            content = message.get("content")
            if isinstance(content, str):
                message["content"] = _DATE_LINE.sub(_NOW, content)
            else:
                _undate_last(content, "text")
        for call in message.get("tool_calls") or ():
            if isinstance(call, dict) and "id" in call:
                call["id"] = made_id(call["id"])
        if "tool_call_id" in message:
            message["tool_call_id"] = made_id(message["tool_call_id"])
    return body


def _undate_last(parts: Any, key: str) -> None:
    """The date line at the end of the last text part of a system prompt, normalised."""
    if isinstance(parts, list) and parts and isinstance(parts[-1], dict):
        text = parts[-1].get(key)
        if isinstance(text, str):
            parts[-1][key] = _DATE_LINE.sub(_NOW, text)


def _canonical(request: Mapping[str, Any]) -> str:
    return json.dumps(request, sort_keys=True, indent=2, ensure_ascii=False)


class _Recorded(httpx.AsyncByteStream):
    """A live response body passed through while its chunks are kept for the cassette."""

    def __init__(self, inner: httpx.AsyncByteStream, done: Any) -> None:
        self._inner = inner
        self._done = done
        self._chunks: list[bytes] = []

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._chunks.append(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()
        self._done(self._chunks)


class _Replayed(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


class CassetteTransport(httpx.AsyncBaseTransport):
    """The transport behind a :class:`Cassette` (usable in a client of your own)."""

    def __init__(self, cassette: Cassette, inner: httpx.AsyncBaseTransport | None) -> None:
        self._cassette = cassette
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        cassette = self._cassette
        body = await request.aread()
        key = normalise_request(request.method, request.url, body)
        if cassette.mode != "record":
            found = cassette._take(key)
            if found is not None:
                return _response(found, request)
            if cassette.mode == "replay":
                raise cassette._miss(key)
        if self._inner is None:
            self._inner = httpx.AsyncHTTPTransport()
        response = await self._inner.handle_async_request(request)
        secrets = [request.headers[h] for h in _SECRET_HEADERS if request.headers.get(h)]
        secrets += [v for k, v in request.url.params.multi_items() if k == "key" and v]

        def done(chunks: list[bytes]) -> None:
            cassette._add(key, response, chunks, secrets)

        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_Recorded(response.stream, done),
            request=request,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        if self._inner is not None:
            await self._inner.aclose()


def _response(found: Mapping[str, Any], request: httpx.Request) -> httpx.Response:
    answer = found["response"]
    if "chunks_b64" in answer:
        chunks = [base64.b64decode(c) for c in answer["chunks_b64"]]
    else:
        chunks = [c.encode("utf-8") for c in answer["chunks"]]
    return httpx.Response(
        answer["status"],
        headers=answer.get("headers", {}),
        stream=_Replayed(chunks),
        request=request,
    )


class Cassette(httpx.AsyncClient):
    """An HTTP client that records and replays provider traffic (see the module docstring).

    Args:
        path: the cassette file (JSON); created on the first recording.
        mode: ``"replay"``, ``"record"`` or ``"auto"``.
        transport: where recorded requests really go (default: the network, through httpx's
            own transport); point it at a test server to record against it.
    """

    def __init__(
        self,
        path: str | Path,
        mode: Mode = "replay",
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        **client_options: Any,
    ) -> None:
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {', '.join(_MODES)}, got {mode!r}")
        self.path = Path(path)
        self.mode: Mode = mode
        self.misses: list[CassetteMiss] = []
        self._interactions: list[dict[str, Any]] = []
        self._used: set[int] = set()
        if mode != "record" and self.path.exists():
            self._interactions = self._read()
        elif mode == "replay":
            raise FileNotFoundError(
                f"cassette {self.path} does not exist: record it first (mode='record')"
            )
        self.transport = CassetteTransport(self, transport)
        super().__init__(transport=self.transport, **client_options)

    def __repr__(self) -> str:
        return f"Cassette({str(self.path)!r}, mode={self.mode!r})"

    @property
    def interactions(self) -> list[dict[str, Any]]:
        """The recorded exchanges, in order (as in the file)."""
        return list(self._interactions)

    @property
    def unused(self) -> list[int]:
        """Indexes of recorded exchanges that no request has replayed yet."""
        return [i for i in range(len(self._interactions)) if i not in self._used]

    def _read(self) -> list[dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise CassetteMiss(f"cassette {self.path} is not valid JSON: {exc}") from exc
        if not isinstance(data, dict) or data.get("version") != CASSETTE_VERSION:
            raise CassetteMiss(
                f"cassette {self.path}: expected a version {CASSETTE_VERSION} cassette; "
                "record it again"
            )
        interactions = data.get("interactions")
        if not isinstance(interactions, list):
            raise CassetteMiss(f"cassette {self.path}: 'interactions' must be a list")
        return interactions

    def _take(self, key: Mapping[str, Any]) -> dict[str, Any] | None:
        for i, interaction in enumerate(self._interactions):
            if i not in self._used and interaction.get("request") == key:
                self._used.add(i)
                return interaction
        return None

    def _miss(self, key: Mapping[str, Any]) -> CassetteMiss:
        wanted = _canonical(key)
        lines = [f"cassette {self.path} has no recorded answer for {key['method']} {key['path']}"]
        if not self._interactions:
            lines.append("(the cassette is empty)")
        else:
            scored = [
                (difflib.SequenceMatcher(None, _canonical(it["request"]), wanted).ratio(), i)
                for i, it in enumerate(self._interactions)
            ]
            _, nearest = max(scored)
            diff = difflib.unified_diff(
                _canonical(self._interactions[nearest]["request"]).splitlines(),
                wanted.splitlines(),
                fromfile=f"recorded request #{nearest + 1}",
                tofile="this request",
                lineterm="",
                n=2,
            )
            shown = list(diff)
            lines += shown[:80] + ([f"... {len(shown) - 80} more diff lines"] * (len(shown) > 80))
            lines.append("re-record the cassette (mode='record') if the change is intended")
        miss = CassetteMiss("\n".join(lines))
        self.misses.append(miss)
        return miss

    def _add(
        self,
        key: dict[str, Any],
        response: httpx.Response,
        chunks: list[bytes],
        secrets: list[str],
    ) -> None:
        headers = {k: v for k, v in response.headers.items() if k.lower() in _KEPT_RESPONSE_HEADERS}
        answer: dict[str, Any] = {"status": response.status_code, "headers": headers}
        try:
            answer["chunks"] = [c.decode("utf-8") for c in chunks]
        except UnicodeDecodeError:
            answer["chunks_b64"] = [base64.b64encode(c).decode("ascii") for c in chunks]
        interaction = _scrub({"request": key, "response": answer}, secrets)
        self._interactions.append(interaction)
        self._used.add(len(self._interactions) - 1)
        self.save()

    def save(self) -> None:
        """Write the cassette file (done after every recorded exchange)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(
            {"version": CASSETTE_VERSION, "interactions": self._interactions},
            sort_keys=True,
            indent=2,
            ensure_ascii=False,
        )
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(text + "\n", encoding="utf-8")
        tmp.replace(self.path)


def _scrub(value: Any, secrets: list[str]) -> Any:
    """``value`` with every occurrence of a secret replaced by ``<redacted>``."""
    tokens = {s.split(" ", 1)[-1] for s in secrets} | set(secrets)
    tokens = {t for t in tokens if len(t) >= 4}
    if not tokens:
        return value
    text = json.dumps(value, ensure_ascii=False)
    for token in sorted(tokens, key=len, reverse=True):
        text = text.replace(json.dumps(token, ensure_ascii=False)[1:-1], "<redacted>")
    result: Any = json.loads(text)
    return result
