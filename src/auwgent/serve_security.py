"""The HTTP boundary of ``auwgent serve``: who is asking, from which page and host, with what.

- **Authentication**: every request is made by a :class:`Principal` (``{"tenant", "user"}``),
  given by the application's ``authenticate(request)`` hook, by built-in bearer tokens
  (compared in constant time), by a header a trusted reverse proxy sets, or, on a loopback
  address with none of these, the one local principal.
- **Host and Origin** (:class:`Boundary`, an ASGI middleware): a request whose ``Host`` is not
  the bound address or an allowed name is refused (DNS rebinding), a request from a page whose
  ``Origin`` is not allowed is refused (cross-site requests), CORS headers go to allowed
  origins only, and a POST body must be ``application/json``.
- **Values**: a body's values are checked before anything runs (nesting depth, lone
  surrogates), each problem named by its field.
- **Context**: which context keys a client may set (:func:`client_settable`).
- **Ownership**: a conversation is stored under a key of its principal
  (:func:`conversation_key`), so another principal's conversation is not found, and memory is
  scoped the same way (:func:`memory_scope`).

See ``docs/serve.md`` (Security).
"""

from __future__ import annotations

import hmac
import inspect
import ipaddress
import json
import logging
import re
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, TypedDict
from urllib.parse import quote

from auwgent._records import field, record
from auwgent.errors import AuwgentError

__all__ = [
    "LOCAL_PRINCIPAL",
    "Authenticate",
    "Boundary",
    "BoundaryError",
    "Principal",
    "ServeSettings",
    "SettingsError",
    "authenticator",
    "check_origin",
    "check_client_context",
    "check_id",
    "check_values",
    "checked_principal",
    "client_settable",
    "conversation_key",
    "is_loopback",
    "memory_scope",
    "parse_settings",
]

log = logging.getLogger("auwgent")

#: How deeply a request body's values may nest (objects and arrays).
MAX_DEPTH = 32
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
_WILDCARDS = ("0.0.0.0", "::", "")
_MEMORY_SCOPES = ("principal", "conversation")
_SETTINGS_KEYS = (
    "allow_origins", "allow_hosts", "tokens", "trusted_header", "trusted_tenant_header",
    "client_context", "memory",
)  # fmt: skip


class Principal(TypedDict):
    """Who makes a request: a tenant (an organisation, an account) and a user in it."""

    tenant: str
    user: str


#: The principal of every request to a server on a loopback address without authentication.
LOCAL_PRINCIPAL: Principal = {"tenant": "local", "user": "local"}


class SettingsError(AuwgentError):
    """The serve settings are wrong (the message names the key); the server does not start."""


