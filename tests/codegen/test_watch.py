"""``auwgent generate --watch`` driven by real file changes."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from auwgent.generate import GenerateResult, watch

AGENT = """
agent Main {
    default config {
        model: gemini("gemini-2.5-flash")
        prompt: "Hi."
    }
    tool %s(city: string): string
}
"""


def _wait(condition: Callable[[], bool], timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_a_saved_change_regenerates_and_a_syntax_error_does_not_stop_watching(
    tmp_path: Path,
) -> None:
    (tmp_path / "auwgent.yml").write_text("source: .\noutput: generated\n", encoding="utf-8")
    source = tmp_path / "main.agent"
    source.write_text(AGENT % "get_weather", encoding="utf-8")
    (tmp_path / "other.agent").write_text(AGENT % "get_time", encoding="utf-8")
    module = tmp_path / "generated" / "main_types.py"
    other = tmp_path / "generated" / "other_types.py"
    results: list[GenerateResult] = []
    stop = threading.Event()
    out, err = io.StringIO(), io.StringIO()
    thread = threading.Thread(
        target=watch,
        args=(tmp_path,),
        kwargs={"out": out, "err": err, "stop_event": stop, "debounce_ms": 50,
                "on_cycle": results.append},
    )  # fmt: skip
    thread.start()
    try:
        assert _wait(lambda: len(results) == 1), err.getvalue()
        assert "def get_weather" in module.read_text(encoding="utf-8")
        other_stamp = other.stat().st_mtime_ns
        time.sleep(0.3)  # let the watcher start before the first change

        source.write_text("agent Main {", encoding="utf-8")
        assert _wait(lambda: len(results) >= 2), out.getvalue()
        assert not results[-1].ok
        assert "def get_weather" in module.read_text(encoding="utf-8")

        # An editor that truncates first: the file is empty for a moment; nothing is deleted.
        count = len(results)
        source.write_text("", encoding="utf-8")
        assert _wait(lambda: len(results) > count), out.getvalue()
        assert not results[-1].ok and "is empty" in results[-1].errors[0]
        assert "def get_weather" in module.read_text(encoding="utf-8")

        source.write_text(AGENT % "get_forecast", encoding="utf-8")
        assert _wait(lambda: "def get_forecast" in module.read_text(encoding="utf-8"))
        assert results[-1].ok
        # Only what changed is rewritten: the other agent's bindings were left alone.
        assert other.stat().st_mtime_ns == other_stamp
        assert other not in results[-1].written
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()
    assert "changed: main.agent" in out.getvalue()
    assert out.getvalue().rstrip().endswith("stopped watching")


def test_ctrl_c_ends_the_watch_cleanly(tmp_path: Path) -> None:
    (tmp_path / "main.agent").write_text(AGENT % "get_weather", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "auwgent", "generate", "--watch", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = ""
        deadline = time.monotonic() + 30
        while "watching" not in line and time.monotonic() < deadline:
            line = proc.stdout.readline()
        assert "watching" in line
        os.kill(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert "stopped watching" in stdout
    assert (tmp_path / "generated" / "main_types.py").exists()
