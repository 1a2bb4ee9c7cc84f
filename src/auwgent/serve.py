"""``auwgent serve``: every agent of a project over HTTP, as an ASGI application (Starlette).

Install with ``pip install "auwgent[serve]"`` (plus ``[redis]`` or ``[postgres]`` for a
shared store). The endpoints (see ``docs/serve.md`` and ``/openapi.json``):

- ``POST /v1/agents/{agent}/runs`` with ``{input, conversation_id?, context?, config?,
  persona?}``: runs the agent and answers a Server-Sent Events stream, one event per intent
  (event name = intent name, data = its payload as JSON), ``partial`` events for partial
  intents (a text partial carries its ``delta``, a structured one its snapshot), and a last
  ``session`` event with the session. With a ``conversation_id`` the conversation is loaded
  from the store first and saved after, and only one run of it may be in progress across
  every worker sharing the store (a second gets 409): the run holds the conversation's lock (:class:`~auwgent.runtime.leases.Lease`, renewed while it lives) and
  stops, unsaved, with a ``"conflict"`` turn if it loses it.
- ``GET /v1/conversations/{id}``: the stored session.
- ``POST /v1/conversations/{id}/approvals`` with ``{"decisions": {...}}``: resumes a run
  that awaits approval, answering like a run; claimed and journaled as ``agent.resume`` with
  a store does, so no approved call runs twice, even across a worker's crash.
- With ``--durable dbos``: every run is a DBOS workflow on a queue shared by the workers,
  and ``GET /v1/runs/{run}/events`` (``Last-Event-ID``) reads a run's events on from any
  worker (:mod:`auwgent.serve_durable`, ``docs/durable.md``).
- ``GET /healthz`` (liveness), ``GET /readyz`` (readiness: 503 with the reasons when the
  worker's threads or code mode's sandbox workers are stuck) and ``GET /openapi.json``.
- ``?ui=ai-sdk`` / ``?ui=ag-ui`` on the runs and approvals endpoints: the Vercel AI SDK's UI
  message stream or AG-UI events instead, with those clients' request bodies
  (:mod:`auwgent.serve_ui`).

The application's code comes from ``--app module:attr``: a function called with an agent's
name that returns its runtime config (tools, middleware, approver, keys, ...); the same module
may define ``authenticate(request)`` and a ``SERVE`` dict of settings
(:mod:`auwgent.serve_security`). A run keeps going when the client disconnects, and its
session is saved; a response holds a bounded buffer of events for a client that reads
slowly (:mod:`auwgent.serve_stream`, ``--stream-buffer``). Every request has a principal
(tenant, user), and a conversation is only found by the principal that created it; without
authentication the server only binds to a loopback address.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from auwgent._records import replace
from auwgent.compiler import compile_project, render_all, use_color
from auwgent.console import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, display_path
from auwgent.errors import ApprovalError, AuwgentError, ConfigError, ConflictError
from auwgent.project import load_project
from auwgent.runtime.agent import agent_from_ir, check_config_name
from auwgent.runtime.approvals import AWAITING, check_decisions
from auwgent.runtime.leases import CONFLICT, Lease, report_conflict
from auwgent.runtime.parts import INPUT_SCHEMA, InputError, check_input
from auwgent.runtime.readiness import problems
from auwgent.runtime.stores import (
    DEFAULT_SQLITE_PATH,
    SessionStoreError,
    StoredSessionError,
    open_store,
)
from auwgent.serve_answers import error_response, partial_value, unusable_session
from auwgent.serve_security import (
    LOCAL_PRINCIPAL,
    Authenticate,
    Boundary,
    BoundaryError,
    Principal,
    ServeSettings,
    SettingsError,
    authenticator,
    check_client_context,
    check_id,
    check_origin,
    check_values,
    client_settable,
    conversation_key,
    is_loopback,
    memory_scope,
    parse_settings,
)
from auwgent.serve_stream import DEFAULT_STREAM_BUFFER, Encoder, EventBuffer
from auwgent.serve_ui import DIALECTS as UI_DIALECTS
from auwgent.serve_ui import FIELDS as UI_FIELDS
from auwgent.serve_ui import UiRequest, dialect_of, encoder_for, read_request

__all__ = ["ServeError", "build_app", "load_factory"]

log = logging.getLogger("auwgent")

#: The largest request body accepted (bytes); larger ones get 413.
DEFAULT_MAX_BODY = 1024 * 1024
#: Seconds a conversation lock lasts without being renewed (a crashed worker's lock expires);
#: a live run renews it every third of that (``--lock-ttl``).
LOCK_TTL = 120.0
_RUN_FIELDS = ("input", "conversation_id", "context", "config", "persona")
_DECISION_KEYS = ("approved", "reason", "args")


class ServeError(AuwgentError):
    """``auwgent serve`` cannot start as asked (the message says why)."""


def load_factory(spec: str) -> Callable[[str], Mapping[str, Any]]:
    """``module:attr`` → the function giving an agent's runtime config (cwd on the path)."""
    module, attr = _app_module(spec)
    module_name = module.__name__
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ServeError(f"--app: {module_name}.{attr} is not a function of the agent name")
    return factory  # type: ignore[no-any-return]


