"""``auwgent mcp serve`` driven by the SDK's own client, over stdio and streamable HTTP."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from auwgent.cli import main
from conftest import start

pytestmark = pytest.mark.servers

AGENT = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "Help."
    }

    output: { answer: string, notes: number }

    tool note(text: string): string

    workflow double(x: number): number {
        description: "Double a number"
        tool secret(x: number): number
        return secret(x) * 2
    }
}
"""

APP = """
from auwgent.testing.scripted import ScriptedModel


def config(name):
    model = ScriptedModel([
        ScriptedModel.call("tool__note", {"text": "remember"}),
        ScriptedModel.json({"answer": "Noted.", "notes": 1}),
    ])
    tools = {"note": lambda text: "noted " + text, "secret": lambda x: x + 1}
    return {"provider": model, "protocol": "native", "tools": tools}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "main.agent").write_text(AGENT, encoding="utf-8")
    (tmp_path / "app.py").write_text(APP, encoding="utf-8")
    return tmp_path


def command(project: Path, *extra: str) -> list[str]:
    serve = ["mcp", "serve", str(project), "--agent", "Main", "--app", "app:config", *extra]
    return [sys.executable, "-m", "auwgent", *serve]


async def test_an_sdk_client_drives_the_agent_over_stdio(project: Path) -> None:
    argv = command(project)
    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(project))
    async with Client(params, read_timeout_seconds=60) as client:
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == ["run", "double"]  # never note or secret
        double = listed.tools[1]
        assert double.description == "Double a number"
        assert double.input_schema["properties"] == {"x": {"type": "number"}}
        assert double.input_schema["required"] == ["x"]

        progress: list[dict[str, Any]] = []

        async def on_progress(number: float, total: float | None, message: str | None) -> None:
            assert message is not None
            progress.append(json.loads(message))

        result = await client.call_tool(
            "run", {"input": "Note this"}, progress_callback=on_progress
        )
        assert not result.is_error
        assert result.structured_content == {"answer": "Noted.", "notes": 1}
        assert json.loads(result.content[0].text) == {"answer": "Noted.", "notes": 1}
        assert [p["intent"] for p in progress] == ["tool_call", "tool_result", "response_schema"]
        assert progress[1]["value"]["result"] == "noted remember"
        assert all(p["agent"] == "Main" for p in progress)

        progress.clear()
        result = await client.call_tool("double", {"x": 4}, progress_callback=on_progress)
        assert not result.is_error
        assert result.content[0].text == "10"
        assert [p["intent"] for p in progress] == [
            "workflow_call",
            "tool_call",
            "tool_result",
            "workflow_result",
        ]
        result = await client.call_tool("double", {"x": "four"})
        assert result.is_error
        assert "invalid arguments for double" in result.content[0].text
        result = await client.call_tool("note", {"text": "x"})
        assert result.is_error


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_an_sdk_client_drives_the_agent_over_http(project: Path) -> None:
    port = _free_port()
    process = start(
        command(project, "--http", str(port)), port, cwd=project, stderr=subprocess.PIPE
    )
    try:
        async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=60) as client:
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == ["run", "double"]
            result = await client.call_tool("double", {"x": 20})
            assert (result.is_error, result.content[0].text) == (False, "42")
            result = await client.call_tool("run", {"input": "Note this"})
            assert result.structured_content == {"answer": "Noted.", "notes": 1}
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_serve_errors_are_clear(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    monkeypatch.syspath_prepend(str(project))
    code = main(["mcp", "serve", ".", "--agent", "Other", "--app", "app:config"])
    assert code == 2
    assert capsys.readouterr().err == "error: --agent: no agent 'Other'; the project has Main\n"
    code = main(["mcp", "serve", ".", "--agent", "Main", "--app", "nosuchmodule:x"])
    assert code == 2
    assert capsys.readouterr().err.startswith("error: --app: cannot import 'nosuchmodule'")
    (project / "main.agent").write_text(AGENT.replace("double", "run"), encoding="utf-8")
    code = main(["mcp", "serve", ".", "--agent", "Main", "--app", "app:config"])
    assert code == 2
    assert capsys.readouterr().err.startswith(
        "error: workflow `run` of Main has the name of the tool that runs the agent"
    )
    assert main(["mcp"]) == 2
