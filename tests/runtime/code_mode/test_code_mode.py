"""Code mode through generated bindings: the scripted model writes the code, Monty runs it.

Each test gives the model's script (an ``execute_code`` call, then a final answer), runs the
agent built by the generated ``auwgent(config)`` factory, and reads back what really ran (the
tool implementations count their calls), the intents, and what reached the model next.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from auwgent.codegen.python import render_python
from auwgent.compiler.pipeline import compile_sources
from auwgent.errors import ConfigError
from auwgent.testing.scripted import ScriptedModel

SOURCE = """
type Customer {
    id: string
    name: string
    tier: "gold" | "basic"
}

type Order {
    id: string
    total: number @desc "in cedis"
}

helper DataAnalyzer {
    description: "Analyses data"
    default config {
        model: openai("gpt-4o")
        prompt: "Analyse."
    }
}

agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "Help."
        codeMode: true
    }

    config Plain {
        model: openai("gpt-4o")
        prompt: "Help."
    }

    tool find_customer(email: string): Customer @desc "Looks a customer up" @example(email = "ada@example.org")
    tool list_orders(customer_id: string): Order[]
    tool apply_discount(order_id: string, percent: number): string
    tool notify(customer_id: string, message: string): string
    tool wire_money(to: string, amount: number): string @approval
    tool search(query?: string, limit: number): string[]

    workflow refund(order: string): string {
        description: "Refund an order"
        tool issue_refund(order: string): string
        let done = issue_refund(order)
        return done
    }

    helpers {
        DataAnalyzer
    }
}
"""

DONE = "[response_text]\nDone.\n[/response_text]"


@pytest.fixture(scope="module")
def bindings(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    result = compile_sources({"main.agent": SOURCE})
    assert result.ok, [d.message for d in result.diagnostics]
    path = tmp_path_factory.mktemp("bindings") / "code_mode_main_types.py"
    path.write_text(render_python(result.documents["main.agent"]), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("code_mode_main_types", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["code_mode_main_types"] = module
    spec.loader.exec_module(module)
    return module


class Tools:
    """The tool implementations, recording what really ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

    def _note(self, name: str, **args: Any) -> None:
        self.ran.append((name, args))

    async def find_customer(self, email: str) -> dict[str, Any]:
        self._note("find_customer", email=email)
        return {"id": "c1", "name": "Ada", "tier": "gold"}

    async def list_orders(self, customer_id: str) -> list[dict[str, Any]]:
        self._note("list_orders", customer_id=customer_id)
        return [{"id": "o1", "total": 40}, {"id": "o2", "total": 120}]

    async def apply_discount(self, order_id: str, percent: float) -> str:
        self._note("apply_discount", order_id=order_id, percent=percent)
        return f"{percent}% off {order_id}"

    async def notify(self, customer_id: str, message: str) -> str:
        self._note("notify", customer_id=customer_id, message=message)
        return "sent"

    async def wire_money(self, to: str, amount: float) -> str:
        self._note("wire_money", to=to, amount=amount)
        return "wired"

    async def search(self, limit: float, query: str | None = None) -> list[str]:
        self._note("search", limit=limit, query=query)
        return [f"{query or 'all'} {i}" for i in range(int(limit))]

    async def issue_refund(self, order: str) -> str:
        self._note("issue_refund", order=order)
        return f"refunded {order}"

    def names(self) -> list[str]:
        return [name for name, _ in self.ran]


def execute(code: str) -> str:
    """The model's answer calling execute_code, as block-protocol text (fenced, as models do)."""
    body = textwrap.dedent(code).strip()
    return f"[tool_call: execute_code]\n```python\n{body}\n```\n[/tool_call]"