def _app_module(spec: str) -> tuple[Any, str]:
    """The module ``--app module:attr`` names (imported, cwd on the path), and ``attr``."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ServeError(f"--app: expected module:attr (e.g. app:config), got {spec!r}")
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        return importlib.import_module(module_name), attr
    except Exception as exc:
        raise ServeError(
            f"--app: cannot import {module_name!r}: {type(exc).__name__}: {exc}"
        ) from exc


def load_security(
    spec: str, token: str | None, origins: list[str], hosts: list[str]
) -> tuple[ServeSettings, Authenticate | None]:
    """The ``--app`` module's ``SERVE`` settings (with the flags' origins and hosts added) and
    how requests are authenticated (its ``authenticate`` hook, tokens or a trusted header)."""
    module, _ = _app_module(spec)
    try:
        settings = parse_settings(getattr(module, "SERVE", None))
        settings = replace(
            settings,
            allow_origins=settings.allow_origins
            | {check_origin(o, "--allow-origin") for o in origins},
            allow_hosts=settings.allow_hosts | {h.lower() for h in hosts},
        )
        return settings, authenticator(settings, getattr(module, "authenticate", None), token)
    except SettingsError as exc:
        raise ServeError(str(exc)) from exc


class _Agents:
    """The project's agents, each built once from its IR and the application's config."""

    def __init__(self, docs: Mapping[str, Mapping[str, Any]], factory: Callable[..., Any]) -> None:
        self.docs = docs
        self.factory = factory
        self._agents: dict[str, Any] = {}

    def get(self, name: str) -> Any:
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


#: What the stream's ``session`` event leaves out of the session: the system prompt, and each
#: turn's content: its input, the transcript for the model (``messages``), its intents (the
#: events the stream sends) and its output (the final intent the stream sent).
_SESSION_EVENT_OMITS = frozenset({"system_prompt"})
_TURN_EVENT_OMITS = frozenset({"input", "messages", "intents", "output"})


def session_event(session: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The ``session`` event's data: the session's record of what happened (every turn's id,
    agent, status, error and model calls; the revision, usage and status) without its content,
    which the stream has just carried (the whole session is at ``GET /v1/conversations/{id}``).
    So the event costs neither the answer again nor the conversation's history
    (docs/serve.md)."""
    if session is None:
        return None
    event = {k: v for k, v in session.items() if k not in _SESSION_EVENT_OMITS}
    event["turns"] = [
        {k: v for k, v in turn.items() if k not in _TURN_EVENT_OMITS}
        for turn in session.get("turns") or ()
    ]
    return event


