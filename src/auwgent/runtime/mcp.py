"""``@mcp`` tools at run time: one connection per MCP server, opened lazily and reused.

A call to an ``@mcp`` tool takes the path of every call (scoping, the call intent with its
handlers and middleware, argument validation, the approval gate, the result intents); only the
last step, running the implementation, comes here instead of the application's ``Tools``
class: :meth:`McpServers.implementations` gives the tool registry one coroutine per ``@mcp``
tool, which sends the validated arguments to the server with the official ``mcp`` SDK
(``pip install 'auwgent[mcp]'``).

A connection lives in a task of its own, because the SDK's transports must be entered and left
by the same task, while calls come from any task of the run. It is opened by the first call,
serves every later call of the agent in that event loop, and is closed by ``Agent.aclose()``
(``run_sync`` closes it at the end of its loop). A server that does not start, dies or answers
with an error makes the call fail with :class:`~auwgent.errors.McpError`, which names the server
and reaches the application as ``tool_error``. Starting a server (launching it or reaching its
URL, and the initialize handshake) is bounded by its ``startTimeout`` (60 s, as ``auwgent mcp
import`` waits), and each call, once connected, by its ``timeout`` (10 s).

The runtime config key ``"mcp"`` holds what the source must not: ``{"Name": {"env": {...},
"headers": {...}, "timeout": seconds, "startTimeout": seconds}}``. ``env`` is merged over the declaration's ``env`` (for
a launched server, whose environment is otherwise the SDK's safe minimum: PATH, HOME, ...);
``headers`` go with every HTTP request to a ``url`` server (tokens).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from importlib.util import find_spec
from typing import Any, TypedDict

from auwgent._records import field, record
from auwgent.errors import ConfigError, McpError
from auwgent.runtime.evaluate import schema

__all__ = [
    "DEFAULT_START_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "McpConnection",
    "McpServerConfig",
    "McpServers",
    "ServerOptions",
    "mcp_tools",
    "parse_mcp_options",
]

DEFAULT_TIMEOUT = 10.0
DEFAULT_START_TIMEOUT = 60.0
_CLOSE_GRACE = 5.0  # seconds a closing connection gets before its task is cancelled
_INSTALL = "pip install 'auwgent[mcp]'"


class McpServerConfig(TypedDict, total=False):
    """One server's entry in the runtime config's ``"mcp"`` (every key optional)."""

    env: Mapping[str, str]  # for a server launched by command, merged over its declaration's
    headers: Mapping[str, str]  # for a server reached by url
    timeout: float  # seconds per call once the server is up (default 10)
    startTimeout: float  # seconds to launch and initialize it (default 60)


_OPTION_KEYS = tuple(McpServerConfig.__annotations__)


@record
class ServerOptions:
    """One server's part of the runtime config's ``"mcp"``."""

    env: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    start_timeout: float = DEFAULT_START_TIMEOUT


def parse_mcp_options(value: Any, servers: Mapping[str, Any]) -> dict[str, ServerOptions]:
    """The checked ``"mcp"`` config for the document's ``servers`` (every server has options)."""
    options = {name: ServerOptions() for name in servers}
    if value is None:
        return options
    if not isinstance(value, Mapping):
        raise ConfigError(f"mcp: expected an object of servers, got {type(value).__name__}")
    for name, entry in value.items():
        if name not in servers:
            from difflib import get_close_matches  # only on this error path

            close = get_close_matches(str(name), list(servers), n=1)
            known = ", ".join(servers) or "none"
            tip = f"did you mean {close[0]!r}?" if close else f"declared servers: {known}"
            raise ConfigError(f"mcp.{name}: no MCP server named {name!r} is declared; {tip}")
        options[name] = _server_options(f"mcp.{name}", entry, servers[name])
    return options


def _server_options(path: str, entry: Any, spec: Mapping[str, Any]) -> ServerOptions:
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{path}: expected an object, got {type(entry).__name__}")
    for key in entry:
        if key not in _OPTION_KEYS:
            raise ConfigError(f"{path}.{key}: unknown key (valid keys: {', '.join(_OPTION_KEYS)})")
    env = _strings(f"{path}.env", entry.get("env"))
    headers = _strings(f"{path}.headers", entry.get("headers"))
    if env and "url" in spec:
        raise ConfigError(f"{path}.env: the server is reached by url; use headers for its secrets")
    if headers and "url" not in spec:
        raise ConfigError(f"{path}.headers: the server is launched by command; use env instead")
    timeout = _seconds(f"{path}.timeout", entry.get("timeout", DEFAULT_TIMEOUT))
    start = _seconds(f"{path}.startTimeout", entry.get("startTimeout", DEFAULT_START_TIMEOUT))
    return ServerOptions(env, headers, timeout, start)


def _seconds(path: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"{path}: expected a positive number of seconds, got {value!r}")
    return float(value)