class Run:
    """One agent run with its intents and what the model was sent."""

    def __init__(
        self, m: ModuleType, script: Sequence[Any], tools: Tools | None = None, **config: Any
    ) -> None:
        self.tools = tools or Tools()
        self.model = ScriptedModel(list(script))
        self.agent = m.auwgent({"provider": self.model, "tools": self.tools, **config})
        self.seen: list[tuple[str, Any, str]] = []
        self.agent.on_intent(lambda name, value, who: self.seen.append((name, value, who)))
        self.session: Any = None

    async def go(self, text: str = "go") -> Run:
        self.session = await self.agent.run(text)
        return self

    def named(self, name: str) -> list[Any]:
        return [value for n, value, _ in self.seen if n == name]

    def code_result(self) -> Any:
        """The execute_code tool_result's report (the code completed)."""
        (result,) = [v for v in self.named("tool_result") if v["name"] == "execute_code"]
        return result["result"]

    def code_error(self) -> str:
        """The execute_code tool_error's message (the code failed)."""
        errors = [v for v in self.named("tool_error") if v["tool"] == "execute_code"]
        assert len(errors) == 1, self.seen
        return str(errors[0]["message"])

    def second_request(self) -> str:
        return json.dumps([m.content for m in self.model.requests[1].messages])


async def run_code(m: ModuleType, code: str, **config: Any) -> Run:
    return await Run(m, [execute(code), DONE], **config).go()


# -- what the model sees ------------------------------------------------------------------


async def test_the_model_is_offered_execute_code_and_a_typed_api_stub(bindings: ModuleType) -> None:
    run = await Run(bindings, [DONE]).go()
    request = run.model.requests[0]
    system = request.system
    assert "- execute_code(code: string" in system
    for name in ("find_customer", "list_orders", "wire_money", "refund", "DataAnalyzer"):
        assert f"- {name}(" not in system  # not offered as calls of their own
        assert f"def {name}(" in system  # but in the api stub
    assert "class Customer(TypedDict):" in system
    assert 'tier: Literal["gold"] | Literal["basic"]' in system
    assert "def find_customer(email: str) -> Customer:" in system
    assert "def list_orders(customer_id: str) -> list[Order]:" in system
    assert "def DataAnalyzer(input: str) -> str:" in system
    assert "Looks a customer up" in system  # @desc as the docstring
    assert "Example: api.find_customer(email='ada@example.org')" in system  # @example
    assert "# in cedis" in system  # field descriptions
    assert "issue_refund" not in system  # a scoped tool is never in the stub
    assert "import api" in system


async def test_an_optional_parameter_before_a_required_one_makes_it_keyword_only(
    bindings: ModuleType,
) -> None:
    run = await run_code(bindings, "import api\n[api.search(limit=2), api.search('x', limit=1)]")
    assert "def search(query: str | None = None, *, limit: float) -> list[str]:" in (
        run.model.requests[0].system
    )
    assert run.code_result()["value"] == [["all 0", "all 1"], ["x 0"]]
    assert run.tools.ran == [
        ("search", {"limit": 2, "query": None}),
        ("search", {"limit": 1, "query": "x"}),
    ]


async def test_the_block_body_is_the_code_as_is(bindings: ModuleType) -> None:
    # Unfenced and indented, with lines that would read as `name: value` or `name = value`.
    body = "    import api\n    total: float = 0\n    label = 'a: b'\n    [total, label]"
    run = await Run(bindings, [f"[tool_call: execute_code]\n{body}\n[/tool_call]", DONE]).go()
    assert run.code_result()["value"] == [0, "a: b"]
    (call,) = [v for v in run.named("tool_call") if v["type"] == "execute_code"]
    assert call["args"]["code"] == "import api\ntotal: float = 0\nlabel = 'a: b'\n[total, label]"


async def test_native_protocol_offers_one_function_with_a_code_argument(
    bindings: ModuleType,
) -> None:
    code = "import api\napi.find_customer('ada@example.org')['name']"
    script = [ScriptedModel.call("tool__execute_code", {"code": code}), "Done."]
    run = await Run(bindings, script, protocol="native").go()
    (function,) = run.model.requests[0].functions
    assert function.name == "tool__execute_code"
    assert list(function.parameters["properties"]) == ["code"]
    assert run.code_result()["value"] == "Ada"
    assert "def find_customer(email: str) -> Customer:" in run.model.requests[0].system


