"""The dev server: ``auwgent serve``'s app for the project as last compiled, plus the console.

:class:`DevServer` holds the project as the watcher last compiled it and answers HTTP as one
ASGI application:

- ``/v1/...``, ``/healthz``, ``/readyz``, ``/openapi.json``: the serve app
  (:func:`auwgent.serve.build_app`) of the current compile, rebuilt after each successful
  one; the console runs agents, reads conversations and decides approvals through it, as any
  client would;
- ``/`` and ``/assets/...``: the console (built files in ``auwgent/dev/static``);
- ``/dev/api/...``: what only the console needs: the project (agents, their configs and
  context, how each is run, the compile's diagnostics), the stored sessions, a turn's trace
  and model requests (:mod:`auwgent.dev.recorder`), and the project's ``test`` blocks.

It only serves a loopback address, and every request passes serve's boundary checks (Host,
Origin, JSON bodies), the console's own origin being the one origin allowed.
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from auwgent.compiler import compile_project, render_all
from auwgent.console import display_path
from auwgent.dev.recorder import (
    CapturingProvider,
    Recorder,
    TurnMarker,
    http_client,
    tracer_provider,
)
from auwgent.errors import ConfigError
from auwgent.project import load_project
from auwgent.runtime.config import resolve_api_keys
from auwgent.runtime.providers.offline import OfflineModel
from auwgent.runtime.stores import MemorySessionStore
from auwgent.serve_security import LOCAL_PRINCIPAL, Boundary, ServeSettings, conversation_key
from auwgent.testing.dsl import project_tests, run_tests

__all__ = ["STATIC", "DevServer", "agent_summary"]

#: The console's built files (index.html, console.js, console.css), shipped in the wheel.
STATIC = Path(__file__).parent / "static"
_SERVE_PATHS = ("/v1/", "/healthz", "/readyz", "/openapi.json")
_TESTS_FIELDS = ("pattern",)


class DevServer:
    """The dev server's state (the current compile, its serve app, the records) and its ASGI
    application (``await server(scope, receive, send)``)."""

    def __init__(
        self,
        root: Path,
        factory: Callable[[str], Mapping[str, Any]] | None,
        *,
        host: str,
        port: int,
        offline: bool = False,
    ) -> None:
        self.root = root
        self.factory = factory
        self.host = host
        self.port = port
        self.offline = offline
        self.store = MemorySessionStore()
        self.recorder = Recorder()
        self.tracer = tracer_provider(self.recorder)
        self.version = 0
        self.docs: dict[str, Mapping[str, Any]] = {}
        self.problems: list[str] = []
        self._lock = threading.Lock()
        self._serve: Any = None
        self._retired: list[Any] = []  # the serve apps of earlier compiles
        self._agents: tuple[int, list[dict[str, Any]]] | None = None  # (version, summaries)
        self.settings = ServeSettings(
            allow_origins=frozenset({f"http://127.0.0.1:{port}", f"http://localhost:{port}"})
        )
        self._console = self._console_app()

    # -- the project ------------------------------------------------------------------------

    def compiled(self, docs: Mapping[str, Mapping[str, Any]] | None, problems: list[str]) -> None:
        """A new compile: ``docs`` (agent name → IR) when it succeeded, ``problems`` (the
        rendered diagnostics) either way. A failed compile keeps the agents of the last good
        one, and the console shows its problems."""
        from auwgent.serve import build_app

        with self._lock:
            self.version += 1
            self.problems = problems
            if docs is None:
                return
            self.docs = dict(docs)
            declared = {f["name"] for d in docs.values() for a in d["agents"].values()
                        for f in a["context"]}  # fmt: skip
            # The developer is the one client: every declared context key is theirs to set
            # (a key the --app config sets keeps the config's value, as in serve).
            settings = ServeSettings(
                allow_origins=self.settings.allow_origins,
                client_context={"*": frozenset(declared)},
            )
            if self._serve is not None:  # its runs may still be going: closed at shutdown
                self._retired.append(self._serve)
            self._serve = build_app(
                self.docs, functools.partial(self.config_for, self.docs), self.store,
                settings=settings, host=self.host, port=self.port,
            )  # fmt: skip

    def config_for(self, docs: Mapping[str, Mapping[str, Any]], name: str) -> Mapping[str, Any]:
        """The runtime config of agent ``name`` of ``docs`` (the compile whose serve app asks):
        the ``--app`` config, run on the offline model unless its models can be reached, with
        the dev server's records attached and gated calls deferred to the console's approvals
        inbox (unless the app decides them)."""
        base = dict(self.factory(name)) if self.factory is not None else {}
        config = dict(base)
        mode, _ = self.mode_of(docs[name], base)
        if mode == "offline":
            config["provider"] = CapturingProvider(OfflineModel(), self.recorder)
        elif mode == "live" and "httpClient" not in base:
            config["httpClient"] = http_client(self.recorder)
        if self.tracer is not None and not base.get("tracing") and "tracerProvider" not in base:
            config["tracerProvider"] = self.tracer
        middleware = base.get("middleware") or []
        config["middleware"] = [*_as_list(middleware), TurnMarker()]
        if "approver" not in base and "approvals" not in base:
            config["approvals"] = "defer"
        return config

    def mode_of(self, doc: Mapping[str, Any], base: Mapping[str, Any]) -> tuple[str, str]:
        """How an agent is run: ``offline`` (and why), ``live`` (the project's models, keys
        found) or ``app`` (the ``--app`` config gives its own provider)."""
        if self.offline:
            return "offline", "auwgent dev --offline"
        if base.get("provider") is not None:
            return "app", "the --app config gives a provider"
        try:
            resolve_api_keys(doc, base.get("apiKeys"))
        except ConfigError as exc:
            return "offline", str(exc).split("\n")[0]
        return "live", "API keys found"

    # -- ASGI ---------------------------------------------------------------------------------

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        serve = self._serve
        if serve is not None and path.startswith(_SERVE_PATHS):
            await serve(scope, receive, send)
        else:
            await self._console(scope, receive, send)

    def _console_app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.middleware import Middleware
        from starlette.responses import FileResponse
        from starlette.routing import Mount, Route
        from starlette.staticfiles import StaticFiles

        async def index(request: Any) -> Any:
            return FileResponse(STATIC / "index.html", headers={"cache-control": "no-cache"})

        return Starlette(
            routes=[
                Route("/", index, methods=["GET"]),
                Mount("/assets", app=StaticFiles(directory=STATIC), name="assets"),
                Route("/dev/api/project", self.project, methods=["GET"]),
                Route("/dev/api/sessions", self.sessions, methods=["GET"]),
                Route("/dev/api/turns/{turn}", self.turn, methods=["GET"]),
                Route("/dev/api/tests", self.tests, methods=["POST"]),
            ],
            middleware=[
                Middleware(Boundary, settings=self.settings, host=self.host, port=self.port)
            ],
            on_shutdown=[self.shutdown],
        )

    # -- the console's endpoints --------------------------------------------------------------

    async def project(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        with self._lock:
            version, docs = self.version, dict(self.docs)
            answer = {
                "version": version,
                "root": str(self.root),
                "problems": list(self.problems),
                "tracing": self.tracer is not None,
            }
        cached = self._agents
        if cached is None or cached[0] != version:  # the console asks often; the app once
            cached = self._agents = (version, [self.describe(docs, name) for name in sorted(docs)])
        return JSONResponse({**answer, "agents": cached[1]})

    def describe(self, docs: Mapping[str, Mapping[str, Any]], name: str) -> dict[str, Any]:
        """An agent as the console shows it, with how it is run (``error``: the ``--app``
        config of the agent failed, and the reason says how)."""
        summary = agent_summary(docs[name], name)
        try:
            base = dict(self.factory(name)) if self.factory is not None else {}
            summary["mode"], summary["mode_reason"] = self.mode_of(docs[name], base)
        except Exception as exc:  # the application's code: shown, never a failed page
            summary["mode"] = "error"
            summary["mode_reason"] = f"the --app config failed: {type(exc).__name__}: {exc}"
        return summary

    async def sessions(self, request: Any) -> Any:
        """The stored conversations of the console (the local principal), newest first."""
        from starlette.responses import JSONResponse

        prefix = conversation_key(LOCAL_PRINCIPAL, "")
        listed = []
        for key in self.store.keys():
            if not key.startswith(prefix):
                continue
            session = await self.store.load(key)
            if session is not None:
                listed.append(session_summary(key[len(prefix) :], session))
        listed.reverse()
        return JSONResponse({"sessions": listed})

    async def turn(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        return JSONResponse(self.recorder.turn(request.path_params["turn"]))

    async def tests(self, request: Any) -> Any:
        """Run the project's ``test`` blocks (``{"pattern"?: str}``), as ``auwgent test``."""
        from starlette.responses import JSONResponse

        try:
            body = json.loads(await request.body() or b"{}")
        except ValueError as exc:
            return _error(400, f"the body is not valid JSON: {exc}")
        if not isinstance(body, dict) or set(body) - set(_TESTS_FIELDS):
            return _error(400, 'expected {"pattern"?: string}')
        pattern = body.get("pattern")
        if pattern is not None and not isinstance(pattern, str):
            return _error(400, "pattern: expected a string")
        return JSONResponse(await run_project_tests(self.root, pattern))

    async def shutdown(self) -> None:
        """Every serve app built (the current one and those of earlier compiles) lets its runs
        finish and closes its agents, as ``auwgent serve`` does on shutdown."""
        apps = [*self._retired, *([self._serve] if self._serve is not None else [])]
        for app in apps:
            for handler in app.router.on_shutdown:
                await handler()