def _strings(path: str, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigError(f"{path}: expected an object of strings")
    return dict(value)


def mcp_tools(doc: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Every ``@mcp`` tool of the document by name (agents' and workflows' scoped tools)."""
    found: dict[str, Mapping[str, Any]] = {}
    for agent in doc["agents"].values():
        tools = [*agent["tools"], *(t for w in agent["workflows"] for t in w["tools"])]
        for tool in tools:
            if "mcp" in tool:
                found.setdefault(tool["name"], tool)
    return found


class McpServers:
    """The document's MCP servers and their connections (one per server, per event loop)."""

    def __init__(self, doc: Mapping[str, Any], config: Any) -> None:
        self.servers: Mapping[str, Mapping[str, Any]] = doc.get("mcp") or {}
        self.options = parse_mcp_options(config, self.servers)
        self.tools = mcp_tools(doc)
        self.types: schema.Types = doc["types"]
        if self.tools and not _sdk_installed():
            raise ConfigError(f"mcp: the agent has @mcp tools; install the MCP SDK: {_INSTALL}")
        self._connections: dict[str, McpConnection] = {}

    def implementations(self) -> dict[str, Callable[..., Awaitable[Any]]]:
        """One coroutine function per ``@mcp`` tool, called with the validated arguments."""
        return {name: self._caller(name, tool) for name, tool in self.tools.items()}

    def _caller(self, name: str, tool: Mapping[str, Any]) -> Callable[..., Awaitable[Any]]:
        server, returns = str(tool["mcp"]), tool["returns"]
        remote = str(tool.get("mcpTool") or name)  # the server's own name for it

        async def call(**args: Any) -> Any:
            return await self.call(server, remote, args, returns)

        return call

    async def call(
        self, server: str, tool: str, args: Mapping[str, Any], returns: schema.IRType
    ) -> Any:
        """Call ``tool`` on ``server``; its value shaped for the declared ``returns``."""
        connection = self.connection(server)
        result = await connection.call_tool(tool, dict(args))
        if result.is_error:
            raise McpError(server, f"tool {tool} answered with an error: {_text(result) or '?'}")
        return _value(result, returns, self.types)

    def connection(self, server: str) -> McpConnection:
        found = self._connections.get(server)
        if found is None:
            found = self._connections[server] = McpConnection(
                server, self.servers[server], self.options[server]
            )
        return found

    async def aclose(self) -> None:
        """Close every connection this event loop holds; those of a finished loop are dropped."""
        connections = list(self._connections.values())
        self._connections.clear()
        await asyncio.gather(*(c.aclose() for c in connections))


class McpConnection:
    """One server: the task holding the SDK client open, and the calls made through it."""

    def __init__(self, name: str, spec: Mapping[str, Any], options: ServerOptions) -> None:
        self.name = name
        self.spec = spec
        self.options = options
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[Any] | None = None
        self._closing: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def call_tool(self, tool: str, args: dict[str, Any]) -> Any:
        """The SDK's ``CallToolResult``; ``McpError`` for every way the server can fail."""
        return await self.request(f"tool {tool}", lambda client: client.call_tool(tool, args))

    async def list_tools(self) -> list[Any]:
        """Every tool the server lists (the SDK's ``Tool`` objects), page after page."""

        async def pages(client: Any) -> list[Any]:
            tools: list[Any] = []
            cursor: str | None = None
            while True:
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools

        return await self.request("the tool list", pages)  # type: ignore[no-any-return]

    async def request(self, what: str, send: Callable[[Any], Awaitable[Any]]) -> Any:
        """``send(client)`` on the connected client: connecting bounded by the server's
        ``startTimeout``, the request itself by its ``timeout``; ``McpError`` naming ``what``
        when the server fails."""
        client, holder = await self._started()
        timeout = self.options.timeout
        # A connection that failed under a request is left: the next one starts afresh.
        try:
            return await asyncio.wait_for(self._while_alive(send(client), holder), timeout)
        except asyncio.TimeoutError:
            self._discard()
            raise McpError(self.name, f"no answer for {what} within {timeout:g} s") from None
        except McpError:
            self._discard()
            raise
        except Exception as exc:
            self._discard()
            raise McpError(self.name, f"{what} failed: {_describe(exc)}") from exc

    async def _started(self) -> tuple[Any, asyncio.Task[None]]:
        """:meth:`connected`, within the server's ``startTimeout``; a server that does not
        start in time is stopped."""
        start = self.options.start_timeout
        try:
            return await asyncio.wait_for(self.connected(), start)
        except asyncio.TimeoutError:
            task = self._task
            self._discard()
            if task is not None:
                task.cancel()  # leaves the SDK transport, which ends the launched process
            raise McpError(
                self.name,
                f"did not start within {start:g} s (launch and initialize; the limit is "
                f"mcp.{self.name}.startTimeout)",
            ) from None
        except McpError:
            self._discard()
            raise
        except Exception as exc:
            self._discard()
            raise McpError(self.name, f"could not connect: {_describe(exc)}") from exc

    def _discard(self) -> None:
        """Forget the connection; its task leaves the SDK client and ends on its own."""
        if self._closing is not None:
            self._closing.set()
        self._task = None

    async def connected(self) -> tuple[Any, asyncio.Task[None]]:
        """The connected SDK client and the task holding it, connecting first when needed."""
        loop = asyncio.get_running_loop()
        if self._task is not None and (self._task.done() or self._loop is not loop):
            self._task = None  # it died (the next call starts the server again) or is stale
        if self._task is None:
            self._loop = loop
            self._ready = loop.create_future()
            self._closing = asyncio.Event()
            self._task = loop.create_task(self._hold(self._ready, self._closing))
            self._task.add_done_callback(_retrieved)
        ready, task = self._ready, self._task
        assert ready is not None
        await asyncio.wait({ready, task}, return_when=asyncio.FIRST_COMPLETED)
        if ready.done() and not ready.cancelled():
            return ready.result(), task
        raise McpError(self.name, f"could not connect: {_task_failure(task)}")

    async def _while_alive(self, call: Awaitable[Any], task: asyncio.Task[None]) -> Any:
        """``call``'s result, or ``McpError`` as soon as the connection (held by ``task``)
        dies under it."""
        running = asyncio.ensure_future(call)
        try:
            await asyncio.wait({running, task}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            running.cancel()
            raise
        if running.done():
            return running.result()
        running.cancel()
        raise McpError(self.name, f"the server stopped: {_task_failure(task)}")

    async def _hold(self, ready: asyncio.Future[Any], closing: asyncio.Event) -> None:
        """Enter the SDK client, hand it to the callers, and leave it when told to close."""
        from mcp import Client

        # The SDK's own bound on each read; the initialize handshake must fit it too.
        timeout = max(self.options.timeout, self.options.start_timeout)
        async with _Transport(self.spec, self.options) as transport:
            async with Client(transport, read_timeout_seconds=timeout) as client:
                ready.set_result(client)
                await closing.wait()

    async def aclose(self) -> None:
        task, closing = self._task, self._closing
        self._task = None
        if task is None or task.done() or closing is None:
            return
        if self._loop is not asyncio.get_running_loop():
            return  # its loop is gone, and the loop's end cancelled the task with it
        closing.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), _CLOSE_GRACE)
        except asyncio.TimeoutError:
            task.cancel()
        except Exception:
            pass  # a server failing while it shuts down changes nothing for the caller


class _Transport:
    """The SDK transport for an IR server: stdio for ``command``, streamable HTTP for ``url``
    (with the config's headers on an HTTP client that this context owns)."""

    def __init__(self, spec: Mapping[str, Any], options: ServerOptions) -> None:
        self.spec = spec
        self.options = options
        self.http: Any = None

    async def __aenter__(self) -> Any:
        if "url" in self.spec:
            import httpx2  # the SDK's HTTP client
            from mcp.client.streamable_http import streamable_http_client

            options = self.options
            self.http = httpx2.AsyncClient(
                headers=dict(options.headers),
                timeout=httpx2.Timeout(
                    max(options.timeout, options.start_timeout), read=max(options.timeout, 300)
                ),
            )
            return streamable_http_client(str(self.spec["url"]), http_client=self.http)
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=str(self.spec["command"]),
            args=[str(a) for a in self.spec.get("args", ())],
            env={**self.spec.get("env", {}), **self.options.env},
        )
        return stdio_client(params, errlog=_errlog())

    async def __aexit__(self, *exc: object) -> None:
        if self.http is not None:
            await self.http.aclose()