async def test_a_named_config_without_code_mode_offers_the_tools(bindings: ModuleType) -> None:
    run = await Run(bindings, [DONE], config="Plain").go()
    system = run.model.requests[0].system
    assert "- find_customer(email: string): Customer" in system
    assert "execute_code" not in system


async def test_the_runtime_config_turns_code_mode_off_and_on(bindings: ModuleType) -> None:
    off = await Run(bindings, [DONE], codeMode=False).go()
    assert "execute_code" not in off.model.requests[0].system
    on = await Run(bindings, [DONE], config="Plain", codeMode=True).go()
    assert "- execute_code(code: string" in on.model.requests[0].system


# -- running it ---------------------------------------------------------------------------

FIVE_STEPS = """
import api
customer = api.find_customer("ada@example.org")
orders = api.list_orders(customer["id"])
biggest = max(orders, key=lambda o: o["total"])
discount = api.apply_discount(biggest["id"], 10 if customer["tier"] == "gold" else 5)
sent = api.notify(customer_id=customer["id"], message=f"{discount} for {customer['name']}")
print("biggest order", biggest["id"])
{"order": biggest["id"], "discount": discount, "sent": sent}
"""


async def test_a_five_step_dependent_task_runs_in_one_execute_code_call(
    bindings: ModuleType,
) -> None:
    run = await run_code(bindings, FIVE_STEPS)
    assert run.tools.ran == [
        ("find_customer", {"email": "ada@example.org"}),
        ("list_orders", {"customer_id": "c1"}),
        ("apply_discount", {"order_id": "o2", "percent": 10}),
        ("notify", {"customer_id": "c1", "message": "10% off o2 for Ada"}),
    ]
    report = run.code_result()
    assert report == {
        "value": {"order": "o2", "discount": "10% off o2", "sent": "sent"},
        "printed": "biggest order o2\n",
    }
    assert len(run.model.requests) == 2  # one execution, then the answer
    inner = [v for v in run.named("tool_call") if v["type"] != "execute_code"]
    assert [v["type"] for v in inner] == [
        "find_customer",
        "list_orders",
        "apply_discount",
        "notify",
    ]
    assert all(v["via"] == "execute_code" for v in inner)
    results = [v for v in run.named("tool_result") if v["name"] != "execute_code"]
    assert len(results) == 4 and all(v["via"] == "execute_code" for v in results)
    assert results[0]["result"] == {"id": "c1", "name": "Ada", "tier": "gold"}
    # The execute_code call itself is the model's: no "via".
    outer = [v for v in run.named("tool_call") if v["type"] == "execute_code"]
    assert "via" not in outer[0]
    assert '\\"order\\":\\"o2\\"' in run.second_request()
    assert run.session["turns"][-1]["status"] == "complete"


async def test_structured_results_are_dicts_and_lists_in_the_code(bindings: ModuleType) -> None:
    code = """
    import api
    c = api.find_customer("ada@example.org")
    orders = api.list_orders(c["id"])
    [type(c).__name__, type(orders).__name__, sum(o["total"] for o in orders), c.get("tier")]
    """
    run = await run_code(bindings, code)
    assert run.code_result()["value"] == ["dict", "list", 160, "gold"]


