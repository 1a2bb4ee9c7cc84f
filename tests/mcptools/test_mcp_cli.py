"""``auwgent mcp import`` and ``auwgent check --mcp`` through the command's entry point, against
the real test server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auwgent.cli import main
from auwgent.compiler.diagnostics import render_all
from auwgent.compiler.pipeline import compile_sources
from conftest import calls, stdio_server

pytestmark = pytest.mark.servers

HEADER = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "Help."
    }
"""


def agent_with(tools: str, imports: str = "") -> str:
    body = "\n".join("    " + line for line in tools.splitlines() if line.startswith("tool "))
    return imports + HEADER + body + "\n}\n"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_import_writes_declarations_that_compile_and_match(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "servers.agent").write_text("export " + stdio_server("Files"), encoding="utf-8")
    code, out, err = cli(capsys, "mcp", "import", "Files", "--project", str(tmp_path))
    assert (code, err) == (0, "")
    assert (
        "tool list_dir(path: string, limit?: number): { path: string, size: number }[] "
        '@desc "List the entries of a folder" @mcp(Files)'
    ) in out
    assert 'tool add(a: number, b?: number): number @desc "Add two numbers" @mcp(Files)' in out
    # A server name that is not an identifier: declared under one made of it.
    assert (
        'tool tag_file(path: string, tags?: string[]): string @desc "A name that is not an '
        'identifier" @mcp(Files, "tag-file")'
    ) in out
    main_agent = agent_with(out, 'import { Files } from "./servers"\n')
    result = compile_sources(
        {"servers.agent": "export " + stdio_server("Files"), "main.agent": main_agent}
    )
    assert result.ok, render_all(result.diagnostics, color=False)
    tools = result.documents["main.agent"]["agents"]["Main"]["tools"]
    assert [t["name"] for t in tools] == [
        "list_dir", "add", "delete_file", "greet", "broken", "crash", "slow", "tag_file"
    ]  # fmt: skip
    assert all(t["mcp"] == "Files" for t in tools)
    assert [t.get("mcpTool") for t in tools if "mcpTool" in t] == ["tag-file"]
    (tmp_path / "main.agent").write_text(main_agent, encoding="utf-8")
    code, out, err = cli(capsys, "check", "--mcp", str(tmp_path))
    assert (code, err) == (0, ""), err
    assert out.startswith("checked 2 files (1 agent)")


def test_import_over_http_with_only_and_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], http_server: tuple[str, Path]
) -> None:
    url, _ = http_server
    (tmp_path / "main.agent").write_text(f'mcp Web {{ url: "{url}" }}\n', encoding="utf-8")
    target = tmp_path / "tools.agent.txt"
    code, out, err = cli(
        capsys, "mcp", "import", "Web", "--project", str(tmp_path), "--only", "greet,add",
        "--out", str(target),
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert out.startswith(f"wrote 2 tools of Web to {target} as tool group `WebTools`")
    lines = target.read_text(encoding="utf-8").splitlines()
    assert lines[3:] == [
        'import { Web } from "./main"',
        "",
        "export tools WebTools {",
        '    add(a: number, b?: number): number @desc "Add two numbers" @mcp(Web)',
        '    greet(name: string, mood?: string): string @desc "Greet someone." @mcp(Web)',
        "}",
    ]


def test_import_errors_are_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "main.agent").write_text(
        stdio_server("Files") + 'mcp Gone { command: "/nonexistent/mcp" }\n', encoding="utf-8"
    )
    project = str(tmp_path)
    code, _, err = cli(capsys, "mcp", "import", "Fils", "--project", project)
    assert code == 2
    assert (
        err == f"error: no `mcp Fils {{ ... }}` is declared in {project}; did you mean `Files`?\n"
    )
    code, _, err = cli(capsys, "mcp", "import", "Gone", "--project", project)
    assert code == 2
    assert err.startswith("error: MCP server Gone: could not connect: FileNotFoundError")
    assert "Traceback" not in err


DRIFTED = """
type Entry {
    path: string
    size: number
}

agent Legacy {
    default config {
        model: openai("gpt-4o")
        prompt: "Help."
    }

    tool list_dir(path: string, limit?: number): Entry[] @mcp(Old)
    tool delete_file(path: string): boolean @mcp(Old)
    tool greet(name: string, mood?: string): string @mcp(Old)

    workflow bump(a: number): number {
        description: "Add one."
        tool add(a: number, b?: number): number @mcp(Old)
        return add(a)
    }
}
"""