def _errlog() -> Any:
    """Where a launched server's stderr goes: ours, when it is a real file (under pytest's
    capture or in a notebook it is not, and the process needs a file descriptor)."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (AttributeError, OSError, ValueError):
            continue
    return open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process


def _sdk_installed() -> bool:
    return find_spec("mcp") is not None


def _retrieved(task: asyncio.Task[None]) -> None:
    """Mark a connection task's failure as seen: a caller reports it, or nobody needs it."""
    if not task.cancelled():
        task.exception()


def _task_failure(task: asyncio.Task[None]) -> str:
    if task.cancelled():
        return "the connection was closed"
    exc = task.exception()
    return _describe(exc) if exc is not None else "the connection ended"


def _describe(exc: BaseException) -> str:
    """The innermost useful message (the SDK's task groups wrap errors in groups)."""
    while getattr(exc, "exceptions", None):  # an ExceptionGroup (a backport on 3.10)
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _text(result: Any) -> str:
    return "\n".join(b.text for b in result.content if getattr(b, "type", None) == "text")


def _value(result: Any, returns: schema.IRType, types: schema.Types) -> Any:
    """What a tool of the declared ``returns`` type gives back from an MCP ``CallToolResult``.

    A string tool gets the text; a structured one gets the structured content (unwrapped from
    the ``{"result": ...}`` object that servers put around a value that is not an object),
    else the text, which the call path decodes and validates like any tool's JSON text.
    Content that is not text (images, resources) is passed on as its JSON form.
    """
    kind = schema.resolve(returns, types).get("kind")
    structured = result.structured_content
    if kind not in ("string", "literal") and structured is not None:
        if kind != "object" and isinstance(structured, dict) and list(structured) == ["result"]:
            return structured["result"]
        return structured
    if all(getattr(b, "type", None) == "text" for b in result.content):
        text = _text(result)
        if not text and structured is not None:
            return json.dumps(structured, ensure_ascii=False)
        return text
    return [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in result.content]
