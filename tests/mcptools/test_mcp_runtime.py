"""``@mcp`` tools at run time, against the real test server (stdio and streamable HTTP).

The model is scripted; the server logs what it really received, so each test checks both the
intents the application saw and the arguments that reached the server.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from auwgent.compiler.diagnostics import render_all
from auwgent.compiler.pipeline import compile_sources
from auwgent.errors import ConfigError
from auwgent.runtime.agent import Agent, agent_from_ir
from auwgent.testing.scripted import ScriptedModel
from conftest import calls, stdio_server

pytestmark = pytest.mark.servers

AGENT = """
type Entry {
    path: string
    size: number
}

agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "Help with files."
    }

    tool list_dir(path: string, limit?: number): Entry[] @mcp(Files)
    tool greet(name: string): string @mcp(Files)
    tool broken(reason: string): string @mcp(Files)
    tool crash(): string @mcp(Files)
    tool slow(): string @mcp(Files)
    tool delete_file(path: string): boolean @mcp(Files) @approval
    tool tag_file(path: string, tags?: string[]): string @mcp(Files, "tag-file")
    tool note(text: string): string

    workflow total(a: number): number {
        description: "Add one to a number on the server."
        tool add(a: number, b?: number): number @mcp(Files)
        return add(a)
    }
}
"""


def make_agent(server: str, script: Sequence[Any], config: dict[str, Any]) -> Agent:
    result = compile_sources({"main.agent": server + AGENT})
    assert result.ok, render_all(result.diagnostics, color=False)
    model = ScriptedModel([*script, "Done."])
    return agent_from_ir(
        result.documents["main.agent"],
        {"provider": model, "protocol": "native", "tools": {"note": lambda text: text}, **config},
    )


async def run(agent: Agent) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []
    agent.on_intent(lambda name, value, agent_name: seen.append((name, value)))
    await agent.run("go")
    return seen


def results(seen: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    return [(v["name"], v["result"]) for n, v in seen if n == "tool_result"]


def errors(seen: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    return [(v["tool"], v["message"]) for n, v in seen if n == "tool_error"]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped) counts as gone
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().split(") ")[-1][0] != "Z"
    except OSError:
        return True


def call(tool: str, **args: Any) -> Any:
    return ScriptedModel.call(f"tool__{tool}", args)


async def test_calls_go_to_the_stdio_server_with_the_validated_arguments(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    script = [
        # Two calls in one response, before any connection: one server serves both.
        ScriptedModel.reply(call("list_dir", path="/data", limit=1), call("greet", name="Abena")),
        call("list_dir", limit=2),  # invalid (no path): refused before the server
        ScriptedModel.call("workflow__total", {"a": 41}),
        call("broken", reason="test"),
        call("crash"),
        call("greet", name="Ama"),  # after the crash: a new server process
    ]
    # The log path is a "secret" from the runtime config, merged over the declaration's env.
    # The server is trusted here: its results then do not make the workflow a tainted call.
    agent = make_agent(
        stdio_server("Files", trusted=True),
        script,
        {"mcp": {"Files": {"env": {"MCP_LOG": str(log)}, "timeout": 60}}},
    )
    seen = await run(agent)
    got = results(seen)
    assert sorted(got[:2]) == [
        ("greet", "Hello, Abena!"),
        ("list_dir", [{"path": "/data/a.txt", "size": 3}]),
    ]
    assert got[2:] == [
        ("add", 42),
        ("greet", "Hello, Ama!"),
    ]
    problems = errors(seen)
    assert problems[0][0] == "list_dir" and "invalid arguments" in problems[0][1]
    assert problems[1] == (
        "broken",
        "MCP server Files: tool broken answered with an error: Error executing tool broken: "
        "broken on purpose: test",
    )
    assert problems[2][0] == "crash" and problems[2][1].startswith("MCP server Files: ")
    assert len(problems) == 3
    logged = calls(log)
    received = [(c["tool"], c["args"]) for c in logged if c["tool"]]
    assert sorted(received[:2]) == [
        ("greet", {"name": "Abena", "mood": "calm"}),
        ("list_dir", {"path": "/data", "limit": 1}),
    ]
    assert received[2:] == [
        ("add", {"a": 41, "b": 1}),  # the server's own default for b
        ("broken", {"reason": "test"}),
        ("crash", {}),
        ("greet", {"name": "Ama", "mood": "calm"}),
    ]
    starts = [c["pid"] for c in logged if c["tool"] is None]
    assert len(starts) == 2  # one connection reused until the crash, then one more
    assert {c["pid"] for c in logged[:6]} == {starts[0]}
    assert alive(starts[1])
    await agent.aclose()
    deadline = time.monotonic() + 10
    while alive(starts[1]) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not alive(starts[1]), "aclose() must stop the server"


async def test_a_tool_goes_to_the_servers_own_name_for_it(tmp_path: Path) -> None:
    """``@mcp(Files, "tag-file")``: the model calls `tag_file`, the server gets `tag-file`."""
    log = tmp_path / "calls.jsonl"
    script = [call("tag_file", path="/a.txt", tags=["x", "y"])]
    agent = make_agent(
        stdio_server("Files"), script, {"mcp": {"Files": {"env": {"MCP_LOG": str(log)}}}}
    )
    seen = await run(agent)
    await agent.aclose()
    assert results(seen) == [("tag_file", "/a.txt: x, y")]
    assert [(c["tool"], c["args"]) for c in calls(log) if c["tool"]] == [
        ("tag-file", {"path": "/a.txt", "tags": ["x", "y"]})
    ]


async def test_a_gated_mcp_tool_is_denied_without_an_approver(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    agent = make_agent(
        stdio_server("Files", log=log), [call("delete_file", path="/etc/passwd")], {}
    )
    seen = await run(agent)
    assert [n for n, _ in seen if n.startswith("approval")] == [
        "approval_request",
        "approval_result",
    ]
    [verdict] = [v for n, v in seen if n == "approval_result"]
    assert verdict["approved"] is False
    assert results(seen) == []
    assert calls(log) == []  # the server was not even started
    await agent.aclose()


@pytest.mark.parametrize("trusted", [False, True])
async def test_a_servers_results_are_untrusted_unless_it_is_marked_trusted(
    tmp_path: Path, trusted: bool
) -> None:
    """The server's greeting (a value it chose) passed on to the workflow, a sink: asked
    about by default (no approver here: denied), run when the server is ``@trusted``."""
    script = [call("greet", name="Abena"), ScriptedModel.call("workflow__total", {"a": 41})]
    agent = make_agent(stdio_server("Files", trusted=trusted), script, {})
    seen = await run(agent)
    await agent.aclose()
    tainted = [v for n, v in seen if n == "tainted_call"]
    assert bool(tainted) is not trusted
    assert ("add", 42) in results(seen) if trusted else tainted[0]["action"] == "approve"


async def test_handlers_decide_mcp_calls_like_any_other(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    agent = make_agent(stdio_server("Files", log=log), [call("greet", name="Kofi")], {})
    agent.on_intent(
        lambda name, value, agent_name: {"result": "overridden"} if name == "tool_call" else None
    )
    seen = await run(agent)
    assert [v["result"] for n, v in seen if n == "tool_result"] == ["overridden"]
    assert calls(log) == []
    await agent.aclose()


async def test_a_server_that_cannot_start_gives_a_tool_error_naming_it() -> None:
    server = 'mcp Files { command: "/nonexistent/mcp-server" }\n'
    agent = make_agent(server, [call("greet", name="Ama")], {})
    started = time.monotonic()
    seen = await run(agent)
    assert time.monotonic() - started < 10
    [(tool, message)] = errors(seen)
    assert tool == "greet"
    assert message.startswith("MCP server Files: could not connect: FileNotFoundError")
    await agent.aclose()


async def test_http_server_calls_and_a_timeout(http_server: tuple[str, Path]) -> None:
    url, log = http_server
    before = len(calls(log))
    agent = make_agent(
        f'mcp Files {{ url: "{url}" }}\n',
        [call("greet", name="Esi"), call("slow"), call("greet", name="Yaw")],
        {"mcp": {"Files": {"timeout": 3, "headers": {"Authorization": "Bearer t"}}}},
    )
    started = time.monotonic()
    seen = await run(agent)
    assert time.monotonic() - started < 20
    assert results(seen) == [("greet", "Hello, Esi!"), ("greet", "Hello, Yaw!")]
    assert errors(seen) == [("slow", "MCP server Files: no answer for tool slow within 3 s")]
    logged = [(c["tool"], c["args"]) for c in calls(log)[before:]]
    assert logged == [
        ("greet", {"name": "Esi", "mood": "calm"}),
        ("slow", {}),
        ("greet", {"name": "Yaw", "mood": "calm"}),
    ]
    await agent.aclose()


def test_run_sync_closes_its_connection(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    config = {"mcp": {"Files": {"timeout": 60}}}  # a loaded machine starts Python slowly
    agent = make_agent(stdio_server("Files", log=log), [call("greet", name="Ama")], config)
    agent.run_sync("go")
    [start] = [c["pid"] for c in calls(log) if c["tool"] is None]
    deadline = time.monotonic() + 10
    while alive(start) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(start)


# ---------------------------------------------------------------------------------------------
# Start-up has its own limit

# A server that takes its time to start (slow_server.py, which the TypeScript runtime's tests
# launch too): it writes its pid, sleeps, then serves stdio.
SLOW_SERVER = Path(__file__).with_name("slow_server.py")

SLOW_AGENT = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "Greet."
    }
    tool greet(name: string): string @mcp(Slow)
}
"""