async def test_a_workflow_and_a_helper_are_called_from_code(bindings: ModuleType) -> None:
    code = """
    import api
    done = api.refund("o1")
    summary = api.DataAnalyzer(input="orders of c1")
    [done, summary]
    """
    helper_answer = "[response_text]\nTwo orders, one large.\n[/response_text]"
    run = await Run(bindings, [execute(code), helper_answer, DONE]).go()
    assert run.code_result()["value"] == ["refunded o1", "Two orders, one large."]
    assert run.tools.names() == ["issue_refund"]
    (wf_call,) = run.named("workflow_call")
    assert wf_call == {"type": "refund", "args": {"order": "o1"}, "via": "execute_code"}
    (wf_result,) = run.named("workflow_result")
    assert wf_result["result"] == "refunded o1" and wf_result["via"] == "execute_code"
    (h_call,) = run.named("helper_call")
    assert h_call["args"] == {"input": "orders of c1"} and h_call["via"] == "execute_code"
    (h_result,) = run.named("helper_result")
    assert h_result["via"] == "execute_code"
    # The helper's own answer is its run's, not the code's.
    helper_texts = [v for n, v, who in run.seen if n == "response_text" and who == "DataAnalyzer"]
    assert helper_texts and all("via" not in v for v in helper_texts)
    # The helper's model saw the request the code passed.
    assert run.model.requests[1].messages[0].content == "orders of c1"


async def test_a_gated_tool_called_from_code_is_denied_without_an_approver(
    bindings: ModuleType,
) -> None:
    code = """
    import api
    try:
        api.wire_money("acct-9", 5000)
        outcome = "wired"
    except RuntimeError as error:
        outcome = str(error)
    outcome
    """
    run = await run_code(bindings, code)
    assert "wire_money" not in run.tools.names()
    (request,) = run.named("approval_request")
    assert request["name"] == "wire_money" and request["via"] == "execute_code"
    (decision,) = run.named("approval_result")
    assert decision["approved"] is False
    assert "wire_money was not approved" in run.code_result()["value"]


async def test_a_gated_tool_called_from_code_runs_when_approved(bindings: ModuleType) -> None:
    code = 'import api\napi.wire_money("acct-9", 50)'
    run = await run_code(bindings, code, approver=lambda request: True)
    assert run.tools.ran == [("wire_money", {"to": "acct-9", "amount": 50})]
    assert run.code_result()["value"] == "wired"


async def test_a_deferred_approval_inside_code_is_denied_not_left_pending(
    bindings: ModuleType,
) -> None:
    code = 'import api\napi.wire_money("acct-9", 50)'
    run = await run_code(bindings, code, approver=lambda request: "defer")
    assert run.tools.names() == []
    assert "cannot wait for agent.resume()" in run.code_error()
    assert run.session["turns"][-1]["status"] == "complete"


@pytest.mark.parametrize(
    "code",
    [
        'import api\napi.issue_refund("o1")',  # a workflow's scoped tool
        "import api\napi.delete_everything()",  # undeclared
        'issue_refund("o1")',  # the bare name
    ],
)
async def test_scoped_and_undeclared_names_are_unreachable(bindings: ModuleType, code: str) -> None:
    run = await run_code(bindings, 'import api\napi.find_customer("x")\n' + code)
    assert run.tools.names() == []  # the type check stops the code before anything runs
    error = run.code_error()
    assert "nothing ran" in error
    assert "delete_everything" in error or "issue_refund" in error
    assert [v["type"] for v in run.named("tool_call")] == ["execute_code"]


async def test_handlers_control_calls_made_from_code(bindings: ModuleType) -> None:
    code = """
    import api
    c = api.find_customer("ada@example.org")
    try:
        api.notify(c["id"], "hello")
        note = "sent"
    except RuntimeError as error:
        note = str(error)
    [c["name"], note]
    """
    run = Run(bindings, [execute(code), DONE])

    def control(name: str, value: Any, who: str) -> Any:
        if name == "tool_call" and value["type"] == "find_customer":
            return {"result": {"id": "c7", "name": "Kwame", "tier": "basic"}}
        if name == "tool_call" and value["type"] == "notify":
            return {"skip": True}
        return None

    run.agent.on_intent(control)
    await run.go()
    assert run.tools.names() == []  # one overridden, one skipped: neither implementation ran
    assert run.code_result()["value"] == [
        "Kwame",
        "api.notify: the application skipped this call",
    ]
    (skipped,) = run.named("tool_skipped")
    assert skipped["type"] == "notify" and skipped["via"] == "execute_code"


