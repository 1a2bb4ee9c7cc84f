"""An MCP server that takes its time to start (a package being fetched, a cold interpreter),
for the start-up limit's tests in both runtimes.

    python slow_server.py SECONDS [PID_FILE]

It writes its pid to PID_FILE (when given), sleeps SECONDS, then serves one tool, ``greet``,
over stdio.
"""

from __future__ import annotations

import os
import sys
import time

if len(sys.argv) > 2:
    with open(sys.argv[2], "w", encoding="ascii") as out:
        out.write(str(os.getpid()))
time.sleep(float(sys.argv[1]))

from mcp.server.mcpserver import MCPServer  # noqa: E402 - after the sleep, on purpose

server = MCPServer("slow")


@server.tool(description="Greet someone")
def greet(name: str) -> str:
    return "Hello, " + name + "!"


server.run()
