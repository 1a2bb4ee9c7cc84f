"""What the call runner, the approval gate and code mode need of a run (:class:`RunHost`).

They are given the run as a :class:`RunHost`, never the engine's ``Run`` itself, so that none
of them imports the engine (or the agent): the engine imports them, and the dependency runs
one way. ``Run`` satisfies these protocols structurally.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

# Types only: the protocols describe the run, and importing them must not import it.
if TYPE_CHECKING:
    from auwgent.ir.model import Agent as IRAgent
    from auwgent.ir.model import Document as IRDocument
    from auwgent.runtime.config import RuntimeOptions
    from auwgent.runtime.decisions import Journal, Verdict
    from auwgent.runtime.evaluate.schema import IRField
    from auwgent.runtime.intents import Control
    from auwgent.runtime.invocation import AgentResult, Invocation
    from auwgent.runtime.middleware import MiddlewareChain
    from auwgent.runtime.protocol.contract import CallableSpec, CallOutcome, Contract, FinalEvent
    from auwgent.runtime.session import Session, Turn
    from auwgent.runtime.steps import StepRunner
    from auwgent.runtime.tools import ToolRegistry

__all__ = [
    "ApprovalsView",
    "CallsView",
    "ContextBudgetHost",
    "ContextBudgetView",
    "CoreView",
    "GateView",
    "JournalView",
    "MemoryView",
    "RunHost",
    "ServicesView",
    "TaintHost",
    "TaintView",
]


class CoreView(Protocol):
    """The agent's IR views (:class:`~auwgent.runtime.core.AgentCore`)."""

    @property
    def doc(self) -> IRDocument: ...
    @property
    def options(self) -> RuntimeOptions: ...
    @property
    def registry(self) -> ToolRegistry: ...

    def config_for(self, agent: IRAgent, selected: str | Mapping[str, str] | None) -> str: ...
    def contract(self, inv: Invocation) -> Contract: ...


class ServicesView(Protocol):
    """The application's hooks (:class:`~auwgent.runtime.services.Services`)."""

    @property
    def middleware(self) -> MiddlewareChain: ...
    @property
    def approver(self) -> Any: ...


class CallsView(Protocol):
    """The run's call runner (:class:`~auwgent.runtime.calls.CallRunner`)."""

    async def call(self, inv: Invocation, contract: Contract, event: FinalEvent) -> CallOutcome: ...

    async def refuse(
        self,
        inv: Invocation,
        kind: str,
        name: str,
        args: Mapping[str, Any],
        message: str,
        call_id: str | None,
    ) -> CallOutcome: ...

    async def workflow(
        self,
        inv: Invocation,
        name: str,
        args: Mapping[str, Any],
        call_id: str | None,
        journal: Journal,
    ) -> CallOutcome: ...

    async def decided(
        self, inv: Invocation, kind: str, name: str, verdict: Verdict, call_id: str | None
    ) -> CallOutcome: ...

    async def tool_result(
        self, inv: Invocation, name: str, args: Mapping[str, Any], result: Any
    ) -> None: ...


class ApprovalsView(Protocol):
    """The run's approval gate (:class:`~auwgent.runtime.approvals.ApprovalGate`)."""

    @property
    def journals(self) -> dict[str, list[dict[str, Any]]]: ...

    async def check(
        self,
        inv: Invocation,
        kind: str,
        name: str,
        args: Mapping[str, Any],
        approval: Mapping[str, Any] | None,
        params: Sequence[IRField],
        *,
        deferrable: bool,
        taint: Mapping[str, Any] | None = None,
    ) -> Verdict | None: ...

    async def decided(self, request: Mapping[str, Any], verdict: Verdict) -> None: ...


class GateView(Protocol):
    """The taint guard's answer for one call (:class:`~auwgent.runtime.taint.Gate`)."""

    @property
    def approval(self) -> Mapping[str, Any] | None: ...
    @property
    def provenance(self) -> Mapping[str, Any] | None: ...
    @property
    def refusal(self) -> str | None: ...