async def test_middleware_sees_the_call_source_as_raw_block(bindings: ModuleType) -> None:
    blocks: list[Any] = []

    class Audit:
        async def onIntent(self, name: str, value: Any, ctx: Any) -> None:  # noqa: N802
            if name == "tool_call" and value.get("via"):
                blocks.append(ctx["rawBlock"])

    code = 'import api\nname = api.find_customer(email="ada@example.org")["name"]\nname'
    await run_code(bindings, code, middleware=[Audit()])
    assert blocks == ['api.find_customer(email="ada@example.org")']


async def test_a_wrong_type_the_checker_cannot_see_is_refused_by_validation(
    bindings: ModuleType,
) -> None:
    code = """
    import api
    import json
    api.notify(json.loads("42"), "hi")
    """
    run = await run_code(bindings, code)
    assert run.tools.names() == []
    error = run.code_error()
    assert "line 3" in error and "invalid arguments for notify" in error
    (tool_error,) = [v for v in run.named("tool_error") if v["tool"] == "notify"]
    assert tool_error["via"] == "execute_code"


async def test_a_call_with_wrong_types_fails_its_type_check_and_nothing_runs(
    bindings: ModuleType,
) -> None:
    code = 'import api\napi.find_customer("ada@example.org")\napi.apply_discount(3, "ten")'
    run = await run_code(bindings, code)
    assert run.tools.names() == []
    error = run.code_error()
    assert "type check" in error and "line 3" in error and "apply_discount" in error


async def test_a_runtime_error_comes_back_with_its_line_and_printed_output(
    bindings: ModuleType,
) -> None:
    run = await run_code(bindings, 'print("before")\nx = 1\ny = x / 0\n')
    error = run.code_error()
    assert error.startswith("line 3: ZeroDivisionError")
    assert "before" in error
    assert "ZeroDivisionError" in run.second_request()


DEEP = "x = []\nfor i in range(100000):\n    x = [x]\n"
TOO_DEEP = "it is nested too deeply (lists and dicts inside each other, more levels than the host"
TOO_LONG = "it holds an integer too large (more than 4300 digits)"
LAST = "the value of the code's last expression cannot be returned"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (DEEP + "x", f"line 4: {LAST}: {TOO_DEEP}"),
        ("x = 2\n2 ** 100000", f"line 2: {LAST}: {TOO_LONG}"),
        ("d = {}\nfor i in range(100000):\n    d = {'a': d}\nd", f"line 4: {LAST}: {TOO_DEEP}"),
        # Values the type check cannot see (json.loads gives Any) reach the call: the code
        # gets a ValueError at the line of the call.
        ("import api\nimport json\nn = json.loads('1') * 10 ** 5000\napi.find_customer(n)",
         "line 4: ValueError: api.find_customer(): an argument cannot be passed: " + TOO_LONG),
        ("import api\nimport json\nx = json.loads('[]')\nfor i in range(100000):\n"
         "    x = json.loads('[]') + [x]\napi.find_customer(x)",
         "line 6: ValueError: api.find_customer(): an argument cannot be passed: " + TOO_DEEP),
    ],
    ids=["deep-list", "huge-int", "deep-dict", "huge-int-argument", "deep-argument"],
)  # fmt: skip
async def test_a_value_the_host_cannot_convert_is_named_with_its_line(
    bindings: ModuleType, code: str, expected: str
) -> None:
    run = await run_code(bindings, code)
    error = run.code_error()
    assert error.startswith(expected), error
    assert "RecursionError" not in error and "set_int_max_str_digits" not in error
    assert run.tools.names() == []  # a call whose arguments cannot be passed does not run
    assert expected in run.second_request().replace("\\", "")


