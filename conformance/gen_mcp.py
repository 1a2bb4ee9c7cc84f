"""Engine scenarios with real MCP servers (``engine/mcp/...``): ``@mcp`` tools called through
the checked call path of both runtimes.

Each scenario names, in ``mcp_servers``, the servers of tests/mcptools the runner launches over
stdio (``mcp_server.py files``, the SDK-written test server; ``slow_server.py SECONDS``, one
that takes its time to start), so the two runtimes talk to the same processes and must produce
the same intents, requests and session: results shaped from the server's content, errors the
server answers, a server that dies, call and start-up timeouts, a server that cannot start.
"""

from __future__ import annotations

from typing import Any

FILES = ["mcp_server.py", "files"]

# `Away` is a URL nothing listens on: port 2 (fetch refuses to dial some low ports, 9 among
# them, which would not be a refused connection in Node).
MCP_AGENT = """
type Entry { path: string size: number }
mcp Files { command: "files-server" } @trusted
mcp Slow { command: "slow-server" } @trusted
mcp Gone { command: "/nonexistent/mcp-server" } @trusted
mcp Away { url: "http://127.0.0.1:2/mcp" } @trusted
agent Main {
    default config { model: openai("gpt-4o") prompt: "You help {{ctx.name}} with files." }
    context { name: string }
    tool list_dir(path: string, limit?: number): Entry[] @desc "List a folder" @mcp(Files)
    tool greet(name: string): string @mcp(Files)
    tool broken(reason: string): string @mcp(Files)
    tool crash(): string @mcp(Files)
    tool slow(): string @mcp(Files)
    tool delete_file(path: string): boolean @mcp(Files)
    tool tag_file(path: string, tags?: string[]): string @mcp(Files, "tag-file")
    tool hello(name: string): string @mcp(Slow, "greet")
    tool vanish(name: string): string @mcp(Gone, "greet")
    tool reach(name: string): string @mcp(Away, "greet")
    tool note(text: string): string
    workflow total(a: number): number {
        description: "Add one to a number on the server."
        tool add(a: number, b?: number): number @mcp(Files)
        return add(a)
    }
    workflow late(): string {
        description: "Waits on the slow tool."
        return slow()
    }
}
"""

# The same server's tools declared with types that do not fit what it answers.
TYPED_AGENT = """
mcp Files { command: "files-server" } @trusted
agent Main {
    default config { model: openai("gpt-4o") prompt: "You help {{ctx.name}}." }
    context { name: string }
    tool greet(name: string): number @mcp(Files)
    tool list_dir(path: string, limit?: number): string @mcp(Files)
    tool add(a: number, b?: number): string @mcp(Files)
    tool delete_file(path: string): { ok: boolean } @mcp(Files)
}
"""


def _tb(kind: str, name: str | None, body: str) -> str:
    head = f"[{kind}: {name}]" if name else f"[{kind}]"
    return f"{head}\n{body}\n[/{kind}]"


def _call(name: str, body: str = "") -> str:
    return _tb("tool_call", name, body)


def _native(tool: str, **args: Any) -> dict[str, Any]:
    return {"parts": [{"call": f"tool__{tool}", "args": args}]}


ANSWER = _tb("response_text", None, "Done.")
DRIFTED = {"Files": ["mcp_server.py", "drifted"]}
SLOW_FIRST = {"Files": FILES, "Slow": ["slow_server.py", "3"]}