def _as_list(middleware: Any) -> list[Any]:
    return list(middleware) if isinstance(middleware, (list, tuple)) else [middleware]


def _error(status: int, message: str) -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": {"code": "bad_request", "message": message}}, status_code=status)


def agent_summary(doc: Mapping[str, Any], name: str) -> dict[str, Any]:
    """What the console shows of an agent: its configs, its context fields (for the form),
    its personas, its tools (gated ones marked) and its output kind."""
    agent = doc["agents"][name]
    return {
        "name": name,
        "description": agent.get("description"),
        # The generated IR has its keys sorted: ``default`` first, then the rest by name.
        "configs": sorted(agent["configs"], key=lambda c: (c != "default", c)),
        "personas": list(agent.get("personas") or ()),  # in the order of its `personas { }`
        "context": [
            {
                "name": f["name"],
                "type": f["type"],
                "optional": f.get("optional", False),
                "description": f.get("description"),
            }
            for f in agent["context"]
        ],
        "tools": [
            {"name": t["name"], "approval": t.get("approval") is not None}
            for t in agent.get("tools") or ()
        ],
        "helpers": [h.get("name") for h in agent.get("helpers") or ()],
        "output": agent.get("output", {}).get("kind", "text"),
    }


def session_summary(conversation: str, session: Mapping[str, Any]) -> dict[str, Any]:
    """One line of the sessions list."""
    turns = session.get("turns") or []
    first = turns[0]["input"].get("text", "") if turns else ""
    return {
        "id": conversation,
        "agent": session.get("agent"),
        "turns": len(turns),
        "status": session.get("status") or (turns[-1].get("status") if turns else None),
        "pending": len(session.get("pending_approvals") or ()),
        "pending_approvals": list(session.get("pending_approvals") or ()),
        "first_input": first,
        "usage": session.get("usage"),
    }


async def run_project_tests(root: Path, pattern: str | None) -> dict[str, Any]:
    """Compile the project at ``root`` and run its ``test`` blocks; the results as JSON."""

    def compile_it() -> Any:
        project = load_project(root)
        return project, compile_project(project.files, project.source_root, display=display_path)

    try:
        project, result = await asyncio.to_thread(compile_it)
    except ConfigError as exc:
        return {"ok": False, "problems": [str(exc)], "results": []}
    if not result.ok:
        return {
            "ok": False,
            "problems": [render_all(result.diagnostics, color=False)],
            "results": [],
        }
    specs = project_tests(result, pattern)
    docs = {doc["root"]: doc for doc in result.documents.values()}
    started = time.perf_counter()
    outcomes = await run_tests(specs, docs, project.source_root)
    return {
        "ok": True,
        "problems": [],
        "seconds": time.perf_counter() - started,
        "results": [
            {
                "name": o.name,
                "file": o.file,
                "line": o.line,
                "passed": o.passed,
                "problems": list(o.problems),
                "seconds": o.seconds,
                "intents": [{"name": n, "value": v, "agent": a} for n, v, a in o.intents],
                "report": None if o.passed else o.report(),
            }
            for o in outcomes
        ],
    }
