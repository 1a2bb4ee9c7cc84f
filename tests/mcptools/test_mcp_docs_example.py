"""docs/mcp.md's complete example against the real file-system MCP server
(``@modelcontextprotocol/server-filesystem``, installed by ``npm ci`` in tests/mcptools/node):
``auwgent check --mcp`` finds every declaration of the ``Files`` tools matching the server.

The example's ``Search`` server is a placeholder address; its declaration and tool are left
out, the ``Files`` server is launched from the local install instead of ``npx -y`` (tests do not
reach the network), everything else is the page's text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auwgent.cli import main
from test_docs_run import READ

SERVER = Path(__file__).with_name("node") / "node_modules" / ".bin" / "mcp-server-filesystem"


def _page_files() -> dict[str, str]:
    (page,) = [p for p in READ if p.name == "mcp.md"]
    return {b.marks["file"]: b.text for b in page.blocks if "file" in b.marks}


def test_the_complete_example_matches_the_file_system_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if not SERVER.exists():
        pytest.skip("the file-system MCP server is not installed: cd tests/mcptools/node && npm ci")
    files = _page_files()
    launched = (
        'command: "npx"\n    args: ["-y", "@modelcontextprotocol/server-filesystem", "./data"]'
    )
    assert launched in files["servers.agent"]
    local = f'command: {json.dumps(str(SERVER))}\n    args: ["./data"]'
    servers = files["servers.agent"].replace(launched, local)
    servers = "\n".join(line for line in servers.splitlines() if "mcp Search" not in line)
    agent = files["main.agent"].replace("import { Files, Search }", "import { Files }")
    agent = "\n".join(line for line in agent.splitlines() if "@mcp(Search)" not in line)
    assert agent.count("@mcp(Files)") == 4
    (tmp_path / "servers.agent").write_text(servers, encoding="utf-8")
    (tmp_path / "main.agent").write_text(agent, encoding="utf-8")
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)  # a launched server's working folder is the application's
    code = main(["check", "--mcp", str(tmp_path)])
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), err
    assert out.startswith("checked 2 files (1 agent)")