class BoundaryError(AuwgentError):
    """A request refused at the boundary: ``status`` and ``code`` go into its JSON error."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


Authenticate = Callable[[Any], Awaitable[Principal | None]]


@record
class ServeSettings:
    """How the server decides who may ask what (from ``--app``'s ``SERVE`` dict and flags)."""

    allow_origins: frozenset[str] = frozenset()
    allow_hosts: frozenset[str] = frozenset()
    tokens: Mapping[str, Principal] = field(default_factory=dict)
    trusted_header: str | None = None
    trusted_tenant_header: str | None = None
    #: Agent name (or "*" for all) → the context keys a client may set; absent: derived.
    client_context: Mapping[str, frozenset[str]] | None = None
    memory: str = "principal"


def parse_settings(value: Any) -> ServeSettings:
    """Check the ``SERVE`` dict of the ``--app`` module; a problem names its key."""
    if value is None:
        return ServeSettings()
    if not isinstance(value, Mapping):
        raise _bad(f"SERVE: expected a dict, got {type(value).__name__}")
    for key in value:
        if key not in _SETTINGS_KEYS:
            raise _bad(f"SERVE.{key}: unknown key (valid keys: {', '.join(_SETTINGS_KEYS)})")
    memory = value.get("memory", "principal")
    if memory not in _MEMORY_SCOPES:
        raise _bad(f"SERVE.memory: expected 'principal' or 'conversation', got {memory!r}")
    return ServeSettings(
        allow_origins=_names(value, "allow_origins"),
        allow_hosts=frozenset(h.lower() for h in _names(value, "allow_hosts")),
        tokens=_tokens(value.get("tokens")),
        trusted_header=_header(value, "trusted_header"),
        trusted_tenant_header=_header(value, "trusted_tenant_header"),
        client_context=_client_context(value.get("client_context")),
        memory=str(memory),
    )


def _bad(message: str) -> SettingsError:
    return SettingsError(message)


def _strings(given: Any, where: str) -> list[str]:
    if not isinstance(given, (list, tuple, set, frozenset)) or not all(
        isinstance(n, str) and n.strip() for n in given
    ):
        raise _bad(f"{where}: expected a list of non-empty strings, got {given!r}")
    return [n.strip() for n in given]


def _names(value: Mapping[str, Any], key: str) -> frozenset[str]:
    names = _strings(value.get(key, ()), f"SERVE.{key}")
    if key == "allow_origins":
        for name in names:
            check_origin(name, f"SERVE.{key}")
    return frozenset(names)


_ORIGIN = re.compile(r"https?://[^/\s?#]+")


def check_origin(origin: str, where: str) -> str:
    """``origin`` if it is written as browsers send it (``scheme://host[:port]``), else why."""
    if not _ORIGIN.fullmatch(origin):
        raise _bad(
            f"{where}: {origin!r} is not an origin: write scheme://host[:port], with no path "
            "(e.g. https://app.example.com)"
        )
    return origin


def _header(value: Mapping[str, Any], key: str) -> str | None:
    given = value.get(key)
    if given is not None and (not isinstance(given, str) or not given.strip()):
        raise _bad(f"SERVE.{key}: expected a header name, got {given!r}")
    return None if given is None else given.strip().lower()


def _tokens(given: Any) -> dict[str, Principal]:
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise _bad(f"SERVE.tokens: expected a dict of token → principal, got {given!r}")
    tokens: dict[str, Principal] = {}
    for i, (token, principal) in enumerate(given.items()):
        if not isinstance(token, str) or len(token) < 16:
            raise _bad(f"SERVE.tokens: token #{i + 1} must be a string of at least 16 characters")
        tokens[token] = checked_principal(principal, f"SERVE.tokens[#{i + 1}]")
    return tokens


def _client_context(given: Any) -> dict[str, frozenset[str]] | None:
    if given is None:
        return None
    if isinstance(given, (list, tuple)):
        given = {"*": given}
    if not isinstance(given, Mapping):
        raise _bad(f"SERVE.client_context: expected a list of keys or agent → keys, got {given!r}")
    return {
        str(agent): frozenset(_strings(keys, f"SERVE.client_context.{agent}"))
        for agent, keys in given.items()
    }


def checked_principal(value: Any, where: str) -> Principal:
    """``value`` as a :class:`Principal`, or an error naming ``where``."""
    if not isinstance(value, Mapping) or set(value) != {"tenant", "user"}:
        raise _bad(f'{where}: expected a principal {{"tenant": str, "user": str}}, got {value!r}')
    for key in ("tenant", "user"):
        if not isinstance(value[key], str) or not value[key] or _surrogate(value[key]) >= 0:
            raise _bad(f"{where}.{key}: expected a non-empty string, got {value[key]!r}")
    return {"tenant": value["tenant"], "user": value["user"]}


# -- authentication ----------------------------------------------------------------------------


def authenticator(settings: ServeSettings, hook: Any, token: str | None) -> Authenticate | None:
    """The one way requests are authenticated, or ``None`` (loopback only, the local principal).

    ``hook`` is the ``--app`` module's ``authenticate(request)`` (sync or async); ``token`` is
    ``--token``. Giving more than one way is an error: which one decides must be plain.
    """
    tokens = dict(settings.tokens)
    if token is not None:
        if len(token) < 16:
            raise _bad("--token: a token must have at least 16 characters")
        tokens[token] = {"tenant": "default", "user": "default"}
    given = {
        "authenticate": hook is not None,
        "bearer tokens": bool(tokens),
        "trusted_header": settings.trusted_header is not None,
    }
    ways = [way for way, on in given.items() if on]
    if len(ways) > 1:
        raise _bad(f"choose one way to authenticate requests, not {' and '.join(ways)}")
    if settings.trusted_tenant_header is not None and settings.trusted_header is None:
        raise _bad("SERVE.trusted_tenant_header goes with SERVE.trusted_header")
    if hook is not None:
        if not callable(hook):
            raise _bad("--app: authenticate must be a function of the request")
        return _hooked(hook)
    if tokens:
        return _bearer(tokens)
    if settings.trusted_header is not None:
        return _trusted(settings.trusted_header, settings.trusted_tenant_header)
    return None


def _hooked(hook: Callable[[Any], Any]) -> Authenticate:
    async def authenticate(request: Any) -> Principal | None:
        try:
            principal = hook(request)
            if inspect.isawaitable(principal):
                principal = await principal
        except Exception as exc:
            log.exception("auwgent serve: authenticate failed")
            raise BoundaryError(
                500, "authenticate_failed", f"authenticate failed: {type(exc).__name__}"
            ) from exc
        if principal is None:
            return None
        try:
            return checked_principal(principal, "authenticate()")
        except SettingsError as exc:
            log.error("auwgent serve: %s", exc)
            raise BoundaryError(500, "authenticate_failed", str(exc)) from exc

    return authenticate


def _bearer(tokens: Mapping[str, Principal]) -> Authenticate:
    known = [(t.encode(), p) for t, p in tokens.items()]

    async def authenticate(request: Any) -> Principal | None:
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        offered = given.strip().encode("utf-8", "surrogateescape")
        found: Principal | None = None
        for secret, principal in known:  # every token compared, in constant time
            if hmac.compare_digest(offered, secret):
                found = principal
        return found

    return authenticate


def _trusted(user_header: str, tenant_header: str | None) -> Authenticate:
    async def authenticate(request: Any) -> Principal | None:
        user = request.headers.get(user_header, "").strip()
        tenant = request.headers.get(tenant_header, "").strip() if tenant_header else "default"
        if not user or not tenant:
            return None
        return {"tenant": tenant, "user": user}

    return authenticate


# -- ownership ---------------------------------------------------------------------------------


def conversation_key(principal: Principal, conversation: str) -> str:
    """The store key of ``principal``'s conversation: one namespace per principal."""
    return f"{_part(principal['tenant'])}/{_part(principal['user'])}/{conversation}"


def memory_scope(principal: Principal, conversation: str | None, settings: ServeSettings) -> str:
    """The memory scope of a run: its principal's (and, when asked, its conversation's)."""
    scope = f"{_part(principal['tenant'])}/{_part(principal['user'])}"
    if settings.memory == "conversation":
        # A run without a conversation id has a scope of its own: nothing to recall. ("%r" is
        # never in a percent-encoded part, so no conversation id has this scope.)
        own = "%run-" + uuid.uuid4().hex
        scope += "/" + (_part(conversation) if conversation is not None else own)
    return scope


def _part(text: str) -> str:
    return quote(text, safe="")


# -- context -----------------------------------------------------------------------------------


def client_settable(
    doc: Mapping[str, Any], agent: str, app_context: Mapping[str, Any], settings: ServeSettings
) -> frozenset[str]:
    """The context keys a client may set for ``agent``.

    Declared in ``SERVE["client_context"]`` (for the agent, else ``"*"``), or by default: the
    declared context keys that decide nothing in the document (no workflow reads them, no
    prompt condition tests them) and that the application does not set itself.
    """
    if settings.client_context is not None:
        chosen = settings.client_context.get(agent, settings.client_context.get("*", frozenset()))
        return frozenset(chosen)
    declared = {f["name"] for a in doc["agents"].values() for f in a["context"]}
    return frozenset(declared - _deciding_reads(doc) - set(app_context))


def _deciding_reads(doc: Mapping[str, Any]) -> set[str]:
    """The context keys that decide something in the document: every ``ctx.name`` in a
    workflow's body, and in the condition of any ``if`` (of a prompt or a template)."""
    workflows = [w for a in doc["agents"].values() for w in a.get("workflows") or ()]
    conditions = [item["cond"] for item in _nodes(doc) if "cond" in item]
    return {
        item["name"]
        for root in (*workflows, *conditions)
        for item in _nodes(root)
        if item.get("e") == "ctx" and isinstance(item.get("name"), str)
    }


def _nodes(root: Any) -> Iterator[Mapping[str, Any]]:
    """Every object inside ``root`` (itself included), depth first."""
    stack = [root]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def check_client_context(context: Any, settable: frozenset[str]) -> dict[str, Any]:
    """The client's ``context``, refused (422, naming the key) when it sets what it may not."""
    if context is None:
        return {}
    if not isinstance(context, dict):
        raise BoundaryError(422, "bad_context", "context: expected an object")
    refused = sorted(set(context) - settable)
    if refused:
        allowed = ", ".join(sorted(settable)) or "none"
        raise BoundaryError(
            422, "context_refused",
            f"context.{refused[0]}: a client may not set this key (keys a client may set: "
            f"{allowed})",
        )  # fmt: skip
    return context


# -- values ------------------------------------------------------------------------------------


def check_values(value: Any, where: str = "") -> None:
    """Refuse (400, naming the field) values nested too deeply or holding lone surrogates."""
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        item, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise BoundaryError(
                400, "too_deep", f"{path or 'body'}: nested more than {MAX_DEPTH} levels deep"
            )
        if isinstance(item, str):
            _check_text(item, path)
        elif isinstance(item, dict):
            for key, inner in item.items():
                _check_text(key, f"{path}.{key!r}" if path else repr(key))
                stack.append((inner, f"{path}.{key}" if path else key, depth + 1))
        elif isinstance(item, list):
            stack.extend((inner, f"{path}[{i}]", depth + 1) for i, inner in enumerate(item))


def _check_text(text: str, path: str) -> None:
    at = _surrogate(text)
    if at >= 0:
        raise BoundaryError(
            400, "bad_text",
            f"{path or 'body'}: a lone surrogate (U+{ord(text[at]):04X}) at character {at} is "
            "not valid Unicode",
        )  # fmt: skip


def _surrogate(text: str) -> int:
    """The index of the first lone surrogate in ``text``, or -1."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return -1


def check_id(value: Any, field_name: str) -> str:
    """A conversation id: a non-empty string of valid Unicode without control characters, at
    most 256 characters (else 400 naming ``field_name``)."""
    if not isinstance(value, str) or not value:
        raise BoundaryError(400, "bad_request", f"{field_name}: expected a non-empty string")
    if len(value) > 256:
        raise BoundaryError(400, "bad_request", f"{field_name}: longer than 256 characters")
    _check_text(value, field_name)
    control = next((c for c in value if ord(c) < 0x20 or ord(c) == 0x7F), None)
    if control is not None:  # not an identifier, and PostgreSQL text cannot hold NUL
        raise BoundaryError(
            400, "bad_request", f"{field_name}: holds the control character U+{ord(control):04X}"
        )
    return value


# -- Host, Origin, CORS, Content-Type ----------------------------------------------------------


class Boundary:
    """ASGI middleware refusing what a browser on another site (or host name) could send.

    - ``Host`` must be the bound address (with the loopback names when bound to one), or one
      of ``allow_hosts``; bound to a wildcard address without ``allow_hosts``, any host.
    - A request with an ``Origin`` not in ``allow_origins`` (or, without one,
      ``Sec-Fetch-Site: cross-site``) is refused; allowed origins get CORS headers and their
      preflight ``OPTIONS`` an answer.
    - A POST must say ``Content-Type: application/json`` (a form or ``text/plain`` body, which
      a page can send without a preflight, is refused).
    """

    def __init__(self, app: Any, settings: ServeSettings, host: str, port: int | None) -> None:
        self.app = app
        self.origins = settings.allow_origins
        self.hosts = _allowed_hosts(host, port, settings.allow_hosts)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        origin = headers.get("origin")
        cors = _cors(origin) if origin is not None and origin in self.origins else {}
        try:
            self._check(scope, headers, origin)
        except BoundaryError as exc:
            await _send_error(send, exc, cors)  # an allowed page may read why it was refused
            return
        if scope["method"] == "OPTIONS" and origin is not None:
            await _send(send, 204, b"", cors)
            return

        async def with_cors(message: Any) -> None:
            if message["type"] == "http.response.start" and cors:
                message["headers"] = [*message.get("headers", []),
                                      *((k.encode(), v.encode()) for k, v in cors.items())]  # fmt: skip
            await send(message)

        await self.app(scope, receive, with_cors)

    def _check(self, scope: Any, headers: Mapping[str, str], origin: str | None) -> None:
        if self.hosts is not None and not _host_allowed(headers.get("host"), self.hosts):
            raise BoundaryError(
                421, "bad_host",
                f"Host {headers.get('host')!r} is not this server's (add a name the server is "
                "reached by with --allow-host)",
            )  # fmt: skip
        if origin is not None and origin not in self.origins:
            raise BoundaryError(
                403, "bad_origin",
                f"requests from origin {origin!r} are not allowed (add it with --allow-origin)",
            )  # fmt: skip
        if origin is None and headers.get("sec-fetch-site") == "cross-site":
            raise BoundaryError(403, "bad_origin", "cross-site requests are not allowed")
        if scope["method"] == "POST":
            kind = headers.get("content-type", "").split(";")[0].strip().lower()
            if kind != "application/json":
                raise BoundaryError(
                    415, "bad_content_type",
                    f"Content-Type: expected application/json, got {kind or 'none'!r}",
                )  # fmt: skip


def _headers(scope: Any) -> dict[str, str]:
    found: dict[str, str] = {}
    for key, value in scope.get("headers", ()):
        found.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
    return found


def _allowed_hosts(
    host: str, port: int | None, names: frozenset[str]
) -> frozenset[tuple[str, int | None]] | None:
    """The accepted (name, port) pairs, lower case (port ``None``: any), or ``None``: any host.

    The bound address on its port; with a loopback or wildcard bind, the loopback names too
    (only this machine reaches them); and ``names``, ``name`` (any port) or ``name:port``.
    """
    if host in _WILDCARDS and not names:
        return None
    bound = {host.lower()} if host not in _WILDCARDS else set()
    if host in _WILDCARDS or is_loopback(host):
        bound.update(_LOOPBACK_NAMES)
    allowed = {(name, port) for name in bound}
    allowed.update(_split_host(name) for name in names)
    return frozenset(allowed)


def _split_host(text: str) -> tuple[str, int | None]:
    """``name[:port]`` or ``[v6][:port]`` → (name, port), lower case (an unreadable port: -1)."""
    text = text.strip().lower()
    if text.startswith("["):
        name, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else rest
    elif text.count(":") == 1:
        name, _, port = text.partition(":")
    else:  # no port, or a bare IPv6 address
        name, port = text, ""
    if not port:
        return name, None
    return name, int(port) if port.isdigit() else -1


def _host_allowed(header: str | None, allowed: frozenset[tuple[str, int | None]]) -> bool:
    name, port = _split_host(header or "")
    if not name:
        return False
    return (
        (name, None) in allowed
        or (name, port) in allowed
        or (port is None and any(n == name and p == 80 for n, p in allowed))
    )


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address to bind) is only reachable from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _cors(origin: str) -> dict[str, str]:
    return {
        "access-control-allow-origin": origin,
        "access-control-allow-methods": "GET, POST, OPTIONS",
        "access-control-allow-headers": "authorization, content-type",
        "access-control-max-age": "600",
        "vary": "Origin",
    }


async def _send_error(send: Any, error: BoundaryError, headers: Mapping[str, str]) -> None:
    body = json.dumps({"error": {"code": error.code, "message": str(error)}}).encode()
    await _send(send, error.status, body, {**headers, "content-type": "application/json"})


async def _send(send: Any, status: int, body: bytes, headers: Mapping[str, str]) -> None:
    raw = [(k.encode(), v.encode()) for k, v in headers.items()]
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
