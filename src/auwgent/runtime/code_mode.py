"""Code mode: one ``execute_code`` callable, a typed ``api`` module, the Monty sandbox.

With ``codeMode`` on (a DSL config or the runtime config) the model is offered one callable,
``execute_code(code: string)``, instead of the agent's tools, workflows and helpers; the
system prompt carries a typed Python stub of a module ``api`` with one function per callable
(:func:`api_stub`). The code runs in Monty (``pydantic-monty``, the ``code`` extra), a Python
interpreter written for untrusted code that runs in worker processes of its own, with no
filesystem, network, environment or subprocesses. It is type-checked against the stub before
it starts (so a wrong call fails before anything runs), then driven here one suspension at a
time: each ``api.<name>(...)`` call stops the sandbox, goes through the agent's ordinary
checked call path (:meth:`.CallRunner.call`: refusal of what is not granted, the call intent
with middleware and handler control, argument validation, the approval gate, the result or
error intents, each marked ``"via": "execute_code"``), and its value (or an exception) goes
back into the code. Everything else the code asks of the host (imports of other modules, OS
calls, unknown names) is answered by Monty's own refusals.

The model gets back ``{"value": <last expression>, "printed": <output>}`` (JSON), or the
error with its line. Limits: ``"codeLimits"`` in the runtime config (:class:`.config.CodeLimits`).
"""

from __future__ import annotations

import _thread
import ast
import asyncio
import atexit
import functools
import itertools
import json
import keyword
import os
import re
import sys
import time
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from auwgent._records import replace
from auwgent.runtime import origin
from auwgent.runtime.code_switch import INSTALL_HINT, enabled, require, wanted
from auwgent.runtime.config import CodeLimits
from auwgent.runtime.evaluate.schema import IRField, parsed_result, referenced_types
from auwgent.runtime.host import RunHost
from auwgent.runtime.invocation import Invocation
from auwgent.runtime.protocol.contract import (
    CallableSpec,
    CallOutcome,
    CodeApi,
    Contract,
    FinalEvent,
)
from auwgent.runtime.protocol.section import BLOCK_KIND
from auwgent.runtime.tools import result_text

# The sandbox (pydantic-monty, an optional extra) is imported on first use.

__all__ = [
    "EXECUTE_CODE",
    "INSTALL_HINT",
    "api_stub",
    "code_contract",
    "enabled",
    "execute",
    "require",
    "wanted",
]

EXECUTE_CODE = "execute_code"
VIA = "execute_code"


# ---------------------------------------------------------------------------------------------
# Configuration


# ---------------------------------------------------------------------------------------------
# What the model sees

_CODE_PARAM: IRField = {
    "name": "code",
    "type": {"kind": "string"},
    "optional": False,
    "description": "Python code that starts with `import api`",
}
_DESCRIPTION = (
    "Runs Python code in a sandbox; the code calls the functions of module `api` (see the"
    " system prompt) and gets back the last expression's value and what it printed"
)
_INTRO = (
    "## Code mode\n"
    "Your one tool is `execute_code`: it runs Python code in a sandbox. Pass the code as its"
    " only argument (in a `[tool_call: execute_code]` block, the whole body is the code, as"
    " is). Start the code with `import api` and call the functions of module `api` below;"
    " do dependent steps in one execution, passing values from call to call. You get back the"
    " value of the code's last expression (as JSON) and what it printed, or the error and its"
    " line. A failed `api` call raises RuntimeError. There are no files, network, environment"
    " variables or subprocesses, and only a small standard library (json, re, math, datetime"
    " and the like)."
)


def code_contract(contract: Contract) -> Contract:
    """``contract`` as code mode offers it: ``execute_code`` only, the ``api`` stub beside."""

    stub = api_stub(contract.callables, contract.types, contract.examples)
    section = f"{_INTRO}\n\n```python\n{stub}```"
    spec = CallableSpec(
        "tool", EXECUTE_CODE, _DESCRIPTION, (_CODE_PARAM,), {"kind": "string"}, raw_body=True
    )
    api = CodeApi(callables=contract.callables, stub=stub, section=section)
    return replace(contract, callables=(spec,), examples=(), code_api=api)