async def test_the_code_may_catch_an_argument_it_cannot_pass(bindings: ModuleType) -> None:
    code = (
        "import api\nimport json\nn = json.loads('1') * 10 ** 5000\ntry:\n"
        "    api.find_customer(n)\nexcept ValueError as e:\n    print(e)\n'handled'"
    )
    run = await run_code(bindings, code)
    assert run.code_result() == {
        "value": "handled",
        "printed": f"api.find_customer(): an argument cannot be passed: {TOO_LONG}\n",
    }


async def test_api_calls_past_max_calls_do_not_run(bindings: ModuleType) -> None:
    code = """
    import api
    done = 0
    for i in range(6):
        try:
            api.notify("c1", str(i))
            done += 1
        except RuntimeError as error:
            last = str(error)
    [done, last]
    """
    run = await run_code(bindings, code, codeLimits={"maxCalls": 3})
    assert run.tools.names() == ["notify"] * 3
    done, last = run.code_result()["value"]
    assert done == 3 and "codeLimits.maxCalls" in last


# -- escape and abuse attempts --------------------------------------------------------------


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "secret.txt"
    path.write_text("TOP-SECRET-CONTENT", encoding="utf-8")
    return path


ESCAPES = {
    "open": ("open({path!r}).read()", "`open` used when not defined"),
    "os": ("import os\nos.listdir('/')", "PermissionError"),
    "os_read": ("import os\nos.read(os.open({path!r}, os.O_RDONLY), 100)", "line 2"),
    "pathlib": (
        "from pathlib import Path\nPath({path!r}).read_text()",
        "PermissionError",
    ),
    "environ": ("import os\nos.environ['CODE_MODE_SECRET']", "not supported"),
    "getenv": ("import os\nos.getenv('CODE_MODE_SECRET')", "not supported"),
    "socket": ("import socket\nsocket.create_connection(('127.0.0.1', 80))", "socket"),
    "subprocess": ("import subprocess\nsubprocess.run(['id'])", "subprocess"),
    "os_system": ("import os\nos.system('id')", "system"),
    "__import__": ("__import__('os').system('id')", "__import__"),
    "dunder_walk": (
        "[].__class__.__mro__[-1].__subclasses__()",
        "line 1",
    ),
    "builtins_walk": ("import api\napi.find_customer.__globals__['__builtins__']", "__globals__"),
}


@pytest.mark.parametrize("attempt", sorted(ESCAPES))
async def test_escape_attempts_fail_with_a_clear_error(
    bindings: ModuleType,
    attempt: str,
    secret_file: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CODE_MODE_SECRET", "ENV-SECRET-VALUE")
    template, expected = ESCAPES[attempt]
    code = template.format(path=str(secret_file))
    run = await run_code(bindings, code)
    error = run.code_error()
    assert expected in error, error
    everything = json.dumps([m.content for m in run.model.requests[1].messages])
    assert "TOP-SECRET-CONTENT" not in everything and "ENV-SECRET-VALUE" not in everything
    assert run.tools.names() == []
    assert secret_file.read_text(encoding="utf-8") == "TOP-SECRET-CONTENT"  # host unaffected
    assert run.session["turns"][-1]["status"] == "complete"  # the model was told, went on


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("while True:\n    pass", "TimeoutError"),
        ("x = 'a' * 300_000_000", "MemoryError"),
        ("x = [0] * 200_000_000", "MemoryError"),
        ("def f(n):\n    return f(n + 1)\nf(0)", "RecursionError"),
        ("import time\nwhile True:\n    time.sleep(0.5)", "sleep"),
    ],
    ids=["endless_loop", "string_bomb", "list_bomb", "deep_recursion", "sleeping_loop"],
)
async def test_resource_abuse_is_stopped_by_the_limits(
    bindings: ModuleType, code: str, expected: str
) -> None:
    limits = {"timeout": 1, "memory": 50_000_000}
    run = await run_code(bindings, code, codeLimits=limits)
    error = run.code_error()
    assert expected in error, error
    assert "line" in error or "codeLimits" in error
    # The host goes on: the next execution in the same process works.
    after = await run_code(bindings, "import api\napi.find_customer('x')['id']")
    assert after.code_result()["value"] == "c1"