def slow_agent(tmp_path: Path, sleep: float, script: Sequence[Any], options: Any) -> Agent:
    args = json.dumps([str(SLOW_SERVER), str(sleep), str(tmp_path / "pid")])
    server = f"mcp Slow {{ command: {json.dumps(sys.executable)}, args: {args} }}\n"
    result = compile_sources({"main.agent": server + SLOW_AGENT})
    assert result.ok, render_all(result.diagnostics, color=False)
    config = {"provider": ScriptedModel([*script, "Done."]), "protocol": "native"}
    return agent_from_ir(result.documents["main.agent"], {**config, "mcp": {"Slow": options}})


async def test_a_slow_start_does_not_count_against_the_call_timeout(tmp_path: Path) -> None:
    # Starting takes longer than a call may (3 s of sleep alone against a 2 s call timeout).
    options = {"timeout": 2, "startTimeout": 120}
    script = [call("greet", name="Ama"), call("greet", name="Kofi")]
    agent = slow_agent(tmp_path, 3, script, options)
    seen = await run(agent)
    assert errors(seen) == []
    assert results(seen) == [("greet", "Hello, Ama!"), ("greet", "Hello, Kofi!")]
    await agent.aclose()


async def test_a_server_that_does_not_start_in_time_is_stopped_and_named(tmp_path: Path) -> None:
    agent = slow_agent(tmp_path, 30, [call("greet", name="Ama")], {"startTimeout": 0.5})
    seen = await run(agent)
    assert errors(seen) == [
        (
            "greet",
            "MCP server Slow: did not start within 0.5 s (launch and initialize; the limit is "
            "mcp.Slow.startTimeout)",
        )
    ]
    # The process was stopped: it is gone, or it never got as far as writing its pid.
    pid_file = tmp_path / "pid"
    deadline = time.monotonic() + 2
    while not pid_file.exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    if pid_file.exists():
        pid = int(pid_file.read_text(encoding="ascii"))
        deadline = time.monotonic() + 30
        while alive(pid) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert not alive(pid)  # it was not left sleeping behind the failed call
    await agent.aclose()