def test_check_mcp_reports_drift_at_the_declarations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "calls.jsonl"
    (tmp_path / "legacy.agent").write_text(
        stdio_server("Old", "drifted", log) + DRIFTED, encoding="utf-8"
    )
    code, out, err = cli(capsys, "check", str(tmp_path))
    assert (code, err) == (0, "")
    assert calls(log) == []  # without --mcp, check never starts a server
    code, out, err = cli(capsys, "check", "--mcp", str(tmp_path))
    assert code == 1
    assert out.startswith("checked 1 file (1 agent) in ") and out.endswith(": 6 errors\n")
    shown = [line for line in err.splitlines() if line.startswith(("error", " -->", "  -->"))]
    where = str(tmp_path / "legacy.agent")
    assert [
        line.split("--> ")[-1].replace(where, "F") if "-->" in line else line for line in shown
    ] == [
        "error[E2113]: MCP server `Old` requires parameter `folder` of `list_dir`, which the "
        "declaration lacks",
        "F:14:10",
        "error[E2113]: MCP server `Old` no longer takes parameter `path` of `list_dir`",
        "F:14:19",
        "error[E2113]: MCP server `Old` has no tool `delete_file` (any more)",
        "F:15:10",
        "error[E2113]: MCP server `Old` requires parameter `language` of `greet`, which the "
        "declaration lacks",
        "F:16:10",
        "error[E2113]: parameter `b` of `add` is string on MCP server `Old`",
        "F:20:29",
        "error[E2113]: `add` returns string on MCP server `Old`",
        "F:20:42",
    ]
    assert "= help: declare `folder: string`" in err
    assert len([c for c in calls(log) if c["tool"] is None]) == 1  # listed once


def test_check_mcp_reports_an_unreachable_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = 'mcp Gone { command: "/nonexistent/mcp" }\n' + HEADER
    source += "    tool ping(): string @mcp(Gone)\n}\n"
    (tmp_path / "main.agent").write_text(source, encoding="utf-8")
    code, _, err = cli(capsys, "check", "--mcp", str(tmp_path))
    assert code == 1
    assert err.startswith(
        "error[E2113]: cannot list the tools of MCP server `Gone`: could not connect: "
        "FileNotFoundError"
    )
    assert "main.agent:1:5" in err


def test_check_mcp_on_a_project_with_errors_stops_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "main.agent").write_text(
        HEADER + "    tool ping(): string @mcp(Nope)\n}\n", encoding="utf-8"
    )
    code, _, err = cli(capsys, "check", "--mcp", str(tmp_path))
    assert code == 1
    assert "error[E2111]: unknown MCP server `Nope`" in err


def test_check_mcp_follows_the_servers_own_name_of_a_tool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``@mcp(Files, "tag-file")``: the declaration is compared with the server's `tag-file`."""
    source = stdio_server("Files") + HEADER
    source += '    tool tag(path: string, tags?: string[]): string @mcp(Files, "tag-file")\n'
    source += '    tool label(path: string): string @mcp(Files, "tag-fil")\n}\n'
    (tmp_path / "main.agent").write_text(source, encoding="utf-8")
    code, _, err = cli(capsys, "check", "--mcp", str(tmp_path))
    assert code == 1
    shown = [line for line in err.splitlines() if line.startswith(("error", "  = help"))]
    assert shown == [
        "error[E2113]: MCP server `Files` has no tool `tag-fil` (any more)",
        "  = help: did you mean `tag-file`?",
    ]