async def test_printing_100_mb_is_cut_to_max_output_with_a_note(bindings: ModuleType) -> None:
    code = "for i in range(100_000):\n    print('x' * 999)\n'finished'"
    run = await run_code(bindings, code, codeLimits={"maxOutput": 20_000})
    report = run.code_result()
    assert report["value"] == "finished"
    assert len(report["printed"]) == 20_000
    assert "100000000 characters" in report["note"] and "codeLimits.maxOutput" in report["note"]
    assert len(run.second_request()) < 40_000


async def test_default_limits_are_the_documented_ones(bindings: ModuleType) -> None:
    run = Run(bindings, [DONE])
    limits = run.agent.core.options.code_limits
    assert (limits.timeout, limits.memory, limits.max_calls, limits.max_output) == (
        10,
        100_000_000,
        50,
        20_000,
    )


async def test_concurrent_executions_stay_apart(bindings: ModuleType) -> None:
    runs = [await Run(bindings, [execute(f"x = {i}\nx * 2"), DONE]).go() for i in range(2)]
    together = await asyncio.gather(
        *(Run(bindings, [execute(f"y = {i}\ny + 100"), DONE]).go() for i in range(3))
    )
    assert [r.code_result()["value"] for r in runs] == [0, 2]
    assert [r.code_result()["value"] for r in together] == [100, 101, 102]
    leak = await run_code(bindings, "x")  # a previous execution's globals are gone
    assert "`x` used when not defined" in leak.code_error()


async def test_the_offline_model_writes_code_that_calls_the_api(bindings: ModuleType) -> None:
    tools = Tools()
    agent = bindings.auwgent({"provider": "offline", "tools": tools})
    session = await agent.run("go")
    assert session["turns"][-1]["status"] == "complete"
    assert "find_customer" in tools.names() and "notify" in tools.names()
    assert "wire_money" not in tools.names()  # gated: denied without an approver


# -- construction and configuration ----------------------------------------------------------