def build_app(
    docs: Mapping[str, Mapping[str, Any]],
    factory: Callable[[str], Mapping[str, Any]],
    store: Any,
    *,
    authenticate: Authenticate | None = None,
    settings: ServeSettings | None = None,
    host: str = "127.0.0.1",
    port: int | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    lock_ttl: float = LOCK_TTL,
    stream_buffer: int = DEFAULT_STREAM_BUFFER,
    durable: Any = None,
) -> Any:
    """The Starlette application serving ``docs`` (agent name → IR document), bound at
    ``host:port`` (its Host check); ``authenticate`` gives each request's principal (``None``:
    the local principal, on a loopback address only); each response holds at most
    ``stream_buffer`` bytes of events for a client that falls behind."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.routing import Route

    _check_bind(host, authenticate)
    settings = settings or ServeSettings()
    server = _Server(docs, factory, store, authenticate, settings, max_body)
    server.lock_ttl = lock_ttl
    server.stream_buffer = stream_buffer
    server.durable = durable  # runs as DBOS workflows (serve_durable.py)
    durable_routes = []
    if durable is not None:
        events = functools.partial(durable.events, server)
        durable_routes = [Route("/v1/runs/{run}/events", _json_errors(events), methods=["GET"])]
    return Starlette(
        routes=[
            *durable_routes,
            Route("/v1/agents/{agent}/runs", _json_errors(server.runs), methods=["POST"]),
            Route(
                "/v1/conversations/{conversation}",
                _json_errors(server.conversation),
                methods=["GET"],
            ),
            Route(
                "/v1/conversations/{conversation}/approvals",
                _json_errors(server.approvals),
                methods=["POST"],
            ),
            Route("/healthz", server.healthz, methods=["GET"]),
            Route("/readyz", server.readyz, methods=["GET"]),
            Route("/openapi.json", _json_errors(server.openapi), methods=["GET"]),
        ],
        middleware=[Middleware(Boundary, settings=settings, host=host, port=port)],
        exception_handlers={HTTPException: _http_error},
        on_shutdown=[server.shutdown],
    )


async def _http_error(request: Any, exc: Any) -> Any:
    """The router's own refusals (no such path, a method it does not take) as JSON errors."""
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http")
    message = f"{request.method} {request.url.path}: {exc.detail}"
    response = error_response(exc.status_code, message, code)
    response.headers.update(exc.headers or {})
    return response


def _check_bind(host: str, authenticate: Authenticate | None) -> None:
    """Refuse to serve a non-loopback address without authentication."""
    if authenticate is None and not is_loopback(host):
        raise ServeError(
            f"serving on {host} needs authentication: a token (--token or AUWGENT_SERVE_TOKEN), "
            "or the --app module's authenticate or SERVE tokens/trusted_header; without it the "
            "server binds to a loopback address only"
        )


