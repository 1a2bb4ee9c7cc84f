"""Code-mode engine scenarios (docs/code-mode.md): vectors ``engine/code/...``.

Each scenario's model replies with ``execute_code`` calls; both runtimes run the code in Monty
(pydantic-monty in Python, @pydantic/monty in TypeScript) and must agree on every intent, every
request (the stub in the system prompt, the results the model reads) and the session. A
scenario's optional ``"normalize"`` (``[[pattern, replacement], ...]``) is applied to its
output's JSON text by both runners: for limits whose messages carry measured numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CODE_AGENT = """
type Customer {
    id: string
    name: string
    tier: "gold" | "basic"
}
type Order {
    id: string
    total: number @desc "in cedis"
}
helper Analyst {
    description: "Analyses data"
    default config { model: openai("gpt-4o") prompt: "You analyse." }
}
agent Shop {
    default config {
        model: openai("gpt-4o")
        prompt: "You help the shop's staff."
        maxToolLoops: 4
        codeMode: true
    }
    tool find_customer(email: string): Customer @desc "Looks a customer up" @example(email = "ada@example.org")
    tool list_orders(customer_id: string): Order[]
    tool apply_discount(order_id: string, percent: number): string
    tool notify(customer_id: string, message: string): string
    tool search(query: string, limit?: number, exact: boolean): string[]
    workflow refund(order: string): string {
        description: "Refund an order"
        tool issue_refund(order: string): string
        let r = issue_refund(order)
        return "refunded " + r
    }
    helpers { Analyst }
}
"""

# The same agent without `codeMode` in its config (the runtime config turns it on).
PLAIN_AGENT = CODE_AGENT.replace("        codeMode: true\n", "")
# The same agent with `notify` gated by @approval: the code's call asks the approver.
NOTIFY = "tool notify(customer_id: string, message: string): string"
GATED_AGENT = CODE_AGENT.replace(NOTIFY, NOTIFY + " @approval")
NOTIFY_CODE = "import api\nr = api.notify(customer_id='c1', message='hi')\nr"


def _tb(kind: str, name: str | None, body: str) -> str:
    head = f"[{kind}: {name}]" if name else f"[{kind}]"
    return f"{head}\n{body}\n[/{kind}]"


ANSWER = _tb("response_text", None, "Done.")
ADA = {"id": "c1", "name": "Ada", "tier": "gold"}
ORDERS = [{"id": "o1", "total": 40}, {"id": "o2", "total": 120}]
TOOLS: dict[str, Any] = {
    "find_customer": {"return": ADA},
    "list_orders": {"return": ORDERS},
    "apply_discount": {"return": "10% off"},
    "issue_refund": {"return": "o1"},
}


def code(text: str, answer: str = ANSWER) -> list[str]:
    """Replies: one execute_code call with ``text``, then the answer."""
    return [_tb("tool_call", "execute_code", text), answer]


def guard(name: str, kind: str, on: str, **act: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": kind, "name": name, "on": on}
    if "only" in act:  # the one call type (``value["type"]``) it acts on
        out["only"] = act.pop("only")
    if "raises" in act:
        out["raises"] = act["raises"]
    else:
        out["returns"] = {k: act[k] for k in ("skip", "result") if k in act}
    return out


# Python's Monty says "feed time limit", the JavaScript binding "time limit" (docs/code-mode.md).
TIME = [
    [r"(feed )?time limit exceeded: [0-9.]+m?s > [0-9.]+m?s", "time limit exceeded: <measured>"]
]
MEMORY = [[r"memory limit exceeded: \d+ bytes > \d+ bytes", "memory limit exceeded: <measured>"]]
# The JavaScript binding's type checker (an older ty) writes `float` as `int | float`.
FLOAT = [[r"`int \| float`", "`float`"]]
# The JavaScript binding gives no line for the suspension limit (it ends the code from the host).
SUSPENSIONS = [[r"line \d+: RuntimeError: suspension limit", "RuntimeError: suspension limit"]]
# On a syntax error Python's type check also reports the `api` module as unresolved.
SYNTAX = [
    [r"line 1, column 8: error\[unresolved-import\] Cannot resolve imported module `api`\\+n", ""]
]

CHAIN = """import api
customer = api.find_customer("ada@example.org")
orders = api.list_orders(customer["id"])
biggest = max(orders, key=lambda o: o["total"])
discount = api.apply_discount(biggest["id"], 10 if customer["tier"] == "gold" else 5)
{"order": biggest["id"], "discount": discount}"""

CODE_SCENARIOS: list[tuple[str, dict[str, Any]]] = [
    # what the model is offered: execute_code and the stub (every tool implemented or not)
    ("stub/blocks", {"inputs": ["hi"], "replies": [ANSWER], "tools": TOOLS}),
    ("stub/native", {"inputs": ["hi"], "replies": [ANSWER], "tools": TOOLS, "protocol": "native"}),
    ("stub/unconfigured", {"inputs": ["hi"], "replies": [ANSWER], "tools": {}}),
    ("stub/runtime_on", {"inputs": ["hi"], "replies": [ANSWER], "tools": TOOLS,
                         "agent": "plain", "config": {"codeMode": True}}),
    ("stub/runtime_off", {"inputs": ["hi"], "replies": [ANSWER], "tools": TOOLS,
                          "config": {"codeMode": False}}),
    # the offline model speaks code mode: one program calling each implemented tool once
    ("offline/blocks", {"inputs": ["hello"], "model": "offline", "replies": [], "tools": TOOLS}),
    ("offline/native", {"inputs": ["hello"], "model": "offline", "replies": [], "tools": TOOLS,
                        "protocol": "native"}),
    ("offline/no_tools", {"inputs": ["hello"], "model": "offline", "replies": []}),
    # plain code: the value and what it printed
    ("value", {"inputs": ["sum"], "replies": code("import api\n1 + 2")}),
    ("printed", {"inputs": ["print"], "replies": code(
        "import api\nprint('hello', 'world')\nprint('x', end='')\n[1, (2, 3), {'k': None, 'n': 'é'}]")}),
    ("fenced", {"inputs": ["fence"], "replies": code("```python\n    import api\n    x = 4\n    x * x\n```")}),
    ("value/text_forms", {"inputs": ["forms"], "replies": code(
        "import api\n[{1, 2}, set(), b'a\\n\\x00\\'q', b'\"', (1, 'x'), {'k': (True, None)}]")}),
    ("no_value", {"inputs": ["assign"], "replies": code("import api\nx = 1")}),
    # inner calls through the checked call path
    ("call/one", {"inputs": ["who"], "tools": TOOLS, "replies": code(
        'import api\nc = api.find_customer("ada@example.org")\nc["name"]')}),
    ("call/chain", {"inputs": ["discount"], "tools": TOOLS, "replies": code(CHAIN)}),
    ("call/positional_keyword", {"inputs": ["search"], "tools": {"search": {"return": ["a", "b"]}},
                                 "replies": code('import api\napi.search("shoes", 3, exact=True)')}),
    ("call/optional_none", {"inputs": ["search"], "tools": {"search": {"return": ["a"]}},
                            "replies": code('import api\napi.search("shoes", None, exact=False)')}),
    ("call/too_many_positional", {"inputs": ["search"], "tools": {"search": {"return": []}},
                                  "replies": code(
        'import api\nimport json\nargs = json.loads(\'["a", 1, true]\')\ntry:\n    api.search(*args)\nexcept TypeError as e:\n    r = str(e)\nr')}),
    ("call/workflow", {"inputs": ["refund"], "tools": TOOLS, "replies": code(
        'import api\napi.refund("o1")')}),
    ("call/helper", {"inputs": ["analyse"], "tools": TOOLS, "replies": [
        _tb("tool_call", "execute_code", 'import api\napi.Analyst("sales")'),
        _tb("response_text", None, "Sales are up."), ANSWER]}),
    # with the runtime switch, the helper runs in code mode too (its own execute_code)
    ("call/helper_in_code_mode", {"inputs": ["analyse"], "tools": TOOLS, "agent": "plain",
                                  "config": {"codeMode": True}, "replies": [
        _tb("tool_call", "execute_code", 'import api\napi.Analyst("sales")'),
        _tb("tool_call", "execute_code", "import api\n'up ' + str(2 * 21)"),
        _tb("response_text", None, "Sales are up."), ANSWER]}),
    ("call/tool_raises_caught", {"inputs": ["who"],
                                 "tools": {"find_customer": {"raise": "directory down"}},
                                 "replies": code(
        'import api\ntry:\n    api.find_customer("a@b.c")\nexcept RuntimeError as e:\n    msg = str(e)\nmsg')}),
    ("call/tool_raises", {"inputs": ["who"], "tools": {"find_customer": {"raise": "directory down"}},
                          "replies": code('import api\nprint("looking")\napi.find_customer("a@b.c")')}),
    ("call/not_configured", {"inputs": ["notify"], "tools": TOOLS, "replies": code(
        'import api\napi.notify("c1", "hi")')}),
    ("call/invalid_argument", {"inputs": ["bad"], "tools": TOOLS, "replies": code(
        'import api\nimport json\napi.apply_discount("o1", json.loads(\'"ten"\'))')}),
    ("call/skipped", {"inputs": ["who"], "tools": TOOLS,
                      "guards": [guard("h1", "handler", "tool_call", skip=True, only="find_customer")],
                      "replies": code('import api\napi.find_customer("a@b.c")')}),
    ("call/override", {"inputs": ["who"], "tools": TOOLS,
                       "guards": [guard("mw", "middleware", "tool_call", only="find_customer",
                                        result={"id": "c9", "name": "Kofi", "tier": "basic"})],
                       "replies": code('import api\napi.find_customer("a@b.c")["name"]')}),
    ("call/handler_raises", {"inputs": ["who"], "tools": TOOLS,
                             "guards": [guard("h1", "handler", "tool_call", raises="guard down", only="find_customer")],
                             "replies": code('import api\napi.find_customer("a@b.c")')}),
    ("call/max_calls", {"inputs": ["many"], "tools": TOOLS, "config": {"codeLimits": {"maxCalls": 1}},
                        "replies": code(
        'import api\napi.list_orders("c1")\ntry:\n    api.list_orders("c2")\nexcept RuntimeError as e:\n    r = str(e)\nr')}),
    ("call/suspensions", {"inputs": ["many"], "tools": TOOLS, "config": {"codeLimits": {"maxCalls": 1}},
                          "normalize": SUSPENSIONS,
                          "replies": code(
        'import api\nwhile True:\n    try:\n        api.list_orders("c1")\n    except RuntimeError:\n        pass')}),
    ("call/skipped_caught", {"inputs": ["who"], "tools": TOOLS,
                             "guards": [guard("h1", "handler", "tool_call", skip=True, only="list_orders")],
                             "replies": code(
        'import api\nc = api.find_customer("a@b.c")\ntry:\n    api.list_orders(c["id"])\nexcept RuntimeError as e:\n    r = str(e)\n[c["id"], r]')}),
    ("call/alias", {"inputs": ["who"], "tools": TOOLS, "replies": code(
        'import api\nfind = api.find_customer\nfind("a@b.c")["id"]')}),
    ("call/fstring", {"inputs": ["who"], "tools": TOOLS, "replies": code(
        'import api\nf"{api.find_customer(\'a@b.c\')[\'name\']}! (api.notify)"')}),
    ("call/strings_untouched", {"inputs": ["x"], "tools": TOOLS, "replies": code(
        'import api\n# api.notify("c1", "x")\ns = "api.notify(1)" + \'\'\'api.find_customer\'\'\'\ns')}),
    ("call/raw_strings", {"inputs": ["x"], "tools": TOOLS, "replies": code(
        'import api\nr"\\"api.notify" + rb\'api.x\'.decode() + f"{{api.notify}}" + api.find_customer("a@b.c")["id"]')}),
    ("call/import_in_string", {"inputs": ["x"], "tools": TOOLS, "replies": code(
        'import api\ns = """\nimport api\n"""\nt = \'\'\'\n    import api  # api.notify\n\'\'\'\n[s, t, api.find_customer("a@b.c")["id"]]')}),
    ("call/multiple_values", {"inputs": ["search"], "tools": {"search": {"return": []}},
                              "replies": code(
        'import api\nimport json\nkw = json.loads(\'{"query": "b", "exact": true}\')\ntry:\n    api.search("a", **kw)\nexcept TypeError as e:\n    r = str(e)\nr')}),
    ("call/workflow_fails", {"inputs": ["refund"], "tools": {"issue_refund": {"raise": "ledger closed"}},
                             "replies": code('import api\napi.refund("o1")')}),
    ("call/workflow_fails_direct", {"inputs": ["refund"], "tools": {"issue_refund": {"raise": "ledger closed"}},
                                    "config": {"codeMode": False},
                                    "replies": [_tb("workflow_call", "refund", "order: o1"), ANSWER]}),
    ("call/native", {"inputs": ["who"], "tools": TOOLS, "protocol": "native", "replies": [
        {"parts": [{"call": "tool__execute_code",
                    "args": {"code": 'import api\napi.list_orders("c1")[1]["total"]'}}]}, "Done."]}),
    ("call/crlf", {"inputs": ["who"], "tools": TOOLS, "protocol": "native", "replies": [
        {"parts": [{"call": "tool__execute_code",
                    "args": {"code": 'import api\r\nc = api.find_customer("a@b.c")\r\nc["id"]'}}]}, "Done."]}),
    ("call/runtime_on", {"inputs": ["who"], "tools": TOOLS, "agent": "plain",
                         "config": {"codeMode": True}, "replies": code(
        'import api\napi.find_customer("a@b.c")["tier"]')}),
    # what the type check (against the stub) refuses before anything runs
    ("check/wrong_type", {"inputs": ["x"], "tools": TOOLS, "normalize": FLOAT, "replies": code(
        'import api\napi.apply_discount(3, "ten")')}),
    ("check/unknown_member", {"inputs": ["x"], "tools": TOOLS, "replies": code(
        'import api\napi.delete_everything()')}),
    ("check/scoped_tool", {"inputs": ["x"], "tools": TOOLS, "replies": code(
        'import api\napi.issue_refund("o1")')}),
    ("check/module", {"inputs": ["x"], "replies": code("import api\nimport socket\n1")}),
    ("check/open", {"inputs": ["x"], "replies": code("import api\nopen('/etc/passwd').read()")}),
    ("check/no_import", {"inputs": ["x"], "tools": TOOLS, "replies": code('api.find_customer("a@b.c")')}),
    ("sandbox/read_file", {"inputs": ["x"], "replies": code(
        "import api\nimport pathlib\npathlib.Path('/etc/passwd').read_text()")}),
    ("sandbox/environ", {"inputs": ["x"], "replies": code("import api\nimport os\nos.environ['HOME']")}),
    ("sandbox/dunder", {"inputs": ["x"], "replies": code("import api\n().__class__")}),
    ("sandbox/getenv", {"inputs": ["x"], "replies": code("import api\nimport os\nos.getenv('HOME')")}),
    ("empty", {"inputs": ["x"], "replies": [_tb("tool_call", "execute_code", ""), ANSWER]}),
    ("limit/output_characters", {"inputs": ["x"], "config": {"codeLimits": {"maxOutput": 5}},
                                 "replies": code("import api\nprint('é😀' * 4)\n0")}),
    # the execute_code call itself is controlled like any tool call
    ("execute/skipped", {"inputs": ["x"], "tools": TOOLS,
                         "guards": [guard("h1", "handler", "tool_call", skip=True)],
                         "replies": code("import api\n1")}),
    ("execute/override", {"inputs": ["x"], "tools": TOOLS,
                          "guards": [guard("h1", "handler", "tool_call", result="cached")],
                          "replies": code("import api\n1")}),
    # failures: the error and its line
    ("error/syntax", {"inputs": ["x"], "normalize": SYNTAX, "replies": code("import api\nx = (1,\n")}),
    ("error/runtime", {"inputs": ["x"], "replies": code("import api\na = 1\nprint('before')\nb = a / 0")}),
    ("error/name", {"inputs": ["x"], "replies": code("import api\nundefined_thing + 1")}),
    ("error/raise", {"inputs": ["x"], "replies": code("import api\nraise ValueError('bad input')")}),
    ("limit/recursion", {"inputs": ["x"], "replies": code(
        "import api\ndef f(n):\n    return f(n + 1)\nf(0)")}),
    ("limit/timeout", {"inputs": ["x"], "config": {"codeLimits": {"timeout": 0.2}},
                       "normalize": TIME, "replies": code("import api\nwhile True:\n    pass")}),
    ("limit/memory", {"inputs": ["x"], "config": {"codeLimits": {"memory": 1000000}},
                      "normalize": MEMORY, "replies": code(
        "import api\nx = []\nwhile True:\n    x.append('a' * 1000)")}),
    ("limit/output", {"inputs": ["x"], "config": {"codeLimits": {"maxOutput": 10}}, "replies": code(
        "import api\nprint('abcdefghijklmnop')\n7")}),
    ("limit/value", {"inputs": ["x"], "config": {"codeLimits": {"maxOutput": 12}}, "replies": code(
        "import api\n['abcdef', 'ghijkl']")}),
    ("limit/error_output", {"inputs": ["x"], "config": {"codeLimits": {"maxOutput": 30}},
                            "replies": code("import api\nprint('x' * 50)\n1 / 0")}),
]  # fmt: skip


# Plain Python both sandboxes run alike (docs/code-mode.md lists what the older JavaScript
# binding lacks: str.format, %-formatting, dict |, float text such as 1e+20 or 6.0).
INTERPRETER: list[tuple[str, str]] = [
    ("strings", "['a,b'.split(','), f'{3.14159:.2f}', 'Ab'.lower(), ' x '.strip()]"),
    ("sorted", "sorted([{'n': 2}, {'n': 1}], key=lambda d: d['n'])"),
    ("numbers", "[0.1 + 0.2, 7 / 2, 7 // 2, 2 ** 0.5, round(2.675, 2), 1e-7]"),
    ("json", "import json\njson.dumps({'a': 1.5, 'b': [1, 2], 'c': 'é'})"),
    ("re", "import re\nre.findall(r'\\d+', 'a1b22c333')"),
    ("datetime", "import datetime\ndatetime.date(2024, 1, 31).isoformat()"),
    ("key_error", "d = {}\nd['x']"),
    ("index_error", "[1][3]"),
    ("type_error", "1 + 'a'"),
    ("value_error", "int('x')"),
    ("math", "import math\n[math.sqrt(2), math.pi, math.floor(2.5)]"),
    ("comprehension", "x = [i * i for i in range(5) if i % 2]\n{'x': x, 'n': len(x), 'm': max(x)}"),
    ("print_values", "print(1.5, [2], {'a': None}, True)\n'ok'"),
    ("arguments", "def f(a, b=2, *args, **kw):\n    return [a, b, args, kw]\nf(1, 3, 4, z=5)"),
    ("unicode", "s = 'héllo wörld'\n[len(s), s.upper(), s[1:4], s.encode()]"),
    ("divmod", "[divmod(-7, 2), str(1 / 3)]"),
]


def code_vectors(compile_ir: Callable[[str], dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``engine/code/...`` vectors (their ``expected`` is filled in by generate.py)."""
    irs = {
        "code": compile_ir(CODE_AGENT),
        "plain": compile_ir(PLAIN_AGENT),
        "gated": compile_ir(GATED_AGENT),
    }
    out = []
    gated = [
        (f"approval/{name}", {"agent": "gated", "inputs": ["x"], "replies": code(NOTIFY_CODE),
                              "tools": {"notify": {"return": "sent"}}, **more})
        for name, more in [
            ("yes", {"approvals": {"approver": [True]}}),
            ("no", {"approvals": {"approver": [{"approved": False, "reason": "not now"}]}}),
            ("no_approver", {}),
            ("edited", {"approvals": {"approver": [
                {"approved": True, "args": {"customer_id": "c2", "message": "hi"}}]}}),
            ("defer_is_denied", {"config": {"approvals": "defer"}}),
        ]
    ]  # fmt: skip
    scenarios = (
        CODE_SCENARIOS
        + gated
        + [
            (f"interpreter/{name}", {"inputs": ["x"], "replies": code("import api\n" + program)})
            for name, program in INTERPRETER
        ]
    )
    for name, sc in scenarios:
        ir = irs[sc.get("agent", "code")]
        given = {"context": {}, **{k: v for k, v in sc.items() if k != "agent"}}
        out.append({"id": f"engine/code/{name}", "ir": ir, "scenario": given, "chunk_size": 5})
    return out