# (name, agent, scenario): at most one call per response (calls of one response run together).
MCP_SCENARIOS: list[tuple[str, str, dict[str, Any]]] = [
    ("greet", "main", {"replies": [_call("greet", "name: Ama"), ANSWER]}),
    ("structured", "main", {"replies": [_call("list_dir", "path: /data\nlimit: 1"), ANSWER]}),
    ("structured_all", "main", {"replies": [_call("list_dir", "path: /srv"), ANSWER]}),
    ("invalid_args", "main", {"replies": [_call("list_dir", "limit: 2"), _call("greet", "name: Kofi"), ANSWER]}),
    ("boolean", "main", {"replies": [_call("delete_file", "path: /tmp/x"), ANSWER]}),
    ("own_name", "main", {"replies": [_call("tag_file", 'path: /a.txt\ntags: ["x", "y"]'), ANSWER]}),
    ("error_result", "main", {"replies": [_call("broken", "reason: test"), ANSWER]}),
    ("crash_then_restart", "main", {"replies": [_call("crash"), _call("greet", "name: Esi"), ANSWER]}),
    ("call_timeout", "main", {"replies": [_call("slow"), _call("greet", "name: Yaw"), ANSWER],
                              "config": {"mcp": {"Files": {"timeout": 3}}}}),
    ("workflow", "main", {"replies": [_tb("workflow_call", "total", "a: 41"), ANSWER]}),
    ("workflow_timeout", "main", {"replies": [_tb("workflow_call", "late", ""), ANSWER],
                                  "config": {"mcp": {"Files": {"timeout": 3}}}}),
    ("two_runs", "main", {"inputs": ["one", "two"],
                          "replies": [_call("greet", "name: Ama"), ANSWER, _call("greet", "name: Kofi"), ANSWER]}),
    ("mixed_with_local", "main", {"replies": [_call("note", "text: first"), _call("greet", "name: Abena"), ANSWER],
                                  "tools": {"note": {"return": "noted"}}}),
    ("skipped_by_handler", "main", {"replies": [_call("greet", "name: Ama"), ANSWER],
                                    "guards": [{"kind": "handler", "name": "h", "on": "tool_call", "returns": {"skip": True}}]}),
    ("result_by_middleware", "main", {"replies": [_call("list_dir", "path: /x"), ANSWER],
                                      "guards": [{"kind": "middleware", "name": "mw", "on": "tool_call",
                                                  "returns": {"result": [{"path": "cached", "size": 0}]}}]}),
    ("cannot_start", "main", {"replies": [_call("vanish", "name: Ama"), ANSWER]}),
    ("url_refused", "main", {"replies": [_call("reach", "name: Ama"), ANSWER]}),
    ("slow_start", "main", {"replies": [_call("hello", "name: Ama"), _call("hello", "name: Kofi"), ANSWER],
                            "config": {"mcp": {"Slow": {"timeout": 2, "startTimeout": 60}}}, "mcp_servers": SLOW_FIRST}),
    ("start_timeout", "main", {"replies": [_call("hello", "name: Ama"), ANSWER],
                               "config": {"mcp": {"Slow": {"startTimeout": 0.5}}},
                               "mcp_servers": {"Files": FILES, "Slow": ["slow_server.py", "30"]}}),
    ("native_greet", "main", {"protocol": "native", "replies": [_native("greet", name="Ama"), "Hi."]}),
    ("native_structured", "main", {"protocol": "native", "replies": [_native("list_dir", path="/d", limit=2), "Two."]}),
    ("native_error", "main", {"protocol": "native", "replies": [_native("broken", reason="native"), "Sorry."]}),
    ("native_workflow", "main", {"protocol": "native",
                                 "replies": [{"parts": [{"call": "workflow__total", "args": {"a": 1}}]}, "Two."]}),
    # The server a release later (tests/mcptools/mcp_server.py drifted), which no longer has a
    # declared tool (`auwgent check --mcp` reports it before a run). Its answers to renamed or
    # new parameters quote its validation library's version, so they are not vectors.
    ("drifted_tool_gone", "main", {"replies": [_call("delete_file", "path: /tmp/x"), ANSWER], "mcp_servers": DRIFTED}),
    ("typed_number_from_text", "typed", {"replies": [_call("greet", "name: Ama"), ANSWER]}),
    ("typed_string_from_list", "typed", {"replies": [_call("list_dir", "path: /p\nlimit: 1"), ANSWER]}),
    ("typed_string_from_number", "typed", {"replies": [_call("add", "a: 2\nb: 3"), ANSWER]}),
    ("typed_object_from_boolean", "typed", {"replies": [_call("delete_file", "path: /q"), ANSWER]}),
]  # fmt: skip


def mcp_vectors(compile_ir: Any) -> list[dict[str, Any]]:
    """The ``engine/mcp/...`` vectors (``compile_ir``: generate.py's source-to-IR)."""
    irs = {"main": compile_ir(MCP_AGENT), "typed": compile_ir(TYPED_AGENT)}
    out = []
    for name, agent, sc in MCP_SCENARIOS:
        scenario = {
            "inputs": ["go"],
            "context": {"name": "Ama"},
            "mcp_servers": {"Files": FILES},
            **sc,
        }
        out.append(
            {"id": f"engine/mcp/{name}", "ir": irs[agent], "scenario": scenario, "chunk_size": 5}
        )
    return out
