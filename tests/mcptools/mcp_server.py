"""A real MCP server for the tests, written with the SDK's own server library (MCPServer).

    python mcp_server.py files|drifted [--http PORT]

``files`` is the server the test agents are declared against; ``drifted`` is the same server
a release later (a renamed parameter, a new required one, a changed type, a removed tool, a
changed output schema), for ``auwgent check --mcp``. Every call is appended as one JSON line
``{"tool", "args", "pid"}`` to the file named by the environment variable ``MCP_LOG`` (when
set), after a first line ``{"tool": null, "pid"}`` at start, so a test can read what the server
really received and which process received it. Without ``--http`` it serves stdio.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel


class Entry(BaseModel):
    path: str
    size: int


def _log(tool: str | None, **args: object) -> None:
    target = os.environ.get("MCP_LOG")
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.write(json.dumps({"tool": tool, "args": args, "pid": os.getpid()}) + "\n")


def files_server() -> MCPServer:
    server = MCPServer("files")

    @server.tool(description="List the entries of a folder")
    def list_dir(path: str, limit: int | None = None) -> list[Entry]:
        _log("list_dir", path=path, limit=limit)
        return [Entry(path=f"{path}/a.txt", size=3), Entry(path=f"{path}/b.txt", size=5)][
            : limit or None
        ]

    @server.tool(description="Add two numbers")
    def add(a: int, b: int = 1) -> int:
        _log("add", a=a, b=b)
        return a + b

    @server.tool(description="Delete a file")
    def delete_file(path: str) -> bool:
        _log("delete_file", path=path)
        return True

    @server.tool()
    def greet(name: str, mood: str = "calm") -> str:
        """Greet someone."""
        _log("greet", name=name, mood=mood)
        return f"Hello, {name}!"

    @server.tool(description="Always fails")
    def broken(reason: str) -> str:
        _log("broken", reason=reason)
        raise ToolError(f"broken on purpose: {reason}")

    @server.tool(description="Kills the server")
    def crash() -> str:
        _log("crash")
        os._exit(3)

    @server.tool(description="Never answers in time")
    async def slow() -> str:
        _log("slow")
        await asyncio.sleep(30)
        return "late"

    @server.tool(name="tag-file", description="A name that is not an identifier")
    def tag_file(path: str, tags: list[str] | None = None) -> str:
        _log("tag-file", path=path, tags=tags)
        return f"{path}: {', '.join(tags or [])}"

    return server


def drifted_server() -> MCPServer:
    server = MCPServer("files")

    @server.tool(description="List the entries of a folder")
    def list_dir(folder: str, limit: int | None = None) -> list[Entry]:  # `path` renamed
        return []

    @server.tool(description="Add two numbers")
    def add(a: int, b: str = "1") -> str:  # `b` and the result changed type
        return str(a) + b

    @server.tool()
    def greet(name: str, language: str, mood: str = "calm") -> str:  # new required parameter
        """Greet someone."""
        return name

    return server  # delete_file is gone


def main(argv: list[str]) -> None:
    server = {"files": files_server, "drifted": drifted_server}[argv[0]]()
    _log(None)
    if "--http" in argv:
        port = int(argv[argv.index("--http") + 1])
        server.run("streamable-http", host="127.0.0.1", port=port)
    else:
        server.run()


if __name__ == "__main__":
    main(sys.argv[1:])