# ---------------------------------------------------------------------------------------------
# The runtime config


@pytest.mark.parametrize(
    ("mcp", "message"),
    [
        ({"Fils": {}}, "mcp.Fils: no MCP server named 'Fils' is declared; did you mean 'Files'?"),
        ({"Files": {"timeout": 0}}, "mcp.Files.timeout: expected a positive number"),
        ({"Files": {"startTimeout": "1"}}, "mcp.Files.startTimeout: expected a positive number"),
        ({"Files": {"headers": {"A": "b"}}}, "mcp.Files.headers: the server is launched"),
        ({"Files": {"env": {"A": 1}}}, "mcp.Files.env: expected an object of strings"),
        ({"Files": {"token": "x"}}, "mcp.Files.token: unknown key"),
        ([], "mcp: expected an object of servers"),
    ],
)
def test_bad_mcp_config_is_a_config_error(mcp: Any, message: str) -> None:
    with pytest.raises(ConfigError, match="^" + message.replace("(", r"\(").replace(".", r"\.")):
        make_agent(stdio_server("Files"), [], {"mcp": mcp})


def test_env_on_a_url_server_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"mcp\.Files\.env: the server is reached by url"):
        make_agent(
            'mcp Files { url: "http://127.0.0.1:9/mcp" }\n',
            [],
            {"mcp": {"Files": {"env": {"A": "b"}}}},
        )


def test_an_mcp_tool_takes_no_implementation() -> None:
    with pytest.raises(ConfigError, match="tools.greet: 'greet' is an @mcp tool"):
        make_agent(stdio_server("Files"), [], {"tools": {"greet": lambda name: name}})


def test_mcp_tools_without_the_sdk_are_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("auwgent.runtime.mcp._sdk_installed", lambda: False)
    with pytest.raises(ConfigError, match=r"^mcp: the agent has @mcp tools; install the MCP SDK"):
        make_agent(stdio_server("Files"), [], {})