def api_stub(
    callables: Sequence[CallableSpec],
    types: Mapping[str, Any],
    examples: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The ``.pyi`` source of module ``api``: TypedDicts for the named types the callables
    use, then one function per callable with its description and ``@example`` calls."""

    specs = [s for s in callables if _identifier(s.name)]
    named: list[str] = []
    for spec in specs:
        for shape in [*(p["type"] for p in spec.params), spec.returns]:
            for name in referenced_types(shape, types):
                if name not in named and name in types:
                    named.append(name)
    lines = [
        '"""What this agent may call. Start the code with `import api`."""',
        "",
        "from typing import Any, Literal, NotRequired, TypedDict",
        "",
    ]
    for name in named:
        lines += _type_def(name, types)
    for spec in specs:
        mine = [e for e in examples if e.get("target") == spec.name]
        lines += _function(spec, types, mine)
    return "\n".join(lines).rstrip("\n") + "\n"


def _identifier(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def _py_type(type_: Mapping[str, Any], types: Mapping[str, Any]) -> str:
    kind = type_["kind"]
    if kind in ("string", "text"):
        return "str"
    if kind == "number":
        return "float"
    if kind == "boolean":
        return "bool"
    if kind == "literal":
        return f"Literal[{json.dumps(type_['value'], ensure_ascii=False)}]"
    if kind == "array":
        return f"list[{_py_type(type_['items'], types)}]"
    if kind == "union":
        return " | ".join(_py_type(v, types) for v in type_["variants"])
    if kind == "ref" and type_["name"] in types and _identifier(type_["name"]):
        return str(type_["name"])
    return "dict[str, Any]" if kind == "object" else "Any"


def _type_def(name: str, types: Mapping[str, Any]) -> list[str]:
    if not _identifier(name):
        return []
    resolved = types[name]
    if resolved["kind"] != "object":
        return [f"{name} = {_py_type(resolved, types)}", ""]
    fields = resolved["fields"]

    def field_type(f: Mapping[str, Any]) -> str:
        text = _py_type(f["type"], types)
        return f"NotRequired[{text}]" if f["optional"] else text

    if not all(_identifier(f["name"]) for f in fields):  # e.g. a field named `from`
        body = ", ".join(f"{json.dumps(f['name'])}: {field_type(f)}" for f in fields)
        return [f"{name} = TypedDict({json.dumps(name)}, {{{body}}})", ""]
    lines = [f"class {name}(TypedDict):"]
    description = types[name].get("description")
    if description:
        lines.append(f"    {_docstring(description)}")
    for f in fields:
        if f.get("description"):
            lines.append(f"    # {_one_line(f['description'])}")
        lines.append(f"    {f['name']}: {field_type(f)}")
    if len(lines) == 1:
        lines.append("    pass")
    return [*lines, ""]


def _function(
    spec: CallableSpec, types: Mapping[str, Any], examples: Sequence[Mapping[str, Any]]
) -> list[str]:
    params = _signature_params(spec, types)
    returns = _py_type(spec.returns, types)
    first = _one_line(spec.description)
    if spec.kind != "tool":  # "Refund an order (workflow)", "Analyses data (helper)"
        first = f"{first} ({spec.kind})".strip()
    doc = [first] if first else []
    notes = [
        f"{p['name']}: {_one_line(p['description'])}" for p in spec.params if p.get("description")
    ]
    if not spec.configured:
        notes.append("[NOT CONFIGURED]: not implemented, a call fails")
    if spec.approval is not None:
        notes.append("Needs the application's approval: a call may be refused.")
    for example in examples:
        args = ", ".join(f"{k}={_py_value(v)}" for k, v in (example.get("args") or {}).items())
        notes.append(f"Example: api.{spec.name}({args})")
    if notes:
        doc += ([""] if doc else []) + notes
    lines = [f"def {spec.name}({params}) -> {returns}:"]
    # A docstring is a whole body in a stub; without one the body is `...`.
    lines.append(f"    {_docstring(chr(10).join(doc))}" if doc else "    ...")
    return lines


def _signature_params(spec: CallableSpec, types: Mapping[str, Any]) -> str:
    if not all(_identifier(p["name"]) for p in spec.params):
        return "**kwargs: Any"
    parts: list[str] = []
    seen_optional = star = False
    for p in spec.params:
        text = f"{p['name']}: {_py_type(p['type'], types)}"
        if p["optional"]:
            seen_optional = True
            text += " | None = None"
        elif seen_optional and not star:
            parts.append("*")
            star = True
        parts.append(text)
    return ", ".join(parts)


def positional_names(spec: CallableSpec) -> list[str]:
    """The parameters a call may give by position: those before the stub's ``*``."""
    names: list[str] = []
    seen_optional = False
    for p in spec.params:
        if not p["optional"] and seen_optional:
            break
        seen_optional = seen_optional or bool(p["optional"])
        names.append(str(p["name"]))
    return names if all(_identifier(n) for n in names) else []


def _one_line(text: str | None) -> str:
    return " ".join(str(text or "").split())


def _docstring(text: str, indent: str = "    ") -> str:
    safe = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = safe.split("\n")
    if len(lines) == 2 and not lines[1]:
        lines = lines[:1]
    if len(lines) == 1:
        return f'"""{lines[0]}"""'
    if len(lines) == 3 and not lines[1] and len(lines[0]) + len(lines[2]) < 90:
        return f'"""{lines[0]} ({lines[2]})"""'  # a description and one note
    body = "\n".join((indent + line) if line else "" for line in lines[1:])
    return f'"""{lines[0]}\n{body}\n{indent}"""'


def _py_value(value: Any) -> str:
    return repr(value)


# ---------------------------------------------------------------------------------------------
# Running the code


async def execute(
    run: RunHost, inv: Invocation, contract: Contract, code: str, call_id: str | None
) -> CallOutcome:
    """Run one ``execute_code`` call; its ``tool_result`` or ``tool_error`` is emitted here."""

    assert contract.code_api is not None
    limits = run.core.options.code_limits
    inner = replace(contract, callables=contract.code_api.callables, code_api=None)
    execution = _Execution(run, inv, inner, contract.code_api, limits, code)
    ok, report = await execution.drive()
    args = {"code": code}
    if not ok:
        return await run.calls.refuse(inv, "tool", EXECUTE_CODE, args, str(report), call_id)
    await run.calls.tool_result(inv, EXECUTE_CODE, args, report)

    return CallOutcome("tool", EXECUTE_CODE, args, "ok", result_text(report), call_id=call_id)


class _Printed:
    """What the code printed, kept up to ``cap`` characters (the rest only counted)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[str] = []
        self.kept = 0
        self.total = 0

    def __call__(self, stream: str, text: str) -> None:
        self.total += len(text)
        room = self.cap - self.kept
        if room > 0:
            piece = text[:room]
            self.parts.append(piece)
            self.kept += len(piece)

    def text(self) -> str:
        return "".join(self.parts)

    def note(self) -> str | None:
        if self.total <= self.kept:
            return None
        return (
            f"printed output cut: the code printed {self.total} characters, the first "
            f"{self.kept} are shown (codeLimits.maxOutput)"
        )


class _Execution:
    """One ``execute_code`` call: a sandbox session, driven from suspension to suspension."""

    # Most of an execution's time (bench/bench_code_mode.py turns it off to show how much).
    type_check = True

    def __init__(
        self,
        run: RunHost,
        inv: Invocation,
        inner: Contract,
        api: CodeApi,
        limits: CodeLimits,
        code: str,
    ) -> None:
        self.run = run
        # A deferred approval cannot wait for agent.resume() in the middle of running code:
        # the approval gate treats it as it does inside a helper (denied, with the reason).
        self.inv = replace(inv, record=None)
        self.inner = inner
        self.api = api
        self.limits = limits
        self.code = code
        self.calls = 0
        self.printed = _Printed(limits.max_output)
        self.by_name = {s.name: s for s in api.callables}

    async def drive(self) -> tuple[bool, Any]:
        """``(True, report)`` when the code completed, else ``(False, error text)``."""
        import pydantic_monty as pm

        sandbox = await _sandboxes()
        wait, bound = self._wait()
        if not await sandbox.slots.acquire(wait):
            return False, (
                f"no sandbox worker became free within {wait:g} s ({bound}): all "
                f"{sandbox.slots.size} were running other code, so none of this code ran"
            )
        try:
            return await self._in_sandbox(pm, sandbox)
        finally:
            sandbox.slots.release()

    def _wait(self) -> tuple[float, str]:
        """How long this execution may wait for a sandbox worker, and what sets it: the
        code's own timeout, or what is left of the run's ``timeouts.run``."""
        wait, bound = self.limits.timeout, "codeLimits.timeout"
        deadline = self.run.deadline
        if deadline is not None:
            left = deadline - asyncio.get_running_loop().time()
            if left < wait:
                wait, bound = max(left, 0.0), "what was left of timeouts.run"
        return wait, bound

    async def _in_sandbox(self, pm: Any, sandbox: _Sandboxes) -> tuple[bool, Any]:
        module = pm.ExternalModule({n: _never for n in self.by_name}, stubs=self.api.stub)
        session = sandbox.pool.checkout(
            script_name="code.py",
            limits={
                "max_feed_duration_secs": self.limits.timeout,
                "max_total_sleep_secs": self.limits.timeout,
                "max_memory": self.limits.memory,
                # A backstop: api calls are counted (and refused) below; this also ends code
                # that keeps calling after its calls were refused.
                "max_suspensions": 2 * self.limits.max_calls + 20,
            },
            type_check=self.type_check,
            type_check_format="concise",
            external_modules={"api": module},
        )
        entered = False
        try:
            await sandbox.run(self.limits.timeout, session.__enter__)
            entered = True
            snapshot = await sandbox.run(
                self.limits.timeout, session.feed_start, self.code, print_callback=self.printed
            )
            while not isinstance(snapshot, pm.MontyComplete):
                snapshot = await self._answer(pm, sandbox, snapshot)
        except pm.MontyError as error:
            return False, self._failure(describe_failure(pm, error, self.limits))
        finally:
            if entered:
                exiting = sandbox.run(self.limits.timeout, session.__exit__, None, None, None)
                await asyncio.shield(exiting)
        try:
            return True, self._report(snapshot.output)
        except _Unconvertible as problem:
            where = _last_expression_line(self.code)
            text = f"the value of the code's last expression cannot be returned: {problem}"
            return False, self._failure(f"line {where}: {text}" if where else text)

    async def _answer(self, pm: Any, sandbox: _Sandboxes, snapshot: Any) -> Any:
        """Resume ``snapshot``: an ``api`` call through the checked path, anything else as
        Monty itself answers it (imports of ``api``, refusals of the rest)."""
        name = getattr(snapshot, "function_name", None)
        if (
            isinstance(snapshot, pm.FunctionSnapshot)
            and not snapshot.is_os_function
            and isinstance(name, str)
            and name.startswith("api.")
            and name[4:] in self.by_name
        ):
            result = await self._call(self.by_name[name[4:]], snapshot)
            return await sandbox.run(self.limits.timeout, snapshot.resume, result)
        return await sandbox.run(self.limits.timeout, snapshot.resume_auto)

    async def _call(self, spec: CallableSpec, snapshot: Any) -> Mapping[str, Any]:
        """One ``api.<name>(...)`` call: the value for the code, or the exception it raises."""
        self.calls += 1
        if self.calls > self.limits.max_calls:
            limit = self.limits.max_calls
            return _raise(
                RuntimeError(f"api.{spec.name} was not called: over {limit} api calls "
                             f"(codeLimits.maxCalls)")
            )  # fmt: skip
        try:
            args = _bind(spec, _plain(list(snapshot.args)), _plain(dict(snapshot.kwargs)))
        except _Unconvertible as problem:  # raised in the code, at the line of the call
            return _raise(ValueError(f"api.{spec.name}(): an argument cannot be passed: {problem}"))
        if isinstance(args, str):
            return _raise(TypeError(f"api.{spec.name}(): {args}"))

        raw = self._source(snapshot)
        event = FinalEvent(
            BLOCK_KIND[spec.kind], spec.name, 0, {"type": spec.name, "args": args}, raw
        )

        with origin.via(VIA):
            outcome = await self.run.calls.call(self.inv, self.inner, event)
        if outcome.status == "ok":
            return {"return_value": parsed_result(outcome.result, spec.returns, self.inner.types)}
        if outcome.status == "skipped":
            return _raise(RuntimeError(f"api.{spec.name}: the application skipped this call"))
        return _raise(RuntimeError(f"api.{spec.name}: {outcome.error or 'the call failed'}"))

    def _source(self, snapshot: Any) -> str:
        """The text of the call in the code (``ctx["rawBlock"]`` for middleware)."""
        try:
            position = snapshot.position
            return self.code.encode()[position.start : position.end].decode()
        except Exception:  # a position Monty could not give: the name is enough
            return f"api.{snapshot.function_name}(...)"

    def _report(self, value: Any) -> dict[str, Any]:
        cap = self.limits.max_output
        report: dict[str, Any] = {"value": _plain(value), "printed": self.printed.text()}
        notes = [self.printed.note()]
        rendered = json.dumps(report["value"], ensure_ascii=False, default=str)
        if len(rendered) > cap:
            report["value"] = rendered[:cap]
            notes.append(
                f"value cut: its JSON has {len(rendered)} characters, the first {cap} are "
                f"shown as a string (codeLimits.maxOutput)"
            )
        found = [n for n in notes if n]
        if found:
            report["note"] = "; ".join(found)
        return report

    def _failure(self, text: str) -> str:
        printed = self.printed.text()
        if printed:
            text += f"\nprinted before the error:\n{printed}"
            note = self.printed.note()
            if note:
                text += f"\n({note})"
        return text[: self.limits.max_output]


def describe_failure(pm: Any, error: Exception, limits: CodeLimits) -> str:
    """What the model reads of a failed execution: the error and its line."""
    if isinstance(error, pm.MontyTypingError):
        found = re.sub(_TY_LOCATION, r"line \1, column \2: ", error.display().strip(), flags=re.M)
        return f"the code failed its type check (nothing ran):\n{found}"
    if isinstance(error, (pm.MontyRuntimeError, pm.MontySyntaxError)):
        frames = error.traceback()
        message = str(error.display("type-msg"))
        where = f"line {frames[-1].line}: " if frames else ""
        return where + message + _hint(message, limits)
    if isinstance(error, pm.MontyCrashedError):
        return f"the sandbox stopped ({error}); nothing more of the code ran"
    return f"the code could not run: {error}"


_TY_LOCATION = r"^[^\s:]+\.py:(\d+):(\d+): "  # compiled on first use (re caches it)


def _hint(message: str, limits: CodeLimits) -> str:
    if message.startswith("TimeoutError"):
        return f" (codeLimits.timeout is {limits.timeout:g} s)"
    if message.startswith("MemoryError"):
        return f" (codeLimits.memory is {limits.memory} bytes)"
    if message.startswith("RecursionError"):
        return " (the sandbox's recursion limit is 1000 nested calls)"
    if "suspension limit" in message:
        return f" (too many api calls: codeLimits.maxCalls is {limits.max_calls})"
    return ""


def _bind(spec: CallableSpec, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any] | str:
    """A call's positional and keyword arguments as the callable's argument object."""
    names = positional_names(spec)
    if len(args) > len(names):
        return f"takes {len(names)} positional arguments but {len(args)} were given"
    bound = dict(zip(names, args, strict=False))
    for key, value in kwargs.items():
        if key in bound:
            return f"got multiple values for argument {key!r}"
        bound[key] = value
    optional = {p["name"] for p in spec.params if p["optional"]}
    # The stub writes an optional parameter as `x: T | None = None`: None means "not given".
    return {k: v for k, v in bound.items() if not (v is None and k in optional)}


class _Unconvertible(ValueError):
    """A sandbox value the host cannot turn into JSON data; the message names the problem."""


def _plain(value: Any) -> Any:
    """A sandbox value as JSON data (tuples become lists; anything else its text).

    Raises :class:`_Unconvertible` naming the value's problem: nested too deeply for the
    host's JSON encoder, an integer too long to write in decimal, a value that contains itself.
    """
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, default=str))
    except RecursionError:
        raise _Unconvertible(
            "it is nested too deeply (lists and dicts inside each other, more levels than "
            "the host converts)"
        ) from None
    except ValueError as error:
        if "integer string conversion" in str(error):
            digits = sys.get_int_max_str_digits()
            raise _Unconvertible(
                f"it holds an integer too large (more than {digits} digits)"
            ) from None
        if "ircular reference" in str(error):
            raise _Unconvertible("it contains itself (a circular reference)") from None
        raise _Unconvertible(f"it cannot be converted to JSON ({error})") from None


def _last_expression_line(code: str) -> int | None:
    """The line where the code's last statement starts (the expression whose value is
    returned), or ``None`` when the host cannot parse the code."""
    try:
        body = ast.parse(code).body
    except (SyntaxError, ValueError, RecursionError):
        return None
    return body[-1].lineno if body else None


def _raise(error: BaseException) -> Mapping[str, Any]:
    return {"exception": error}


def _never(*args: Any, **kwargs: Any) -> Any:
    # api calls are answered in _Execution._answer; Monty never calls this itself.
    raise RuntimeError("api functions run through the agent's call path")


# ---------------------------------------------------------------------------------------------
# The worker pool (one per process, started on first use)
#
# The pool has one Monty worker per CPU. An execution first waits, without a thread, for one of
# them (:class:`_Slots`), at most its code's timeout and never past the run's deadline; every
# blocking sandbox call then runs in the pool's own threads, never the event loop's default
# executor (which sync tools, the SQLite store and DNS use: a queue of executions there would
# starve the ones that hold the workers).

#: Seconds past its own limit after which a sandbox call counts as stuck (:func:`stuck`).
STUCK_GRACE = 5.0

_SANDBOXES: _Sandboxes | None = None
_SANDBOXES_LOCK = _thread.allocate_lock()  # threading.Lock, without importing threading


class _Slots:
    """A counting semaphore that coroutines of any event loop (or thread) can wait on."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.free = size
        self._lock = _thread.allocate_lock()
        self._waiters: deque[tuple[Any, Any]] = deque()  # (loop, future), first come first

    async def acquire(self, timeout: float) -> bool:
        """Take a slot; ``False`` when none became free within ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self.free > 0 and not self._waiters:
                self.free -= 1
                return True
            waiter = (loop, loop.create_future())
            self._waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter[1], timeout)
            return True
        except BaseException as exc:
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)  # never granted
                    granted = False
                else:  # granted: given back below, unless its grant is still on its way
                    granted = waiter[1].done() and not waiter[1].cancelled()
            if granted:
                self.release()
            if isinstance(exc, asyncio.TimeoutError):
                return False
            raise

    def release(self) -> None:
        """Give a slot back: to the first waiter, else to the free count."""
        with self._lock:
            while self._waiters:
                loop, future = self._waiters.popleft()
                try:
                    loop.call_soon_threadsafe(self._grant, future)
                    return
                except RuntimeError:  # that waiter's loop has closed
                    continue
            self.free += 1

    def _grant(self, future: Any) -> None:
        if future.done():  # it stopped waiting meanwhile: the slot goes on
            self.release()
        else:
            future.set_result(None)


class _Sandboxes:
    """The process's Monty pool, its slots and its threads."""

    def __init__(self) -> None:

        import pydantic_monty as pm

        workers = os.cpu_count() or 1
        self.slots = _Slots(workers)
        # Each execution makes one blocking call at a time, and an exit may overlap the next
        # execution's start: twice the workers is enough never to queue here.
        self.threads = ThreadPoolExecutor(2 * workers + 2, thread_name_prefix="auwgent-sandbox")
        self.busy: dict[int, tuple[float, float]] = {}  # call id -> (started, its limit)
        self._ids = itertools.count()  # next() is atomic: loops in several threads share it
        pool = pm.Monty(max_processes=workers)
        pool.__enter__()
        atexit.register(pool.__exit__, None, None, None)
        atexit.register(self.threads.shutdown, wait=False, cancel_futures=True)
        self.pool = pool

    async def run(self, limit: float, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` in the pool's threads; ``limit`` is how long it may take
        (the code's timeout), for :func:`stuck`."""
        key = next(self._ids)
        self.busy[key] = (time.monotonic(), limit)
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self.threads, functools.partial(fn, *args, **kwargs))
        finally:
            del self.busy[key]


async def _sandboxes() -> _Sandboxes:
    """The process's sandboxes, started on first use (in a thread: it spawns processes)."""
    if _SANDBOXES is not None:
        return _SANDBOXES
    return await asyncio.to_thread(_start_sandboxes)


def _start_sandboxes() -> _Sandboxes:
    global _SANDBOXES
    with _SANDBOXES_LOCK:
        if _SANDBOXES is None:
            _SANDBOXES = _Sandboxes()
        return _SANDBOXES


def stuck() -> list[str]:
    """What is wrong with the sandbox workers: one line per sandbox call that has run longer
    than its limit plus :data:`STUCK_GRACE` (a worker that stopped answering). Empty when code
    mode never ran or all is well."""
    sandboxes = _SANDBOXES
    if sandboxes is None:
        return []
    now = time.monotonic()
    found = []
    for started, limit in list(sandboxes.busy.values()):
        if now - started > limit + STUCK_GRACE:
            found.append(
                f"a sandbox worker has not answered for {now - started:.0f} s (its code's "
                f"limit is {limit:g} s)"
            )
    return found