def _json_errors(endpoint: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``endpoint``, answering a request refused at the boundary with its JSON error, and a
    failure of the server itself with a JSON 500 (logged with its traceback)."""

    async def answer(request: Any) -> Any:
        try:
            return await endpoint(request)
        except BoundaryError as exc:
            return error_response(exc.status, str(exc), exc.code)
        except Exception as exc:
            log.exception("auwgent serve: %s %s failed", request.method, request.url.path)
            return error_response(500, f"the server failed: {type(exc).__name__}", "internal")

    return answer


class _Server:
    """The endpoints, over one store and the project's agents."""

    def __init__(
        self,
        docs: Mapping[str, Mapping[str, Any]],
        factory: Callable[[str], Mapping[str, Any]],
        store: Any,
        authenticate: Authenticate | None,
        settings: ServeSettings,
        max_body: int,
    ) -> None:
        self.docs = docs
        self.agents = _Agents(docs, factory)
        self.store = store
        self.authenticate = authenticate
        self.settings = settings
        self.max_body = max_body
        self.lock_ttl = LOCK_TTL
        self.stream_buffer = DEFAULT_STREAM_BUFFER
        self.running: set[asyncio.Task[Any]] = set()
        self.durable: Any = None
        self.settable: dict[str, frozenset[str]] = {}

    # -- plumbing ----------------------------------------------------------------------------

    async def principal_of(self, request: Any) -> Principal:
        """Who makes ``request`` (401 when nobody is authenticated)."""
        if self.authenticate is None:
            return LOCAL_PRINCIPAL
        principal = await self.authenticate(request)
        if principal is None:
            raise BoundaryError(401, "unauthorised", "missing or wrong credentials")
        return principal

    async def body_of(self, request: Any, fields: tuple[str, ...]) -> dict[str, Any]:
        """The JSON object of the body, with only ``fields`` (else 400 or 413, naming why)."""
        size = request.headers.get("content-length")
        too_large = f"the request body is larger than {self.max_body} bytes"
        if size is not None and size.isdigit() and int(size) > self.max_body:
            raise BoundaryError(413, "too_large", too_large)
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > self.max_body:
                raise BoundaryError(413, "too_large", too_large)
        try:
            value = json.loads(raw)
        except RecursionError as exc:
            raise BoundaryError(400, "too_deep", "body: nested too deeply") from exc
        except ValueError as exc:
            raise BoundaryError(400, "bad_json", f"the body is not valid JSON: {exc}") from exc
        if not isinstance(value, dict):
            raise BoundaryError(400, "bad_request", "the body must be a JSON object")
        unknown = sorted(set(value) - set(fields))
        if unknown:
            raise BoundaryError(
                400, "bad_request",
                f"unknown fields: {', '.join(unknown)} (valid fields: {', '.join(fields)})",
            )  # fmt: skip
        check_values(value)
        return value

    def run_agent(
        self, name: str, context: Any, principal: Principal, conversation: str | None
    ) -> Any:
        """An agent for one run of ``name``: the client's context under the application's,
        the principal on the run, memory in the principal's scope (422 on a refused key)."""
        try:
            agent = self.agents.get(name)
        except AuwgentError as exc:  # the application's config, not the request
            log.error("auwgent serve: the config of %s: %s", name, exc)
            raise BoundaryError(500, "bad_app_config", f"the config of {name}: {exc}") from exc
        settable = self.settable.get(name)
        if settable is None:
            settable = client_settable(self.docs[name], name, agent.context, self.settings)
            self.settable[name] = settable
        client = check_client_context(context, settable)
        try:
            checked = agent.core.context_schema.check(client, "context")
        except AuwgentError as exc:
            raise BoundaryError(422, "bad_context", str(exc)) from exc
        run = agent.fork({**checked, **agent.context})
        run.use_principal(principal)
        run.use_memory_scope(memory_scope(principal, conversation, self.settings))
        return run

    def stream(self, produce: Callable[[EventBuffer], Any], encoder: Encoder | None = None) -> Any:
        """Run ``produce`` as a task that outlives the response (a client may go away): its
        events go through a bounded buffer (serve_stream), which the response detaches when
        it ends, however it ends; ``encoder`` (a UI stream, serve_ui) encodes them."""
        buffer = EventBuffer(self.stream_buffer, encoder)

        async def body() -> None:
            try:
                await produce(buffer)
            except Exception as exc:  # reported in the stream, never as a traceback
                log.exception("auwgent serve: a run failed")
                buffer.put_event("error", {"message": f"{type(exc).__name__}: {exc}"})
            finally:
                buffer.close()

        task = asyncio.ensure_future(body())
        self.running.add(task)
        task.add_done_callback(self.running.discard)

        headers = {"cache-control": "no-cache", "x-accel-buffering": "no"}
        headers.update(encoder.headers if encoder is not None else {})
        return _event_stream()(buffer, headers)

    async def execute(
        self,
        queue: EventBuffer,
        agent: Any,
        conversation: str | None,
        events: AsyncIterator[Any],
        lease: Lease | None,
        paused: Mapping[str, Any],
    ) -> None:
        """Forward a run's events as SSE, then save its session and release the lock.

        A run that lost its lease is not saved (its turn says ``"conflict"``); a save that
        loses the revision race is reported the same way, in an ``error`` event and the
        returned session. A session paused for approvals keeps the run's ``context`` and
        named ``config`` (``"paused_context"``, ``"paused_config"``) for the resume.
        """
        try:
            async for event in events:
                if event.partial:
                    value = partial_value(event.value)
                    queue.put_partial(
                        {"name": event.name, "value": value, "agent": event.agent_name}
                    )
                else:
                    queue.put_intent(event.name, event.value, event.agent_name)
            final = agent.last_session
            if conversation is not None and final is not None and lease is not None:
                await self.save(queue, conversation, final, lease, paused)
            queue.put_event("session", final, sent=session_event(final))
        finally:
            if lease is not None:
                await lease.release()

    async def save(
        self,
        queue: EventBuffer,
        conversation: str,
        final: Any,
        lease: Lease,
        paused: Mapping[str, Any],
    ) -> None:
        """Save a run's final session unless its lease was lost; a lost revision race is
        reported in the stream and in the session. A session that awaits approval keeps
        ``paused`` (``{"paused_context": ..., "paused_config": ...}``) for its resume."""
        if lease.lost.is_set():  # the conversation is another run's now: never saved
            if final["turns"] and final["turns"][-1].get("status") != CONFLICT:
                report_conflict(final, lease.message())  # lost after the run had ended
                queue.put_event("error", {"message": lease.message()})
            return
        awaiting = final.get("status") == AWAITING
        for key, value in paused.items():
            if awaiting and value is not None:
                final[key] = value
            else:
                final.pop(key, None)
        try:
            await self.store.save(conversation, final)
        except ConflictError as exc:
            report_conflict(final, str(exc))
            queue.put_event("error", {"message": str(exc)})

    async def start(self, conversation: Any, launch: Callable[[Any, Lease | None], Any]) -> Any:
        """Lock and load the conversation, then answer what ``launch(session, lease)`` returns
        (``lease``: this run's hold on the conversation lock, renewed while it runs)."""
        from starlette.responses import StreamingResponse

        lease = None
        if conversation is not None:
            if not isinstance(conversation, str) or not conversation:
                return error_response(
                    400, "conversation_id must be a non-empty string", "bad_request"
                )
            lease = Lease(self.store, conversation, self.lock_ttl)
            if not await lease.acquire():
                return error_response(
                    409, f"conversation {conversation!r} already has a run in progress", "busy"
                )
        try:
            session = None if conversation is None else await self.store.load(conversation)
            response = await launch(session, lease)
        except BaseException:
            if lease is not None:
                await lease.release()
            raise
        if lease is not None and not isinstance(response, StreamingResponse):
            await lease.release()  # refused: no run holds it
        return response

    # -- endpoints ---------------------------------------------------------------------------

    async def runs(self, request: Any) -> Any:
        principal = await self.principal_of(request)
        name = request.path_params["agent"]
        if name not in self.docs:
            known = ", ".join(sorted(self.docs))
            return error_response(404, f"no agent {name!r}; agents: {known}", "no_agent")
        dialect = dialect_of(request.query_params)
        if dialect is not None:
            return await self.ui_run(request, principal, name, dialect)
        return await self.run(principal, name, await self.body_of(request, _RUN_FIELDS))

    async def ui_run(self, request: Any, principal: Principal, name: str, dialect: str) -> Any:
        """A run (or, answering approvals, a resume) asked for by a UI client (serve_ui)."""
        ui = read_request(dialect, await self.body_of(request, UI_FIELDS[dialect]))
        if ui.decisions is not None:
            decisions = _check_decisions(ui.decisions)
            return await self.resume(principal, ui.conversation_id, decisions, (dialect, ui), name)
        body = {"input": ui.input, "conversation_id": ui.conversation_id, "context": ui.context,
                "config": ui.config, "persona": ui.persona}  # fmt: skip
        return await self.run(principal, name, body, (dialect, ui))

    async def run(
        self,
        principal: Principal,
        name: str,
        body: Mapping[str, Any],
        ui: tuple[str, UiRequest] | None = None,
    ) -> Any:
        """Start a run of ``name`` with ``body``, answering its stream (in ``ui``'s dialect)."""
        try:
            text = check_input(body.get("input"), "input")
        except InputError as exc:
            return error_response(400, str(exc), "bad_request")
        conversation = body.get("conversation_id")
        if conversation is not None:
            conversation = check_id(conversation, "conversation_id")
        agent = self.run_agent(name, body.get("context"), principal, conversation)
        try:
            _check_choice(agent, body)
        except AuwgentError as exc:
            return error_response(422, str(exc), "bad_config")
        key = None if conversation is None else conversation_key(principal, conversation)
        if self.durable is not None:
            job = {"agent": name, "input": text, "key": key, "conversation": conversation,
                   "principal": principal, **{f: body.get(f) for f in _RUN_FIELDS[2:]}}  # fmt: skip
            return await _guarded(self.durable.start, self, job)

        async def launch(session: Any, lease: Lease | None) -> Any:
            if session is not None and session.get("agent") != name:
                return unusable_session(conversation, session, f"not {name!r}")
            events = agent.stream(
                text,
                session=session,
                config=body.get("config"),
                persona=body.get("persona"),
                lease=lease,
            )
            paused = {"paused_context": body.get("context"), "paused_config": body.get("config")}
            encoder = _encoder(ui, session)
            return self.stream(lambda q: self.execute(q, agent, key, events, lease, paused),
                               encoder)  # fmt: skip

        return await _guarded(self.start, key, launch)

    async def approvals(self, request: Any) -> Any:
        principal = await self.principal_of(request)
        conversation = check_id(request.path_params["conversation"], "conversation")
        dialect = dialect_of(request.query_params)
        body = await self.body_of(request, ("decisions",))
        decisions = _check_decisions(body.get("decisions"))
        ui = None if dialect is None else (dialect, UiRequest(conversation))
        return await self.resume(principal, conversation, decisions, ui)

    async def resume(
        self,
        principal: Principal,
        conversation: str,
        decisions: dict[str, Any],
        ui: tuple[str, UiRequest] | None,
        agent_name: str | None = None,
    ) -> Any:
        """Resume ``conversation`` with ``decisions`` (of the agent ``agent_name``, when the
        request named one), answering the resumed run's stream."""
        key = conversation_key(principal, conversation)
        if self.durable is not None:  # the paused run waits for them as a DBOS message
            return await _guarded(functools.partial(self.durable.approve, self), key, decisions)

        async def launch(session: Any, lease: Lease | None) -> Any:
            if session is None:
                return error_response(404, f"no conversation {conversation!r}", "not_found")
            name = session.get("agent")
            if name not in self.docs:
                return unusable_session(conversation, session, "not served here")
            if agent_name is not None and name != agent_name:
                return unusable_session(conversation, session, f"not {agent_name!r}")
            try:
                check_decisions(session, decisions, claimed=True)  # refused before the claim
            except ApprovalError as exc:  # nothing pending (409), or decisions that do not fit
                status = 400 if session.get("status") == AWAITING else 409
                return error_response(status, str(exc).removeprefix("resume: "), "bad_decisions")
            # The run's context and config were kept with the pause: the resume needs none
            # from the client.
            paused = {k: session.get(k) for k in ("paused_context", "paused_config")}
            agent = self.run_agent(name, paused["paused_context"], principal, conversation)
            events = agent.resume_stream(
                session, decisions, config=paused["paused_config"], conversation_id=key,
                store=self.store, lease=lease,
            )  # fmt: skip
            encoder = _encoder(ui, session, resuming=True)
            return self.stream(lambda q: self.execute(q, agent, key, events, lease, paused),
                               encoder)  # fmt: skip

        return await _guarded(self.start, key, launch)

    async def conversation(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        principal = await self.principal_of(request)
        conversation = check_id(request.path_params["conversation"], "conversation")
        try:
            session = await self.store.load(conversation_key(principal, conversation))
        except SessionStoreError as exc:
            status = 409 if isinstance(exc, StoredSessionError) else 503
            return error_response(status, str(exc), "store")
        if session is None:
            return error_response(404, f"no conversation {conversation!r}", "not_found")
        return JSONResponse(session)

    async def healthz(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        return JSONResponse({"status": "ok", "agents": sorted(self.docs)})

    async def readyz(self, request: Any) -> Any:
        """200 when this worker can take runs; 503 naming what keeps it from them."""
        from starlette.responses import JSONResponse

        found = await problems()
        if found:
            return JSONResponse({"status": "unavailable", "reasons": found}, status_code=503)
        return JSONResponse({"status": "ready"})

    async def openapi(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        await self.principal_of(request)
        return JSONResponse(openapi_document(sorted(self.docs)))

    async def shutdown(self) -> None:
        """Graceful: runs in progress finish (and save) before the process goes."""
        if self.running:
            await asyncio.wait(list(self.running), timeout=60)
        await self.agents.aclose()
        if self.durable is not None:
            await self.durable.aclose()
        closing = getattr(self.store, "aclose", None)
        if closing is not None:
            await closing()


@functools.cache
def _event_stream() -> Any:
    """The response class of a run's events (made once, when serve first answers one)."""
    from starlette.responses import StreamingResponse

    class EventStream(StreamingResponse):
        """An SSE response from an :class:`EventBuffer`, which it detaches when it ends
        (the client has every event, or is gone: either way nothing more is kept)."""

        def __init__(self, buffer: EventBuffer, headers: Mapping[str, str]) -> None:
            super().__init__(buffer.events(), media_type="text/event-stream", headers=headers)
            self.buffer = buffer

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            try:
                await super().__call__(scope, receive, send)
            finally:
                self.buffer.detach()

    return EventStream


def _encoder(
    ui: tuple[str, UiRequest] | None, session: Any, *, resuming: bool = False
) -> Encoder | None:
    """The encoder of a UI client's stream (``None``: serve's own events)."""
    if ui is None:
        return None
    dialect, request = ui
    return encoder_for(dialect, session, request.conversation_id, request.run_id,
                       resuming=resuming)  # fmt: skip


async def _guarded(start: Callable[..., Any], conversation: Any, launch: Any) -> Any:
    """Turn the expected failures of starting a run into JSON errors."""
    try:
        return await start(conversation, launch)
    except StoredSessionError as exc:
        return error_response(409, str(exc), "unusable_session")
    except ConflictError as exc:
        return error_response(409, str(exc), "conflict")
    except SessionStoreError as exc:
        return error_response(503, str(exc), "store")
    except AuwgentError as exc:
        return error_response(422, str(exc), "bad_request")


def _check_decisions(decisions: Any) -> dict[str, Any]:
    """The approvals body's ``decisions``: request id → true, false or ``{approved, reason,
    args}`` (400 naming the first wrong one)."""
    if not isinstance(decisions, dict) or not decisions:
        raise BoundaryError(
            400, "bad_request", "decisions: expected an object of request id → decision"
        )
    for key, value in decisions.items():
        where = f"decisions.{key}"
        if isinstance(value, bool):
            continue
        if not isinstance(value, dict):
            raise BoundaryError(
                400, "bad_request",
                f'{where}: expected true, false or {{"approved": bool, "reason"?: str, '
                f'"args"?: {{...}}}}, got {json.dumps(value)}',
            )  # fmt: skip
        unknown = sorted(set(value) - set(_DECISION_KEYS))
        problem = (
            f"unknown fields: {', '.join(unknown)}" if unknown
            else "approved: expected true or false" if not isinstance(value.get("approved"), bool)
            else "reason: expected a string" if not isinstance(value.get("reason", ""), str)
            else "args: expected an object" if not isinstance(value.get("args", {}), dict)
            else None
        )  # fmt: skip
        if problem is not None:
            raise BoundaryError(400, "bad_request", f"{where}.{problem}")
    return decisions


def _check_choice(agent: Any, body: Mapping[str, Any]) -> None:
    """Refuse an unknown named config or persona before anything runs."""
    if body.get("config") is not None:
        check_config_name(agent.core.doc, body["config"], "config")
    if body.get("persona") is not None:
        agent.core.check_persona(body["persona"], "persona")


def openapi_document(agents: list[str]) -> dict[str, Any]:
    """The OpenAPI 3.1 description of the server."""
    error = {"$ref": "#/components/schemas/Error"}
    sse = {"text/event-stream": {"schema": {"type": "string"}}}
    json_error = {"application/json": {"schema": error}}
    ui = {
        "name": "ui",
        "in": "query",
        "required": False,
        "description": "answer a UI stream instead of serve's own events: the Vercel AI SDK's "
        "UI message stream (the body is DefaultChatTransport's) or AG-UI events (the body is "
        "RunAgentInput); docs/ui-stream.md",
        "schema": {"type": "string", "enum": list(UI_DIALECTS)},
    }
    responses_run = {
        "200": {
            "description": "one SSE event per intent, then `session` (or, for a client that "
            "reads too slowly, a last `error` event with code `slow_client`); with `ui`, that "
            "dialect's stream",
            "content": sse,
        },
        "400": {"description": "bad request (the message names the field)", "content": json_error},
        "401": {"description": "missing or wrong credentials", "content": json_error},
        "403": {"description": "an Origin that is not allowed", "content": json_error},
        "404": {"description": "unknown agent or conversation", "content": json_error},
        "409": {"description": "the conversation is busy or unusable", "content": json_error},
        "413": {"description": "request body too large", "content": json_error},
        "415": {"description": "a body that is not application/json", "content": json_error},
        "421": {"description": "a Host that is not this server's", "content": json_error},
        "422": {
            "description": "invalid context (or a key a client may not set), config or persona",
            "content": json_error,
        },
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
                        "input": INPUT_SCHEMA,
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
                        ui,
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
                        },
                        ui,
                    ],  # fmt: skip
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["decisions"],
                                    "additionalProperties": False,
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
            "/readyz": {
                "get": {
                    "summary": "Readiness: whether this worker can take runs now",
                    "security": [],
                    "responses": {
                        "200": {"description": "ready"},
                        "503": {"description": "not ready; `reasons` says why"},
                    },
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
    allow_origins: list[str] | None = None,
    allow_hosts: list[str] | None = None,
    lock_ttl: float = LOCK_TTL,
    stream_buffer: int = DEFAULT_STREAM_BUFFER,
    durable: Mapping[str, Any] | None = None,
) -> int:
    """``auwgent serve``: compile the project, build the app, run uvicorn until stopped.

    ``durable``: ``{"engine": "dbos", "url", "concurrency", "worker_ttl"}`` runs every run as
    a DBOS workflow (docs/durable.md)."""

    token = token or os.environ.get("AUWGENT_SERVE_TOKEN") or None
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
        settings, authenticate = load_security(app, token, allow_origins or [], allow_hosts or [])
        _check_bind(host, authenticate)
        store = open_store(store_url or f"sqlite:///{DEFAULT_SQLITE_PATH}")
    except (ConfigError, ServeError, SessionStoreError) as exc:
        print(f"error: {exc}", file=err)
        return EXIT_USAGE
    result = compile_project(project.files, project.source_root, display=display_path)
    if not result.ok:
        print(render_all(result.diagnostics, color=use_color(err)), file=err)
        return EXIT_ERRORS
    docs = {doc["root"]: doc for doc in result.documents.values()}
    runs = None
    if durable is not None:
        try:
            runs = _durable_runs(durable, docs, factory, store_url, settings)
        except (ConfigError, ServeError) as exc:
            print(f"error: {exc}", file=err)
            return EXIT_USAGE
    application = build_app(
        docs,
        factory,
        store,
        authenticate=authenticate,
        settings=settings,
        host=host,
        port=port,
        lock_ttl=lock_ttl,
        stream_buffer=stream_buffer,
        durable=runs,
    )
    print(f"auwgent serve: {', '.join(sorted(docs))} on http://{host}:{port}", file=out)
    out.flush()
    uvicorn.run(
        application, host=host, port=port, log_level="warning", timeout_graceful_shutdown=60
    )
    return EXIT_OK


def _durable_runs(
    durable: Mapping[str, Any],
    docs: Mapping[str, Mapping[str, Any]],
    factory: Callable[[str], Mapping[str, Any]],
    store_url: str | None,
    settings: ServeSettings,
) -> Any:
    """``--durable dbos``: the DBOS side of this worker, launched (its queues and heartbeat).

    The workflows run in DBOS's own event loop, with their own agents (the application's
    config with ``"durable": "dbos"``) and their own connection to the session store."""
    from auwgent.runtime.stores import DEFAULT_SQLITE_PATH, open_store

    url = durable.get("url")
    if not url or not str(url).startswith(("postgresql://", "postgres://")):
        raise ServeError(
            "--durable dbos needs a PostgreSQL URL: --durable-url, AUWGENT_DURABLE_URL, or a "
            "postgresql:// --store"
        )
    try:
        from auwgent.serve_durable import DurableRuns
    except ImportError as exc:
        raise ServeError(
            f'--durable dbos needs the dbos and postgres extras: pip install "auwgent[dbos]" '
            f"({exc})"
        ) from exc
    store = store_url or f"sqlite:///{DEFAULT_SQLITE_PATH}"

    def durable_factory(name: str) -> Mapping[str, Any]:
        return {**factory(name), "durable": "dbos"}

    def worker_server() -> _Server:
        return _Server(docs, durable_factory, open_store(store), None, settings, DEFAULT_MAX_BODY)

    runs = DurableRuns(
        str(url),
        docs,
        worker_server,
        concurrency=int(durable["concurrency"]),
        worker_ttl=float(durable["worker_ttl"]),
    )
    runs.launch()
    return runs
