"""Start ``auwgent dev`` (and plain ``auwgent serve``) as real processes on a copy of the test
project (tests/devconsole/project), on free loopback ports."""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

PROJECT = Path(__file__).parent / "project"
_URL = re.compile(r"the console is on (http://\S+)/")


class DevProcess:
    """A running ``auwgent dev``: its base URL, its folder and what it printed so far."""

    def __init__(self, process: subprocess.Popen[str], folder: Path) -> None:
        self.process = process
        self.folder = folder
        self.lines: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._drain, daemon=True).start()
        self.url = self._wait_for_url()

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))
            self._lines.put(line)
        self._lines.put(None)

    def _wait_for_url(self) -> str:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=1)
            except queue.Empty:
                continue
            if line is None:
                break
            found = _URL.search(line)
            if found:
                return found.group(1)
        self.process.kill()
        raise AssertionError("auwgent dev did not start:\n" + "\n".join(self.lines))


def copy_project(folder: Path) -> Path:
    """A fresh copy of the test project (generate writes its outputs beside it)."""
    target = folder / "project"
    shutil.copytree(PROJECT, target, ignore=shutil.ignore_patterns("generated", "__pycache__"))
    return target


@contextmanager
def dev_process(
    folder: Path, *args: str, env: Mapping[str, str] | None = None
) -> Iterator[DevProcess]:
    command = [sys.executable, "-m", "auwgent", "dev", ".", "--port", "0", "--no-open", *args]
    process = subprocess.Popen(
        command,
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(folder), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield DevProcess(process, folder)
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextmanager
def serve_process(folder: Path, port: int, *args: str) -> Iterator[str]:
    """Plain ``auwgent serve`` of the same project (its SQLite store in ``folder``)."""
    command = [sys.executable, "-m", "auwgent", "serve", ".", "--port", str(port),
               "--store", f"sqlite:///{folder / 'serve.db'}", *args]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(folder), "AUWGENT_PROVIDER": "offline"}
    process = subprocess.Popen(command, cwd=folder, env=env, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise AssertionError(f"auwgent serve did not start: {process.communicate()[1]}")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


DevFactory = Callable[..., AbstractContextManager[DevProcess]]


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[DevProcess]:
    """``auwgent dev --app app:config`` on a fresh copy of the project."""
    with dev_process(copy_project(tmp_path), "--app", "app:config") as server:
        yield server


@pytest.fixture
def start_dev(tmp_path: Path) -> DevFactory:
    """``auwgent dev`` with other arguments (and environment) on a fresh copy of the project."""

    def start(*args: str, env: Mapping[str, str] | None = None) -> Any:
        return dev_process(copy_project(tmp_path), *args, env=env)

    return start


def read_sse(response: httpx.Response) -> list[tuple[str, object]]:
    """The events of an SSE response, in order."""
    import json

    events: list[tuple[str, object]] = []
    name = ""
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            events.append((name, json.loads(line[len("data: ") :])))
    return events


def stream(url: str, path: str, body: object) -> list[tuple[str, object]]:
    """POST ``body`` as JSON to ``url + path`` and read the SSE answer."""
    with httpx.stream("POST", url + path, json=body, timeout=60) as response:
        assert response.status_code == 200, response.read()
        return read_sse(response)
