"""``auwgent serve``: every agent of a project over HTTP, as an ASGI application (Starlette).

Install with ``pip install "auwgent[serve]"`` (plus ``[redis]`` or ``[postgres]`` for a
shared store). The endpoints (see ``docs/serve.md`` and ``/openapi.json``):

- ``POST /v1/agents/{agent}/runs`` with ``{input, conversation_id?, context?, config?,
  persona?}``: runs the agent and answers a Server-Sent Events stream, one event per intent
  (event name = intent name, data = its payload as JSON), ``partial`` events for partial
  intents (a text partial carries its ``delta``, a structured one its snapshot), and a last ``session`` event with the session. With a ``conversation_id`` the
  conversation is loaded from the store first and saved after, and only one run of it may be
  in progress across every worker sharing the store (a second gets 409).
- ``GET /v1/conversations/{id}``: the stored session.
- ``POST /v1/conversations/{id}/approvals`` with ``{"decisions": {...}}``: resumes a run
  that awaits approval, answering like a run.
- ``GET /healthz`` and ``GET /openapi.json``.

The application's code comes from ``--app module:attr``: a function called with an agent's
name that returns its runtime config (tools, middleware, approver, keys, ...). A run keeps
going when the client disconnects, and its session is saved. Requests need ``Authorization:
Bearer <token>`` when a token is set; without one the server only binds to 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from auwgent.errors import AuwgentError, ConfigError, ConflictError
from auwgent.runtime.stores import SessionStoreError, StoredSessionError

__all__ = ["ServeError", "build_app", "load_factory"]

log = logging.getLogger("auwgent")

#: The largest request body accepted (bytes); larger ones get 413.
DEFAULT_MAX_BODY = 1024 * 1024
#: Seconds a conversation lock lasts without being renewed (a crashed worker's lock expires).
LOCK_TTL = 120.0
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class ServeError(AuwgentError):
    """``auwgent serve`` cannot start as asked (the message says why)."""


def load_factory(spec: str) -> Callable[[str], Mapping[str, Any]]:
    """``module:attr`` → the function giving an agent's runtime config (cwd on the path)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ServeError(f"--app: expected module:attr (e.g. app:config), got {spec!r}")
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise ServeError(
            f"--app: cannot import {module_name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ServeError(f"--app: {module_name}.{attr} is not a function of the agent name")
    return factory  # type: ignore[no-any-return]


class _Agents:
    """The project's agents, each built once from its IR and the application's config."""

    def __init__(self, docs: Mapping[str, Mapping[str, Any]], factory: Callable[..., Any]) -> None:
        self.docs = docs
        self.factory = factory
        self._agents: dict[str, Any] = {}

    def get(self, name: str) -> Any:
        from auwgent.runtime.agent import agent_from_ir

        agent = self._agents.get(name)
        if agent is None:
            doc = self.docs[name]
            config = self.factory(name)
            if not isinstance(config, Mapping):
                raise ConfigError(f"--app: the config for {name} must be a dict, got {config!r}")
            agent = self._agents[name] = agent_from_ir(doc, config)
        return agent

    async def aclose(self) -> None:
        for agent in self._agents.values():
            await agent.aclose()


def _error(status: int, message: str, code: str) -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


_PARTIAL_KEYS = {
    "text": ("partial", "complete", "mode", "segment", "delta"),
    "structured": ("partial", "complete", "mode", "segment", "snapshot"),
}


def _partial_value(value: Mapping[str, Any]) -> dict[str, Any]:
    """A partial as the stream sends it: a text partial carries only its ``delta`` (the client
    adds the deltas up), a structured one its snapshot; neither carries ``raw``. So a partial
    costs what is new, never the text so far again (docs/serve.md)."""
    keys = _PARTIAL_KEYS["text" if value.get("mode") == "text" else "structured"]
    return {key: value[key] for key in keys if key in value}


def _sse(name: str, data: Any) -> bytes:
    text = json.dumps(data, ensure_ascii=False, default=str)
    return f"event: {name}\ndata: {text}\n\n".encode()


def build_app(
    docs: Mapping[str, Mapping[str, Any]],
    factory: Callable[[str], Mapping[str, Any]],
    store: Any,
    *,
    token: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
) -> Any:
    """The Starlette application serving ``docs`` (agent name → IR document)."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    server = _Server(docs, factory, store, token, max_body)
    return Starlette(
        routes=[
            Route("/v1/agents/{agent}/runs", server.runs, methods=["POST"]),
            Route("/v1/conversations/{conversation}", server.conversation, methods=["GET"]),
            Route("/v1/conversations/{conversation}/approvals", server.approvals, methods=["POST"]),
            Route("/healthz", server.healthz, methods=["GET"]),
            Route("/openapi.json", server.openapi, methods=["GET"]),
        ],
        on_shutdown=[server.shutdown],
    )


class _Server:
    """The endpoints, over one store and the project's agents."""

    def __init__(
        self,
        docs: Mapping[str, Mapping[str, Any]],
        factory: Callable[[str], Mapping[str, Any]],
        store: Any,
        token: str | None,
        max_body: int,
    ) -> None:
        self.docs = docs
        self.agents = _Agents(docs, factory)
        self.store = store
        self.token = token
        self.max_body = max_body
        self.running: set[asyncio.Task[Any]] = set()

    # -- plumbing ----------------------------------------------------------------------------

    def authorised(self, request: Any) -> bool:
        expected = f"Bearer {self.token}"
        return self.token is None or request.headers.get("authorization") == expected

    async def body_of(self, request: Any) -> Any:
        """The JSON object of the body, or an error response (400, 413)."""
        size = request.headers.get("content-length")
        too_large = f"the request body is larger than {self.max_body} bytes"
        if size is not None and size.isdigit() and int(size) > self.max_body:
            return _error(413, too_large, "too_large")
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > self.max_body:
                return _error(413, too_large, "too_large")
        try:
            value = json.loads(raw or b"{}")
        except ValueError as exc:
            return _error(400, f"the body is not valid JSON: {exc}", "bad_json")
        if not isinstance(value, dict):
            return _error(400, "the body must be a JSON object", "bad_request")
        return value

    def stream(self, produce: Callable[[asyncio.Queue[bytes | None]], Any]) -> Any:
        """Run ``produce`` as a task that outlives the response (a client may go away)."""
        from starlette.responses import StreamingResponse

        queue: asyncio.Queue[bytes | None] = asyncio.Queue()

        async def body() -> None:
            try:
                await produce(queue)
            except Exception as exc:  # reported in the stream, never as a traceback
                log.exception("auwgent serve: a run failed")
                queue.put_nowait(_sse("error", {"message": f"{type(exc).__name__}: {exc}"}))
            finally:
                queue.put_nowait(None)

        task = asyncio.ensure_future(body())
        self.running.add(task)
        task.add_done_callback(self.running.discard)

        async def events() -> AsyncIterator[bytes]:
            while True:
                item = await queue.get()
                if item is None:
                    return
                yield item

        headers = {"cache-control": "no-cache", "x-accel-buffering": "no"}
        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)

    async def execute(
        self,
        queue: asyncio.Queue[bytes | None],
        agent: Any,
        conversation: str | None,
        events: AsyncIterator[Any],
        owner: str,
    ) -> None:
        """Forward a run's events as SSE, then save its session and release the lock."""
        try:
            async for event in events:
                if event.partial:
                    value = _partial_value(event.value)
                    data = {"name": event.name, "value": value, "agent": event.agent_name}
                    queue.put_nowait(_sse("partial", data))
                else:
                    queue.put_nowait(_sse(event.name, event.value))
            final = agent.last_session
            if conversation is not None and final is not None:
                await self.store.save(conversation, final)
            queue.put_nowait(_sse("session", final))
        finally:
            if conversation is not None:
                await self.store.unlock(conversation, owner)

    async def start(self, conversation: Any, launch: Callable[[Any, str], Any]) -> Any:
        """Lock and load the conversation, then answer what ``launch(session, owner)`` returns
        (``owner``: this run's name on the conversation lock)."""
        from starlette.responses import StreamingResponse

        owner = uuid.uuid4().hex
        if conversation is not None:
            if not isinstance(conversation, str) or not conversation:
                return _error(400, "conversation_id must be a non-empty string", "bad_request")
            if not await self.store.lock(conversation, owner, LOCK_TTL):
                return _error(
                    409, f"conversation {conversation!r} already has a run in progress", "busy"
                )
        try:
            session = None if conversation is None else await self.store.load(conversation)
            response = await launch(session, owner)
        except BaseException:
            if conversation is not None:
                await self.store.unlock(conversation, owner)
            raise
        if conversation is not None and not isinstance(response, StreamingResponse):
            await self.store.unlock(conversation, owner)  # refused: no run holds it
        return response

    # -- endpoints ---------------------------------------------------------------------------

    async def runs(self, request: Any) -> Any:
        if not self.authorised(request):
            return _error(401, "missing or wrong bearer token", "unauthorised")
        name = request.path_params["agent"]
        if name not in self.docs:
            known = ", ".join(sorted(self.docs))
            return _error(404, f"no agent {name!r}; agents: {known}", "no_agent")
        body = await self.body_of(request)
        if not isinstance(body, dict):
            return body
        unknown = sorted(set(body) - {"input", "conversation_id", "context", "config", "persona"})
        if unknown:
            return _error(400, f"unknown fields: {', '.join(unknown)}", "bad_request")
        text = body.get("input")
        if not isinstance(text, str):
            return _error(400, "input must be a string", "bad_request")
        try:
            agent = _per_run_agent(self.agents.get(name), body.get("context"))
            _check_choice(agent, body)
        except AuwgentError as exc:
            return _error(422, str(exc), "bad_config")
        conversation = body.get("conversation_id")

        async def launch(session: Any, owner: str) -> Any:
            events = agent.stream(
                text, session=session, config=body.get("config"), persona=body.get("persona")
            )
            return self.stream(lambda q: self.execute(q, agent, conversation, events, owner))

        return await _guarded(self.start, conversation, launch)

    async def approvals(self, request: Any) -> Any:
        if not self.authorised(request):
            return _error(401, "missing or wrong bearer token", "unauthorised")
        body = await self.body_of(request)
        if not isinstance(body, dict):
            return body
        decisions = body.get("decisions")
        if not isinstance(decisions, dict):
            return _error(
                400, "decisions must be an object of request id → decision", "bad_request"
            )
        conversation = request.path_params["conversation"]

        async def launch(session: Any, owner: str) -> Any:
            if session is None:
                return _error(404, f"no conversation {conversation!r}", "not_found")
            agent = self.agents.get(session.get("agent", ""))
            resume = getattr(agent, "resume_stream", None)
            if resume is None:
                return _error(501, "this runtime cannot resume approvals", "unsupported")
            events = resume(session, decisions)
            return self.stream(lambda q: self.execute(q, agent, conversation, events, owner))

        return await _guarded(self.start, conversation, launch)

    async def conversation(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        if not self.authorised(request):
            return _error(401, "missing or wrong bearer token", "unauthorised")
        key = request.path_params["conversation"]
        try:
            session = await self.store.load(key)
        except SessionStoreError as exc:
            status = 409 if isinstance(exc, StoredSessionError) else 503
            return _error(status, str(exc), "store")
        if session is None:
            return _error(404, f"no conversation {key!r}", "not_found")
        return JSONResponse(session)

    async def healthz(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        return JSONResponse({"status": "ok", "agents": sorted(self.docs)})

    async def openapi(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        return JSONResponse(openapi_document(sorted(self.docs)))

    async def shutdown(self) -> None:
        """Graceful: runs in progress finish (and save) before the process goes."""
        if self.running:
            await asyncio.wait(list(self.running), timeout=60)
        await self.agents.aclose()
        closing = getattr(self.store, "aclose", None)
        if closing is not None:
            await closing()


async def _guarded(start: Callable[..., Any], conversation: Any, launch: Any) -> Any:
    """Turn the expected failures of starting a run into JSON errors."""
    try:
        return await start(conversation, launch)
    except StoredSessionError as exc:
        return _error(409, str(exc), "unusable_session")
    except ConflictError as exc:
        return _error(409, str(exc), "conflict")
    except SessionStoreError as exc:
        return _error(503, str(exc), "store")
    except AuwgentError as exc:
        return _error(422, str(exc), "bad_request")


def _per_run_agent(agent: Any, context: Any) -> Any:
    """An agent sharing ``agent``'s compiled core, with this request's context merged in."""
    if context is None:
        return type(agent)(agent._core, dict(agent.context), agent._config)
    if not isinstance(context, dict):
        raise ConfigError("context: expected an object")
    checked = agent._core.context_schema.check(context, "context")
    return type(agent)(agent._core, {**agent.context, **checked}, agent._config)


def _check_choice(agent: Any, body: Mapping[str, Any]) -> None:
    """Refuse an unknown named config or persona before anything runs."""
    from auwgent.runtime.agent import _check_config_name

    if body.get("config") is not None:
        _check_config_name(agent._core.doc, body["config"], "config")
    if body.get("persona") is not None:
        agent._core.check_persona(body["persona"], "persona")


def openapi_document(agents: list[str]) -> dict[str, Any]:
    """The OpenAPI 3.1 description of the server."""
    error = {"$ref": "#/components/schemas/Error"}
    sse = {"text/event-stream": {"schema": {"type": "string"}}}
    json_error = {"application/json": {"schema": error}}
    responses_run = {
        "200": {"description": "one SSE event per intent, then `session`", "content": sse},
        "400": {"description": "bad request", "content": json_error},
        "401": {"description": "missing or wrong bearer token", "content": json_error},
        "404": {"description": "unknown agent or conversation", "content": json_error},
        "409": {"description": "the conversation is busy or unusable", "content": json_error},
        "413": {"description": "request body too large", "content": json_error},
        "422": {"description": "invalid context, config or persona", "content": json_error},
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "auwgent serve", "version": "1"},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {
                        "error": {
                            "type": "object",
                            "required": ["code", "message"],
                            "properties": {
                                "code": {"type": "string"},
                                "message": {"type": "string"},
                            },
                        }
                    },
                },
                "RunRequest": {
                    "type": "object",
                    "required": ["input"],
                    "additionalProperties": False,
                    "properties": {
                        "input": {"type": "string"},
                        "conversation_id": {"type": "string", "minLength": 1},
                        "context": {"type": "object"},
                        "config": {"type": "string"},
                        "persona": {"type": "string"},
                    },
                },
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/v1/agents/{agent}/runs": {
                "post": {
                    "summary": "Run an agent; stream its intents",
                    "parameters": [
                        {
                            "name": "agent",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string", "enum": agents},
                        },
                    ],  # fmt: skip
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/RunRequest"}
                            }
                        },
                    },  # fmt: skip
                    "responses": responses_run,
                }
            },
            "/v1/conversations/{conversation}": {
                "get": {
                    "summary": "The stored session of a conversation",
                    "parameters": [
                        {
                            "name": "conversation",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],  # fmt: skip
                    "responses": {
                        "200": {
                            "description": "the session",
                            "content": {"application/json": {"schema": {"type": "object"}}},
                        },
                        "404": {"description": "no such conversation", "content": json_error},
                    },  # fmt: skip
                }
            },
            "/v1/conversations/{conversation}/approvals": {
                "post": {
                    "summary": "Decide pending approvals and resume the run",
                    "parameters": [
                        {
                            "name": "conversation",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],  # fmt: skip
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["decisions"],
                                    "properties": {"decisions": {"type": "object"}},
                                }
                            }
                        },
                    },  # fmt: skip
                    "responses": responses_run,
                }
            },
            "/healthz": {
                "get": {
                    "summary": "Liveness",
                    "security": [],
                    "responses": {"200": {"description": "ok"}},
                }
            },  # fmt: skip
        },
    }