def test_mcp_config_gives_the_servers_secrets_to_import_and_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--mcp-config FILE``: the runtime config's ``"mcp"`` shape; its env reaches the server."""
    log = tmp_path / "calls.jsonl"
    secrets = tmp_path / "secrets.json"
    secrets.write_text(json.dumps({"Files": {"env": {"MCP_LOG": str(log)}}}), encoding="utf-8")
    source = (
        stdio_server("Files") + HEADER + "    tool greet(name: string): string @mcp(Files)\n}\n"
    )
    (tmp_path / "main.agent").write_text(source, encoding="utf-8")
    code, out, err = cli(
        capsys, "mcp", "import", "Files", "--project", str(tmp_path), "--mcp-config", str(secrets)
    )
    assert (code, err) == (0, "")
    assert "tool greet(" in out
    code, out, err = cli(capsys, "check", "--mcp", str(tmp_path), "--mcp-config", str(secrets))
    assert (code, err) == (0, ""), err
    assert len([c for c in calls(log) if c["tool"] is None]) == 2  # each command started it

    secrets.write_text(json.dumps({"Files": {"headers": {"A": "b"}}}), encoding="utf-8")
    code, _, err = cli(capsys, "check", "--mcp", str(tmp_path), "--mcp-config", str(secrets))
    assert code == 2
    assert err == (
        f"error: --mcp-config {secrets}: mcp.Files.headers: the server is launched by command; "
        "use env instead\n"
    )
    secrets.write_text(json.dumps({"Filez": {}}), encoding="utf-8")
    code, _, err = cli(capsys, "mcp", "import", "Files", "--project", str(tmp_path),
                       "--mcp-config", str(secrets))  # fmt: skip
    assert code == 2 and "mcp.Filez: no MCP server named 'Filez' is declared" in err
    code, _, err = cli(capsys, "check", str(tmp_path), "--mcp-config", str(secrets))
    assert (code, err) == (
        2,
        "error: --mcp-config goes with --mcp (plain check starts no server)\n",
    )


def test_import_out_writes_a_module_the_project_imports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--out`` inside the source folder writes a module exporting the server's tools as a
    tool group (importing the server from its own file): the project still checks, an agent
    naming the group gets the tools, and the bindings ask the application for none of them."""
    (tmp_path / "auwgent.yml").write_text('source: "src"\n', encoding="utf-8")
    src = tmp_path / "src"
    (src / "mcp").mkdir(parents=True)
    (src / "mcp" / "servers.agent").write_text("export " + stdio_server("Files"), "utf-8")
    project = str(tmp_path)
    target = src / "tools" / "files_tools.agent"
    code, out, err = cli(
        capsys, "mcp", "import", "Files", "--project", project, "--out", str(target)
    )
    assert (code, err) == (0, "")
    assert out == (
        f"wrote 8 tools of Files to {target} as tool group `FilesTools`: import it and name it "
        "in an agent's `tools { FilesTools }`\n"
    )
    text = target.read_text(encoding="utf-8")
    assert 'import { Files } from "../mcp/servers"\n\nexport tools FilesTools {\n' in text
    assert '    add(a: number, b?: number): number @desc "Add two numbers" @mcp(Files)\n' in text
    code, out, err = cli(capsys, "check", project)
    assert (code, err) == (0, ""), err
    assert out.startswith("checked 2 files (0 agents)")
    (src / "main.agent").write_text(
        'import { FilesTools } from "./tools/files_tools"\n'
        + HEADER
        + "    tools {\n        FilesTools\n        note(text: string): string\n    }\n"
        + '    workflow total(a: number): number {\n        description: "Add one."\n'
        + "        return add(a, 1)\n    }\n}\n",
        encoding="utf-8",
    )
    code, out, err = cli(capsys, "check", "--mcp", project)
    assert (code, err) == (0, ""), err
    assert out.startswith("checked 3 files (1 agent)")
    code, out, err = cli(capsys, "generate", project)
    assert (code, err) == (0, ""), err
    document = json.loads((tmp_path / "generated" / "main.agent.json").read_text("utf-8"))
    tools = document["agents"]["Main"]["tools"]
    assert [t["name"] for t in tools] == [
        "note", "list_dir", "add", "delete_file", "greet", "broken", "crash", "slow", "tag_file"
    ]  # fmt: skip
    assert [t.get("mcp") for t in tools[1:]] == ["Files"] * 8 and "mcp" not in tools[0]
    assert sorted(document["mcp"]) == ["Files"]
    bindings = (tmp_path / "generated" / "main_types.py").read_text(encoding="utf-8")
    protocol = bindings.split("class AuwgentTools", 1)[1].split("\nclass ", 1)[0]
    assert "def note(" in protocol
    assert "def add(" not in protocol and "def list_dir(" not in protocol


def test_import_out_never_overwrites_the_server_declaration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    servers = tmp_path / "servers.agent"
    servers.write_text(stdio_server("Files"), encoding="utf-8")
    code, out, err = cli(
        capsys, "mcp", "import", "Files", "--project", str(tmp_path), "--out", str(servers)
    )
    assert (code, out) == (2, "")
    assert err.startswith(f"error: not writing {servers}: it declares `mcp Files`")
    assert servers.read_text(encoding="utf-8") == stdio_server("Files")
