"""The approval gate: calls marked ``@approval`` run only once the application approves them.

Every caller goes through :meth:`ApprovalGate.check` at the moment a call is about to execute
(after the call intent, handler controls and argument validation): the model in either
protocol, a workflow step, a helper using a tool it inherited. The gate emits
``approval_request`` ``{id, kind, name, args, agent}``, asks the approver (``agent.on_approval``
or config ``"approver"``, sync or async, within the annotation's ``timeout``), emits
``approval_result`` ``{id, approved, reason}`` and records the decision in the session's
``"approvals"`` audit list. Anything but a clear yes is a no: no approver, a timeout, an
approver that raises, an answer that is not understood, edited arguments that break the
declared types.

Durable approvals: an approver that returns ``"defer"`` (or config ``"approvals": "defer"``)
pauses the run after the model response that asked. The session then carries
``"status": "awaiting_approval"`` and ``"pending_approvals"``; the turn keeps the paused
round's calls (``"paused_round"``: every call with its stable id and outcome, the deferred ones
``"pending"``). :func:`resume_outcomes` (through ``agent.resume``) applies the decisions, runs
the approved calls once and hands every outcome back to the engine, which feeds them to the
model and continues. Calls that completed before the pause are never run again: their
recorded outcomes are reused.

A step of a workflow the model called may be deferred too: the workflow stops there and its
record keeps the steps it had made (``"steps"``, each tool call with its result). On resume
the workflow runs again from the start with those results replayed instead of run (a
workflow is deterministic given its arguments, context and tool results; a replay that asks
for another call than the recorded one fails the workflow rather than guess), then the
decided step runs or is denied, and the workflow goes on. Inside a helper the model called,
``"defer"`` is a denial (the reason says so): the helper's conversation in the middle of a
call is not part of the session.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
import secrets
import traceback
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from auwgent._records import record
from auwgent.errors import ApprovalError, ConflictError, describe_error
from auwgent.runtime.decisions import Journal, Verdict, json_value
from auwgent.runtime.evaluate import schema
from auwgent.runtime.host import RunHost
from auwgent.runtime.invocation import Invocation
from auwgent.runtime.protocol.contract import CallOutcome
from auwgent.runtime.session import Session
from auwgent.runtime.stores import SessionStore

__all__ = [
    "AWAITING",
    "DEFAULT_TIMEOUT",
    "ApprovalGate",
    "ResumeJournal",
    "check_decisions",
    "claim",
    "pause",
    "resume_outcomes",
]

log = logging.getLogger("auwgent")

#: Seconds an approver may take when ``@approval`` gives no ``timeout``.
DEFAULT_TIMEOUT = 300.0
#: The session's top-level status while approvals are pending.
AWAITING = "awaiting_approval"
#: The stored session's status while one ``agent.resume`` holds it.
_RESUMING = "resuming"
_ANSWERS = 'True, False or {"approved": bool, "reason": str, "args": {...}}'
_UNDERSTOOD = 'expected True, False, "defer" or {"approved": bool, "reason": str, "args": {...}}'


class ApprovalGate:
    """The approvals of one run (see the module docstring)."""

    def __init__(self, run: RunHost) -> None:
        self.run = run
        # The steps a workflow had made when one of its steps was deferred, by request id.
        self.journals: dict[str, list[dict[str, Any]]] = {}

    async def check(
        self,
        inv: Invocation,
        kind: str,
        name: str,
        args: Mapping[str, Any],
        approval: Mapping[str, Any] | None,
        params: Sequence[schema.IRField],
        *,
        deferrable: bool,
        taint: Mapping[str, Any] | None = None,
    ) -> Verdict | None:
        """Ask for approval of a gated call; ``None`` when the call is not gated. ``taint``
        is the taint guard's record of a tainted call (its reason and findings), added to the
        request as ``"taint"``."""
        if approval is None:
            return None
        request = {
            "id": _new_id(),
            "kind": kind,
            "name": name,
            "args": dict(args),
            "agent": inv.name,
        }
        if taint is not None:
            request["taint"] = {"reason": taint["reason"], "findings": taint["findings"]}
        await self.run.emit("approval_request", copy.deepcopy(request), inv.name)
        answer = await self._ask(request, approval.get("timeout") or DEFAULT_TIMEOUT)
        if answer == "defer":
            if deferrable:
                self.run.session.setdefault("pending_approvals", []).append(request)
                return Verdict(False, args, deferred=True, request_id=str(request["id"]))
            answer = _Denied(
                "its approval cannot wait for agent.resume() inside a helper call or running "
                "code; decide on it in the approver"
            )
        verdict = judge(answer, args, params, self.run.core.doc["types"])
        await self.decided(request, verdict)
        return verdict

    async def decided(self, request: Mapping[str, Any], verdict: Verdict) -> None:
        """Emit ``approval_result`` and add the decision to the session's audit list."""
        result = {"id": request["id"], "approved": verdict.approved, "reason": verdict.reason}
        await self.run.emit("approval_result", result, str(request["agent"]))
        self.run.session.setdefault("approvals", []).append(
            {
                "id": request["id"],
                "kind": request["kind"],
                "name": request["name"],
                "agent": request["agent"],
                "args": dict(verdict.args if verdict.approved else request["args"]),
                "approved": verdict.approved,
                "reason": verdict.reason,
                "decided_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            }
        )

    async def _ask(self, request: Mapping[str, Any], timeout: float) -> Any:
        if self.run.core.options.approvals == "defer":
            return "defer"
        approver = self.run.services.approver
        if approver is None:
            return _Denied("no approver is configured (agent.on_approval or config 'approver')")
        try:
            return await asyncio.wait_for(_call(approver, copy.deepcopy(dict(request))), timeout)
        except asyncio.TimeoutError:
            return _Denied(f"the approver did not answer within {timeout:g} s")
        except Exception as exc:
            await self._approver_failed(request, exc)
            return _Denied("the approver failed")

    async def _approver_failed(self, request: Mapping[str, Any], exc: Exception) -> None:
        """The application hears of its approver's exception: the ``auwgent`` log (with the
        traceback), ``onError`` and, unless a middleware handled it, an ``error`` intent with
        the traceback. The model is only told that the approver failed."""
        message = (
            f"the approver failed on {request['kind']} {request['name']}: {describe_error(exc)} "
            "(the call was not run)"
        )
        log.error("%s", message, exc_info=exc)
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        details = {"approval_id": request["id"], "traceback": tb}
        await self.run.fail(
            exc, str(request["agent"]), mark=False, message=message, details=details, logged=True
        )


def _new_id() -> str:
    return secrets.token_hex(16)


@record
class _Denied:
    reason: str


async def _call(approver: Any, request: dict[str, Any]) -> Any:
    """Await an async approver; run a plain function in a thread, so that a timeout holds even
    when it blocks (waiting for a person at a terminal, say)."""
    if inspect.iscoroutinefunction(approver) or inspect.iscoroutinefunction(
        getattr(approver, "__call__", None)  # noqa: B004 - an object with an async __call__
    ):
        answer = await approver(request)
    else:
        answer = await asyncio.to_thread(approver, request)
    if inspect.isawaitable(answer):
        answer = await answer
    return answer


def judge(
    answer: Any,
    args: Mapping[str, Any],
    params: Sequence[schema.IRField],
    types: Mapping[str, Any],
) -> Verdict:
    """An approver's (or ``agent.resume``'s) answer as a verdict; anything unclear is a denial."""
    if isinstance(answer, _Denied):
        return Verdict(False, args, answer.reason)
    if answer is True or answer is False:
        answer = {"approved": answer}
    if not isinstance(answer, Mapping) or not isinstance(answer.get("approved"), bool):
        return Verdict(False, args, f"the approver's answer was not understood ({_UNDERSTOOD})")
    reason = answer.get("reason")
    reason = reason if isinstance(reason, str) and reason else None
    if not answer["approved"]:
        return Verdict(False, args, reason)
    edited = answer.get("args", args)
    if not isinstance(edited, Mapping):
        return Verdict(False, args, "the edited arguments are not an object")
    # Checked even when unedited: a resumed call meets the declaration of the agent now.
    errors = schema.validate(dict(edited), schema.object_type(params), types, path="$")
    if errors:
        kind = "edited arguments" if edited is not args else "arguments"
        return Verdict(False, args, f"the {kind} are invalid: " + "; ".join(errors))
    return Verdict(True, dict(edited), reason)


# ---------------------------------------------------------------------------------------------
# Pausing and resuming


def pause(run: RunHost, outcomes: Sequence[CallOutcome]) -> None:
    """End the run at this round: record every call of it and mark the session paused."""
    turn = run.turn
    assert turn is not None
    records = [_record(o) for o in outcomes]
    for rec in records:
        steps = run.approvals.journals.get(rec["id"])
        if steps is not None:
            rec["steps"] = steps
    turn["paused_round"] = records  # type: ignore[typeddict-unknown-key]
    turn["status"] = AWAITING
    run.session["status"] = AWAITING


def _record(outcome: CallOutcome) -> dict[str, Any]:
    """A call's stable record; a pending one takes its first request's id as its own."""
    return {
        "id": outcome.request_id or _new_id(),
        "kind": outcome.kind,
        "name": outcome.name,
        "args": dict(outcome.args),
        "status": outcome.status,
        "result": outcome.result,
        "error": outcome.error,
        "call_id": outcome.call_id,
        "request_id": outcome.request_id,
    }


def check_decisions(session: Mapping[str, Any], decisions: Any, *, claimed: bool = False) -> None:
    """Raise unless ``decisions`` decide exactly the pending requests of ``session``."""
    status = session.get("status")
    if status == _RESUMING and not claimed:
        raise ConflictError(
            "this session is being resumed by another run (or a resume of it stopped half "
            "way): nothing was executed; load it again later and inspect its 'approvals'"
        )
    pending = session.get("pending_approvals") or []
    turns = session.get("turns") or []
    paused = bool(turns) and isinstance(turns[-1], Mapping) and "paused_round" in turns[-1]
    if status not in (AWAITING, _RESUMING) or not pending or not paused:
        raise ApprovalError("resume: this session has no pending approvals; nothing to resume")
    _check_paused(pending, turns[-1]["paused_round"])
    if not isinstance(decisions, Mapping):
        raise ApprovalError(
            f"resume: decisions must be a dict of request id -> decision, got "
            f"{type(decisions).__name__}"
        )
    ids = [str(p.get("id")) for p in pending if isinstance(p, Mapping)]
    unknown = [str(k) for k in decisions if k not in ids]
    if unknown:
        raise ApprovalError(
            f"resume: unknown request id {', '.join(map(repr, unknown))}; pending: "
            f"{', '.join(map(repr, ids))}"
        )
    missing = [i for i in ids if i not in decisions]
    if missing:
        raise ApprovalError(
            f"resume: no decision for pending request {', '.join(map(repr, missing))}; decide "
            "on every pending request"
        )
    for key, value in decisions.items():
        if not isinstance(value, (bool, Mapping)):
            raise ApprovalError(f"resume: decisions[{key!r}]: expected {_ANSWERS}, got {value!r}")


_RECORD_KEYS = ("id", "kind", "name", "args", "status", "result", "error", "call_id")


def _check_paused(pending: Any, records: Any) -> None:
    """A stored pause that was tampered with is refused, naming the field (nothing runs)."""
    where = "session.pending_approvals"
    if not isinstance(pending, list) or not all(
        isinstance(p, Mapping)
        and isinstance(p.get("id"), str)
        and isinstance(p.get("args"), Mapping)
        for p in pending
    ):
        raise ApprovalError(f"resume: {where}: expected a list of requests with an id and args")
    where = "session.turns[-1].paused_round"
    if not isinstance(records, list) or not all(
        isinstance(r, Mapping) and all(k in r for k in _RECORD_KEYS) for r in records
    ):
        raise ApprovalError(f"resume: {where}: expected a list of call records")
    ids = {p["id"] for p in pending}
    waiting = {r.get("request_id") for r in records if r["status"] == "pending"}
    if waiting != ids:
        raise ApprovalError(f"resume: {where} does not match session.pending_approvals")


async def claim(store: SessionStore, key: str, session: Session) -> None:
    """Mark the stored session as being resumed, comparing revisions (ConflictError when
    another run got there first), before anything executes."""
    session["status"] = _RESUMING
    await store.save(key, session)


#: What a call interrupted by a crash is, for the model and the application.
_INTERRUPTED = (
    "{name} was interrupted: the run executing it stopped before its result was saved, so "
    "whether it took effect is unknown; it is not run again"
)


class ResumeJournal:
    """Where one resume records its approved calls, so that none runs twice.

    Before an approved call runs, the stored session (still ``"resuming"``, its paused round
    whole) is saved with the call's record marked ``"journal": {"state": "started"}``; once
    it has run, with ``{"state": "done", "outcome": ...}``. Both saves compare revisions, so of
    two resumers only one ever starts a call. A later resume of that stored session (after a
    crash: ``auwgent serve`` takes it over once the crashed worker's lock has expired) reuses
    a done call's outcome and refuses a started one (its ``tool_error`` says it was
    interrupted); only calls never started run.
    """

    def __init__(self, store: SessionStore, key: str) -> None:
        self.store = store
        self.key = key
        self._stored: Session | None = None

    def begin(self, session: Session) -> None:
        """Keep the claimed session, as stored, before the resume changes it."""
        self._stored = copy.deepcopy(session)

    async def record(self, run: RunHost, record_id: str, entry: Mapping[str, Any]) -> None:
        """Save ``entry`` as the journal of the paused call ``record_id`` (ConflictError, and
        nothing runs, when another run changed the conversation meanwhile)."""
        stored = self._stored
        assert stored is not None
        for rec in stored["turns"][-1]["paused_round"]:  # type: ignore[typeddict-item]
            if rec["id"] == record_id:
                rec["journal"] = json_value(dict(entry))
        stored.pop("revision", None)
        if "revision" in run.session:
            stored["revision"] = run.session["revision"]
        await self.store.save(self.key, stored)
        run.session["revision"] = stored["revision"]


async def resume_outcomes(
    run: RunHost, inv: Invocation, decisions: Mapping[str, Any]
) -> list[CallOutcome] | None:
    """The paused round's outcomes: recorded ones as they were, decided ones now run or denied.

    ``None`` when a resumed workflow deferred another of its steps: the round is paused again.
    """
    session, turn = run.session, run.turn
    assert turn is not None
    if run.journal is not None:
        run.journal.begin(session)
    records: list[dict[str, Any]] = turn.pop("paused_round")  # type: ignore[typeddict-item]
    requests = {str(p["id"]): p for p in session.get("pending_approvals", [])}
    session.pop("status", None)
    session["pending_approvals"] = []
    contract = run.core.contract(inv)
    outcomes = []
    for rec in records:
        if rec["status"] == "pending":
            kind, name = rec["kind"], rec["name"]
            request = requests[rec["request_id"]]
            # The decision is about the call itself, or about the workflow step that paused.
            spec = contract.callable(kind, name)
            params: Sequence[schema.IRField] | None = None if spec is None else spec.params
            if spec is not None and "steps" in rec:
                params = _step_params(inv, name, str(request["name"]))
            answer = decisions[rec["request_id"]]
            if params is None:  # the agent was changed meanwhile: what is not declared never runs
                answer = _Denied(f"{request['name']} is no longer part of {inv.name}")
            entry = rec.pop("journal", None)
            if isinstance(entry, Mapping):  # an earlier resume started it: never run it again
                outcome = await _journaled(run, inv, rec, entry)
            else:
                verdict = judge(answer, request["args"], params or (), run.core.doc["types"])
                await run.approvals.decided(request, verdict)
                outcome = await _decided(run, inv, rec, request, verdict)
            rec.update(_record(outcome), id=rec["id"])
            if outcome.status == "pending":  # another step of it was deferred
                rec["steps"] = run.approvals.journals[str(outcome.request_id)]
        outcomes.append(_outcome(rec))
    if any(o.status == "pending" for o in outcomes):
        turn["paused_round"] = records  # type: ignore[typeddict-unknown-key]
        turn["status"] = session["status"] = AWAITING
        return None
    turn.setdefault("calls", []).extend(records)  # type: ignore[typeddict-item]
    return outcomes


async def _decided(
    run: RunHost,
    inv: Invocation,
    rec: dict[str, Any],
    request: Mapping[str, Any],
    verdict: Verdict,
) -> CallOutcome:
    """Run or deny one decided call of the paused round, journaled when the run has a
    journal and the call runs."""
    kind, name, args = rec["kind"], rec["name"], rec["args"]
    journal = run.journal if verdict.approved else None
    if journal is not None:
        audit = run.session["approvals"][-1]
        await journal.record(run, rec["id"], {"state": "started", "approval": audit})
    try:
        if "steps" in rec:
            steps = Journal(done=rec.pop("steps"), decided=(request, verdict))
            outcome = await run.calls.workflow(inv, name, args, rec["call_id"], steps)
        else:
            outcome = await run.calls.decided(inv, kind, name, verdict, rec["call_id"])
    except Exception as exc:  # as on the first path: a failure is a tool_error
        outcome = await run.calls.refuse(inv, kind, name, args, describe_error(exc), rec["call_id"])
    if journal is not None and outcome.status != "pending":
        done = {"state": "done", "approval": audit, "outcome": _record(outcome)}
        await journal.record(run, rec["id"], done)
    return outcome


async def _journaled(
    run: RunHost, inv: Invocation, rec: dict[str, Any], entry: Mapping[str, Any]
) -> CallOutcome:
    """A call an earlier resume started: its saved outcome, or (interrupted) a refusal."""
    audit = entry.get("approval")
    if isinstance(audit, Mapping):
        result = {"id": audit.get("id"), "approved": True, "reason": audit.get("reason")}
        await run.emit("approval_result", result, str(audit.get("agent") or inv.name))
        run.session.setdefault("approvals", []).append(dict(audit))
    rec.pop("steps", None)
    outcome = entry.get("outcome")
    if entry.get("state") == "done" and isinstance(outcome, Mapping):
        return _outcome({**rec, **outcome})
    message = _INTERRUPTED.format(name=rec["name"])
    return await run.calls.refuse(inv, rec["kind"], rec["name"], rec["args"], message,
                                  rec["call_id"])  # fmt: skip


def _step_params(inv: Invocation, workflow: str, tool: str) -> Sequence[schema.IRField] | None:
    """The parameters of ``tool`` as ``workflow`` sees it (scoped, else the agent's)."""
    found = next((w for w in inv.agent["workflows"] if w["name"] == workflow), None)
    tools = [*(found["tools"] if found else ()), *inv.tools]
    spec = next((t for t in tools if t["name"] == tool), None)
    return None if spec is None else tuple(spec["params"])


def _outcome(rec: Mapping[str, Any]) -> CallOutcome:
    return CallOutcome(
        rec["kind"],
        rec["name"],
        rec["args"],
        rec["status"],
        rec["result"],
        rec["error"],
        rec["call_id"],
    )