def test_code_mode_without_the_extra_fails_at_construction(
    bindings: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pydantic_monty", None)  # the import now fails
    with pytest.raises(ConfigError) as caught:
        bindings.auwgent({"provider": ScriptedModel([DONE]), "tools": Tools()})
    assert 'pip install "auwgent[code]"' in str(caught.value)
    assert "auwgent[code]" in str(caught.value)
    # Off in the runtime config: the sandbox is not needed.
    bindings.auwgent({"provider": ScriptedModel([DONE]), "tools": Tools(), "codeMode": False})


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"codeMode": "yes"}, "codeMode: expected true or false"),
        ({"codeLimits": {"timeot": 3}}, "codeLimits.timeot: unknown config key"),
        ({"codeLimits": {"maxCalls": 0}}, "codeLimits.maxCalls: must be at least 1"),
        ({"codeLimits": {"memory": 1.5}}, "codeLimits.memory: expected an integer"),
        ({"codeLimits": 3}, "codeLimits: expected an object"),
    ],
)
def test_bad_code_config_names_the_key(
    bindings: ModuleType, config: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        bindings.auwgent({"provider": ScriptedModel([DONE]), **config})


def test_code_mode_reaches_the_ir_and_the_generated_config_type(bindings: ModuleType) -> None:
    result = compile_sources({"main.agent": SOURCE})
    ir = result.documents["main.agent"]
    configs = ir["agents"]["Main"]["configs"]
    assert configs["default"]["codeMode"] is True
    assert "codeMode" not in configs["Plain"]  # only when the config sets it
    hints = bindings.AuwgentConfig.__optional_keys__
    assert "codeMode" in hints and "codeLimits" in hints
    assert set(bindings.AuwgentCodeLimits.__optional_keys__) == {
        "timeout",
        "memory",
        "maxCalls",
        "maxOutput",
    }


def test_a_code_mode_that_is_not_a_boolean_is_a_compile_error() -> None:
    source = SOURCE.replace("codeMode: true", 'codeMode: "yes"')
    result = compile_sources({"main.agent": source})
    assert not result.ok
    (diag,) = [d for d in result.diagnostics if d.code == "E2027"]
    assert "`codeMode` must be true or false" in diag.message


def test_the_environment_is_not_changed_by_the_tests() -> None:
    assert "CODE_MODE_SECRET" not in os.environ


# -- under load -------------------------------------------------------------------------------


class SyncTools(Tools):
    """Tools that run in the event loop's default threads (sync), as most applications'."""

    def notify(self, customer_id: str, message: str) -> str:  # type: ignore[override]
        self._note("notify", customer_id=customer_id, message=message)
        return "sent"


async def test_sixteen_concurrent_executions_finish(bindings: ModuleType) -> None:
    """More executions than sandbox workers and than default threads: they queue for a worker
    (without holding a thread) and all finish."""
    code = "import api\n[api.notify(customer_id='c{i}', message=str(n)) for n in range(3)]"
    runs = [Run(bindings, [execute(code.format(i=i)), DONE], SyncTools()) for i in range(16)]
    done = await asyncio.wait_for(asyncio.gather(*(r.go() for r in runs)), 120)
    assert [r.code_result()["value"] for r in done] == [["sent"] * 3] * 16
    assert all(r.session["turns"][-1]["status"] == "complete" for r in done)


class HeldTools(Tools):
    """``notify`` holds its sandbox worker until the test lets it go."""

    def __init__(self, inside: asyncio.Event, release: asyncio.Event, holders: int) -> None:
        super().__init__()
        self.inside, self.release, self.holders = inside, release, holders

    async def notify(self, customer_id: str, message: str) -> str:
        self._note("notify", customer_id=customer_id, message=message)
        if len(self.ran) == self.holders:
            self.inside.set()
        await self.release.wait()
        return "sent"


@pytest.mark.parametrize("bound", ["codeLimits.timeout", "timeouts.run"])
async def test_executions_beyond_the_workers_wait_then_fail_clearly(
    bindings: ModuleType, bound: str
) -> None:
    workers = os.cpu_count() or 1
    inside, release = asyncio.Event(), asyncio.Event()
    tools = HeldTools(inside, release, workers)
    code = execute("import api\napi.notify(customer_id='c1', message='hi')")
    extra: dict[str, Any] = {"codeLimits": {"timeout": 1}}
    if bound == "timeouts.run":
        extra = {"codeLimits": {"timeout": 60}, "timeouts": {"run": 2}}
    holders = [Run(bindings, [code, DONE], tools) for _ in range(workers)]
    held = [asyncio.ensure_future(r.go()) for r in holders]
    await asyncio.wait_for(inside.wait(), 60)  # every worker is taken, by code in an api call
    queued = [Run(bindings, [code, DONE], Tools(), **extra) for _ in range(3)]
    await asyncio.wait_for(asyncio.gather(*(r.go() for r in queued)), 60)
    release.set()
    await asyncio.wait_for(asyncio.gather(*held), 60)
    for run in queued:
        assert run.tools.ran == []
        last = run.session["turns"][-1]
        if bound == "timeouts.run" and last["status"] == "error":  # the run's own deadline
            assert last["error"] == "TimeoutError: the run took longer than 2 s", last
            continue
        message = run.code_error()
        assert message.startswith("no sandbox worker became free within "), message
        assert f"all {workers} were running other code, so none of this code ran" in message
        what = "codeLimits.timeout" if bound == "codeLimits.timeout" else "timeouts.run"
        assert what in message
    assert [r.code_result()["value"] for r in holders] == ["sent"] * workers