class TaintView(Protocol):
    """The run's taint guard (:class:`~auwgent.runtime.taint.TaintGuard`)."""

    async def gate(
        self, inv: Invocation, kind: str, name: str, args: Mapping[str, Any], spec: CallableSpec
    ) -> GateView: ...

    def result(
        self, inv: Invocation, name: str, args: Mapping[str, Any], text: str, via: str | None = None
    ) -> None: ...

    def enter(self, child: Invocation, parent: Invocation, name: str) -> None: ...

    def helper_result(
        self, parent: Invocation, child: Invocation, name: str, output: Any
    ) -> None: ...


class ContextBudgetView(Protocol):
    """The run's context budget (:class:`~auwgent.runtime.context_budget.ContextBudget`)."""

    def offers_recall(self, inv: Invocation) -> bool: ...

    async def recall_call(
        self, inv: Invocation, args: Mapping[str, Any], call_id: str | None
    ) -> CallOutcome: ...

    def cap(self, inv: Invocation, name: str, text: str) -> str: ...


class MemoryView(Protocol):
    """The run's recalled memory (:class:`~auwgent.runtime.run_memory.RunMemory`)."""

    @property
    def section(self) -> str: ...


class TaintHost(Protocol):
    """What the taint guard reads of its run (:class:`~auwgent.runtime.engine.Run`)."""

    @property
    def core(self) -> CoreView: ...
    @property
    def memory(self) -> MemoryView: ...
    @property
    def context(self) -> dict[str, Any]: ...
    @property
    def session(self) -> Session: ...

    async def emit(self, name: str, value: Any, agent_name: str) -> Any: ...


class ContextBudgetHost(Protocol):
    """What the context budget reads of its run (:class:`~auwgent.runtime.engine.Run`)."""

    core: Any
    services: Any
    budgets: Any
    session: Any
    turn: Any
    trace: Any

    async def emit(self, name: str, value: Any, agent_name: str) -> Any: ...


class JournalView(Protocol):
    """Where a resume journals its approved calls (:class:`~auwgent.runtime.approvals.ResumeJournal`)."""

    def begin(self, session: Session) -> None: ...
    async def record(self, run: RunHost, record_id: str, entry: Mapping[str, Any]) -> None: ...


class RunHost(Protocol):
    """One ``agent.run()`` as its collaborators see it (:class:`~auwgent.runtime.engine.Run`)."""

    #: Set by a helper call that handed the conversation to the helper.
    handed_off: bool

    @property
    def core(self) -> CoreView: ...
    @property
    def services(self) -> ServicesView: ...
    @property
    def session(self) -> Session: ...
    @property
    def turn(self) -> Turn | None: ...
    @property
    def ctx(self) -> dict[str, Any]: ...
    @property
    def context(self) -> dict[str, Any]: ...
    @property
    def config(self) -> str | Mapping[str, str] | None: ...
    @property
    def journal(self) -> JournalView | None: ...
    @property
    def deadline(self) -> float | None: ...
    @property
    def calls(self) -> CallsView: ...
    @property
    def approvals(self) -> ApprovalsView: ...
    @property
    def taint(self) -> TaintView: ...
    @property
    def steps(self) -> StepRunner | None: ...
    @property
    def context_budget(self) -> ContextBudgetView: ...

    async def emit(
        self,
        name: str,
        value: Any,
        agent_name: str,
        raw: str | None = None,
        *,
        active: str | None = None,
        repairs: Sequence[Mapping[str, str]] = (),
    ) -> Control | None: ...

    async def fail(
        self,
        error: BaseException,
        agent_name: str,
        *,
        prefix: str = "",
        mark: bool = True,
        message: str | None = None,
        details: Mapping[str, Any] | None = None,
        logged: bool = False,
    ) -> str: ...

    async def invoke(self, inv: Invocation, *, top: bool = False) -> AgentResult: ...
