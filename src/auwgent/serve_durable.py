"""``auwgent serve --durable dbos``: every run is a DBOS workflow on a queue per agent, shared
by every worker on one PostgreSQL (docs/durable.md).

- ``POST /v1/agents/{agent}/runs`` enqueues the run (the queue of its agent, at most
  ``concurrency`` of them at once per worker) and answers its events from the run's event log
  (:mod:`.events`), whichever worker executes it; the response's ``x-auwgent-run`` header names
  the run, and each event carries its ``id``.
- ``GET /v1/runs/{run}/events`` (``Last-Event-ID``: the last id seen) reads a run's events on
  from there: a client that lost its stream reconnects to any worker.
- The workflow loads the conversation (a step), runs the agent with ``"durable": "dbos"``
  (its model requests and tool calls are steps, :mod:`.dbos`) and saves the conversation (a
  step) in the session store, which stays the one record of the conversation.
- A run of a conversation is the workflow ``<conversation hash>-r<revision>``: a second run
  of the same conversation, at the same revision, is refused with 409.
- Each worker says it is alive in ``auwgent_workers`` every third of ``worker_ttl``; a worker
  silent for longer is dead, and the first live worker to see it takes its unfinished
  workflows back onto their queues (what DBOS Conductor does in a managed deployment), where
  any worker continues them from their last checkpoint.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from dbos import DBOS, DBOSConfig, EnqueueOptions
from dbos._error import DBOSWorkflowIDInUseError

from auwgent._version import __version__
from auwgent.errors import ConflictError
from auwgent.runtime.approvals import AWAITING, check_decisions
from auwgent.runtime.durable.events import PAUSED, EventLog, RunWriter, create_schema
from auwgent.runtime.leases import report_conflict
from auwgent.serve_answers import error_response, partial_value, unusable_session

__all__ = ["DurableRuns", "WORKFLOW"]

log = logging.getLogger("auwgent")

#: The registered name of the run workflow.
WORKFLOW = "auwgent.serve.run"
#: Per worker and agent: how many runs execute at once unless ``--durable-concurrency``.
DEFAULT_CONCURRENCY = 8
#: Seconds a worker may stay silent before the others take its runs over.
DEFAULT_WORKER_TTL = 15.0
_MARK = "durable_run"  # the session key naming the run that saved it
_STEP_LOAD: Any = {"name": "auwgent.load_session"}
_STEP_SAVE: Any = {"name": "auwgent.save_session"}

#: The DBOS message topic of a paused run's approval decisions.
APPROVALS_TOPIC = "auwgent.approvals"
_APPROVAL_WAIT = 24 * 3600.0

_worker: _Worker | None = None


@DBOS.workflow(name=WORKFLOW)
async def _run_workflow(job: dict[str, Any]) -> str:
    if _worker is None:
        raise RuntimeError("auwgent serve --durable dbos: this process serves no runs")
    return await _worker.execute(job)


def queue_name(agent: str) -> str:
    return f"auwgent.{agent}"


class _Worker:
    """What executes the workflows, in DBOS's event loop: its own agents, store and log."""

    def __init__(self, make_server: Callable[[], Any], url: str) -> None:
        self.make_server = make_server
        self.url = url
        self._server: Any = None
        self._log: EventLog | None = None

    def parts(self) -> tuple[Any, EventLog]:
        if self._server is None or self._log is None:
            self._server, self._log = self.make_server(), EventLog(self.url)
        return self._server, self._log

    async def execute(self, job: dict[str, Any]) -> str:
        from auwgent.serve_security import BoundaryError

        server, events = self.parts()
        run_id = str(DBOS.workflow_id)
        writer = RunWriter(events, run_id)
        try:
            return await self._run(server, job, run_id, writer)
        except BoundaryError as exc:
            writer.put("error", {"message": str(exc), "code": exc.code})
            return "error"
        except Exception as exc:  # reported in the stream, never as a traceback
            log.exception("auwgent serve: durable run %s failed", run_id)
            writer.put("error", {"message": f"{type(exc).__name__}: {exc}"})
            return "error"
        finally:
            await writer.close()

    async def _run(self, server: Any, job: dict[str, Any], run_id: str, writer: RunWriter) -> str:
        name, key = job["agent"], job["key"]
        agent = server.run_agent(name, job["context"], job["principal"], job["conversation"])
        session = None
        if key is not None:
            session = await DBOS.run_step_async(_STEP_LOAD, server.store.load, key)
        if session is not None and session.get("agent") != name:
            writer.put(
                "error", {"message": f"the conversation is a session of {session.get('agent')!r}"}
            )
            return "error"
        events = agent.stream(
            job["input"], session=session, config=job["config"], persona=job["persona"]
        )
        final = await self._forward(agent, events, writer, server.store, key, run_id)
        while key is not None and final.get("status") == AWAITING:
            # Paused for approvals: the workflow waits for the decisions as a DBOS message
            # (POST .../approvals sends it to this run, on whichever worker runs it).
            writer.put(PAUSED, None)
            decisions = await DBOS.recv_async(APPROVALS_TOPIC, timeout_seconds=_APPROVAL_WAIT)
            if decisions is None:
                continue  # still waiting (recv's timeout is only how long one wait lasts)
            events = agent.resume_stream(final, decisions)
            final = await self._forward(agent, events, writer, server.store, key, run_id)
        return str(final["turns"][-1]["status"]) if final.get("turns") else "complete"

    async def _forward(
        self,
        agent: Any,
        events: Any,
        writer: RunWriter,
        store: Any,
        key: str | None,
        run_id: str,
    ) -> dict[str, Any]:
        """Write a run's events to its log, then save its session (a step) and write it."""

        async for event in events:
            if event.partial:
                value = partial_value(event.value)
                writer.put(
                    "partial", {"name": event.name, "value": value, "agent": event.agent_name}
                )
            else:
                writer.put(event.name, event.value)
        final: dict[str, Any] = dict(agent.last_session or {})
        if key is not None and final:
            final = await DBOS.run_step_async(_STEP_SAVE, _save, store, key, final, run_id)
            for problem in final.pop("save_problems", ()):
                writer.put("error", {"message": problem})
        writer.put("session", final)
        return final


