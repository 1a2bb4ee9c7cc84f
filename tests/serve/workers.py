"""One ``auwgent serve`` worker process, for the tests that kill, pause and replace workers
(``test_serve_dbos.py``, ``test_serve_durable.py``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx

from servers import free_port

from .test_serve import TOKEN


class ServeWorker:
    """``auwgent serve agents --app app:config`` in ``project`` on a free port, with ``options``
    and ``env`` added; started at once, ready once :meth:`ready` returns."""

    def __init__(self, project: Path, options: Sequence[str], env: Mapping[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = [sys.executable, "-m", "auwgent", "serve", "agents", "--app", "app:config",
                "--port", str(self.port), "--token", TOKEN, *options]  # fmt: skip
        self.process = subprocess.Popen(
            args,
            cwd=project,
            env={**os.environ, "PYTHONPATH": str(project), **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def ready(self) -> ServeWorker:
        """Wait (up to 90 s) until ``/healthz`` answers; a worker that exits or never answers
        fails the test with its stderr."""
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                _, err = self.process.communicate(timeout=5)
                raise AssertionError(f"auwgent serve did not start: {err.decode()}")
            time.sleep(0.05)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def pause(self) -> None:
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """Terminate it (a paused one is resumed first), killing it after 30 s."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