def serve_command(
    path: Path,
    *,
    app: str,
    host: str,
    port: int,
    token: str | None,
    store_url: str | None,
    out: Any,
    err: Any,
) -> int:
    """``auwgent serve``: compile the project, build the app, run uvicorn until stopped."""
    import os

    from auwgent.compiler.diagnostics import render_all, use_color
    from auwgent.compiler.pipeline import compile_project
    from auwgent.console import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, display_path
    from auwgent.project import load_project
    from auwgent.runtime.stores import DEFAULT_SQLITE_PATH, open_store

    token = token or os.environ.get("AUWGENT_SERVE_TOKEN") or None
    if token is None and host not in _LOOPBACK:
        print(
            f"error: serving on {host} needs a token (--token or AUWGENT_SERVE_TOKEN); "
            "without one the server binds to 127.0.0.1 only",
            file=err,
        )
        return EXIT_USAGE
    try:
        import starlette  # noqa: F401
        import uvicorn
    except ImportError:
        print('error: auwgent serve needs the serve extra: pip install "auwgent[serve]"',
              file=err)  # fmt: skip
        return EXIT_USAGE
    try:
        project = load_project(path)
        factory = load_factory(app)
        store = open_store(store_url or f"sqlite:///{DEFAULT_SQLITE_PATH}")
    except (ConfigError, ServeError, SessionStoreError) as exc:
        print(f"error: {exc}", file=err)
        return EXIT_USAGE
    result = compile_project(project.files, project.source_root, display=display_path)
    if not result.ok:
        print(render_all(result.diagnostics, color=use_color(err)), file=err)
        return EXIT_ERRORS
    docs = {doc["root"]: doc for doc in result.documents.values()}
    application = build_app(docs, factory, store, token=token)
    print(f"auwgent serve: {', '.join(sorted(docs))} on http://{host}:{port}", file=out)
    out.flush()
    uvicorn.run(
        application, host=host, port=port, log_level="warning", timeout_graceful_shutdown=60
    )
    return EXIT_OK
