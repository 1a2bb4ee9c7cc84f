"""Real MCP servers for the MCP tests: ``mcp_server.py`` (written with the SDK's server
library) launched over stdio by the code under test, or started here on 127.0.0.1 over
streamable HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SERVER = Path(__file__).with_name("mcp_server.py")


def stdio_server(
    name: str, variant: str = "files", log: Path | None = None, *, trusted: bool = False
) -> str:
    """An ``mcp Name { ... }`` declaration launching the test server over stdio (``trusted``:
    marked ``@trusted``, so its results are not untrusted text, docs/security.md)."""
    env = f", env: {{ MCP_LOG: {json.dumps(str(log))} }}" if log else ""
    args = json.dumps([str(SERVER), variant])
    mark = " @trusted" if trusted else ""
    return f"mcp {name} {{ command: {json.dumps(sys.executable)}, args: {args}{env} }}{mark}\n"


def calls(log: Path) -> list[dict[str, Any]]:
    """What the server logged: one dict per start (``tool`` None) and per call."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the MCP test server exited with {process.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("the MCP test server did not listen")


def start(argv: list[str], port: int, **kwargs: Any) -> subprocess.Popen[bytes]:
    """A process that serves on 127.0.0.1:``port``, once it listens."""
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, **kwargs)
    try:
        _wait_for(port, process)
    except BaseException:
        process.kill()
        raise
    return process


@pytest.fixture(scope="session")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The ``files`` server over streamable HTTP: its URL and its call log."""
    log = tmp_path_factory.mktemp("mcp-http") / "calls.jsonl"
    port = _free_port()
    env = {**os.environ, "MCP_LOG": str(log)}
    process = start(
        [sys.executable, str(SERVER), "files", "--http", str(port)],
        port,
        env=env,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield f"http://127.0.0.1:{port}/mcp", log
    finally:
        process.terminate()
        process.wait(timeout=10)