async def _save(store: Any, key: str, final: dict[str, Any], run_id: str) -> dict[str, Any]:
    """Save the run's session; an attempt that finds its own earlier save (the worker died
    before the step was checkpointed) takes it as done."""
    final[_MARK] = run_id
    try:
        await store.save(key, final)
    except ConflictError as exc:
        stored = await store.load(key)
        if stored is not None and stored.get(_MARK) == run_id:
            return dict(stored)
        report_conflict(final, str(exc))
        final["save_problems"] = [str(exc)]
    return final


class DurableRuns:
    """The durable side of one ``auwgent serve`` worker."""

    def __init__(
        self,
        url: str,
        docs: Mapping[str, Mapping[str, Any]],
        make_server: Callable[[], Any],
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        worker_ttl: float = DEFAULT_WORKER_TTL,
        poll: float = 0.05,
    ) -> None:
        self.url = url
        self.docs = docs
        self.concurrency = concurrency
        self.worker_ttl = worker_ttl
        self.poll = poll
        self.executor = uuid.uuid4().hex
        self.log = EventLog(url)  # in the server's event loop (the readers)
        self._worker = _Worker(make_server, url)
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def launch(self) -> None:
        """Create the tables, start DBOS (this worker's queues) and the heartbeat."""
        global _worker
        create_schema(self.url)
        _worker = self._worker
        digest = hashlib.sha256(json.dumps(self.docs, sort_keys=True).encode()).hexdigest()
        config: DBOSConfig = {
            "name": "auwgent",
            "system_database_url": self.url,
            "executor_id": self.executor,
            "application_version": f"auwgent-{__version__}-{digest[:12]}",
            "notification_listener_polling_interval_sec": 0.1,
            "log_level": "WARNING",
        }
        DBOS(config=config)
        DBOS.launch()
        for agent in self.docs:
            DBOS.register_queue(
                queue_name(agent),
                worker_concurrency=self.concurrency,
                polling_interval_sec=self.poll,
            )
        self._beat = threading.Thread(target=self._heartbeat, name="auwgent-durable", daemon=True)
        self._beat.start()

    async def submit(self, job: dict[str, Any], revision: int | None) -> str:
        """Enqueue a run; its id. ``ConflictError``: the conversation has a run at this
        revision already."""
        run_id = uuid.uuid4().hex
        if job["key"] is not None:
            digest = hashlib.sha256(job["key"].encode()).hexdigest()[:24]
            run_id = f"{digest}-r{revision or 0}"
        options: EnqueueOptions = {
            "workflow_name": WORKFLOW,
            "queue_name": queue_name(job["agent"]),
            "workflow_id": run_id,
            "workflow_id_reuse_policy": "reject",
        }
        await self.log.register(run_id, job["principal"], job["agent"])
        try:
            await DBOS.enqueue_workflow_with_options_async(options, job)
        except DBOSWorkflowIDInUseError as exc:
            raise ConflictError(
                f"conversation {job['conversation']!r} already has a run at revision "
                f"{revision or 0} ({run_id})"
            ) from exc
        return run_id

    def _heartbeat(self) -> None:
        """Say this worker is alive; give the runs of silent workers back to their queues."""
        import psycopg

        while not self._stop.wait(self.worker_ttl / 3):
            try:
                with psycopg.connect(self.url, autocommit=True) as conn:
                    conn.execute(
                        "INSERT INTO auwgent_workers (executor_id, seen_at) VALUES (%s, now()) "
                        "ON CONFLICT (executor_id) DO UPDATE SET seen_at = now()",
                        (self.executor,),
                    )
                    rows = conn.execute(
                        "DELETE FROM auwgent_workers WHERE seen_at < now() - make_interval("
                        "secs => %s) RETURNING executor_id",
                        (self.worker_ttl,),
                    ).fetchall()
                for (dead,) in rows:
                    log.warning("auwgent serve: worker %s is silent; its runs continue here", dead)
                    DBOS._recover_pending_workflows([str(dead)])
            except Exception:  # the database is away: the next beat tries again
                log.exception("auwgent serve: the durable heartbeat failed")

    async def aclose(self) -> None:
        self._stop.set()
        await self.log.aclose()
        await asyncio.to_thread(DBOS.destroy, workflow_completion_timeout_sec=5)

    # -- the endpoints (called by auwgent.serve) ----------------------------------------------

    async def start(self, server: Any, job: dict[str, Any]) -> Any:
        """``POST /v1/agents/{agent}/runs``: enqueue the run, answer its events."""

        revision = None
        if job["key"] is not None:
            session = await server.store.load(job["key"])
            if session is not None and session.get("agent") != job["agent"]:
                return unusable_session(job["conversation"], session, f"not {job['agent']!r}")
            revision = None if session is None else session.get("revision")
        try:
            run_id = await self.submit(job, revision)
        except ConflictError as exc:
            return error_response(409, str(exc), "busy")
        return self.stream(run_id, -1)

    async def events(self, server: Any, request: Any) -> Any:
        """``GET /v1/runs/{run}/events``: the run's events after ``Last-Event-ID``."""
        from auwgent.serve_security import check_id

        principal = await server.principal_of(request)
        run_id = check_id(request.path_params["run"], "run")
        if await self.log.owner(run_id) != (principal["tenant"], principal["user"]):
            return error_response(404, f"no run {run_id!r}", "not_found")
        last = request.headers.get("last-event-id", "-1").strip() or "-1"
        if not last.lstrip("-").isdigit():
            return error_response(
                400, f"Last-Event-ID: expected an event id, got {last!r}", "bad_request"
            )
        return self.stream(run_id, int(last))

    async def approve(self, server: Any, key: str, decisions: Any) -> Any:
        """``POST /v1/conversations/{id}/approvals``: send the decisions to the paused run
        (checked against the saved session first), answer its events from the pause on."""
        from auwgent.errors import ApprovalError

        session = await server.store.load(key)
        run_id = None if session is None else session.get(_MARK)
        if session is None or not isinstance(run_id, str):
            return error_response(
                409, "this conversation has no paused durable run", "bad_decisions"
            )
        try:
            check_decisions(session, decisions)
        except ApprovalError as exc:
            return error_response(409, str(exc).removeprefix("resume: "), "bad_decisions")
        pause = await self.log.last(run_id, PAUSED)
        if pause is None:
            return error_response(409, "the run has not paused yet; try again", "busy")
        # One message per pause: a second POST of the same pause adds nothing.
        await DBOS.send_async(
            run_id, dict(decisions), APPROVALS_TOPIC, idempotency_key=f"{run_id}:{pause}"
        )
        return self.stream(run_id, pause)

    def stream(self, run_id: str, after: int) -> Any:
        from starlette.responses import StreamingResponse

        headers = {"cache-control": "no-cache", "x-accel-buffering": "no", "x-auwgent-run": run_id}
        return StreamingResponse(
            self.log.tail(run_id, after), media_type="text/event-stream", headers=headers
        )
