"""Slow and gone clients of ``auwgent serve``: a real worker (a subprocess), a fake model
that streams an answer of several MB, and clients on raw sockets that send their request and
then do not read, or hang up. The worker's memory stays bounded (its peak resident size, read
from /proc), every run is saved complete, and a client that reads late gets a stream whose
final events are all there, or that ends with a clear error."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from auwgent.testing import FakeOpenAIServer, text
from servers import free_port

from .test_serve import AGENT, APP, TOKEN, headers, project, run

__all__ = ["project"]  # the fixture, shared with test_serve

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="reads a worker's memory from /proc"
)

MB = 1024 * 1024
#: The answer each run streams: about 2 MB of text, in 32 KB chunks from the fake model.
ANSWER = "\n".join(
    f"line {i}: " + ", ".join(["lorem ipsum dolor sit amet"] * 3) for i in range(22_000)
)
CHUNK = 32 * 1024
CLIENTS = 5
#: The documented bound (docs/serve.md): five clients that do not read (or hang up) add less
#: than this to the worker's peak resident size, over what the same five runs take with
#: clients that read. (Unbounded, the events of five such clients took 600 MB more.)
RSS_BOUND = 100 * MB


def answer() -> Any:
    return text(f"[response_text]\n{ANSWER}\n[/response_text]", chunk_size=CHUNK)


@contextmanager
def worker(project: Path, fake_url: str, store: str, extra: Sequence[str] = ()) -> Iterator[Any]:
    """A serve worker: yields ``(pid, port, url)`` once it answers."""
    port = free_port()
    args = [sys.executable, "-m", "auwgent", "serve", "agents", "--app", "app:config",
            "--port", str(port), "--store", store, "--token", TOKEN, *extra]  # fmt: skip
    env = {**os.environ, "FAKE_OPENAI_URL": fake_url, "PYTHONPATH": str(project)}
    process = subprocess.Popen(
        args, cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                _, err = process.communicate(timeout=5)
                raise AssertionError(f"auwgent serve did not start: {err.decode()}")
            time.sleep(0.1)
        yield process.pid, port, url
    finally:
        process.terminate()
        try:
            process.wait(timeout=90)
        except subprocess.TimeoutExpired:
            process.kill()
            raise


def memory(pid: int, field: str) -> int:
    """``VmRSS`` (resident now) or ``VmHWM`` (its peak) of a process, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def silent_client(port: int, conversation: str) -> socket.socket:
    """A client that sends a run's request and reads nothing (a small receive window)."""
    body = json.dumps({"input": "Tell me everything.", "conversation_id": conversation})
    request = (
        f"POST /v1/agents/Main/runs HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}"
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(request.encode())
    return sock


def read_late(sock: socket.socket) -> list[tuple[str, Any]]:
    """Everything the server sent on ``sock``, read to its end: the SSE events."""
    raw = bytearray()
    sock.settimeout(120)
    while chunk := sock.recv(1 << 20):
        raw += chunk
    sock.close()
    head, _, body = bytes(raw).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    data = bytearray()
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        data += rest[:size]
        body = rest[size + 2 :]
    return parse_sse(data.decode())


def parse_sse(stream: str) -> list[tuple[str, Any]]:
    events = []
    for block in stream.split("\n\n"):
        if block:
            name, data = block.split("\n", 1)
            events.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return events


def saved(url: str, conversation: str) -> dict[str, Any]:
    """The conversation's stored session, once its run has saved it (waits for the run)."""
    deadline = time.monotonic() + 600
    while True:
        stored = httpx.get(f"{url}/v1/conversations/{conversation}", headers=headers())
        if stored.status_code == 200:
            return stored.json()  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, f"the run of {conversation} was never saved"
        time.sleep(0.5)


def warm_base(url: str, pid: int) -> int:
    """The worker's resident size after one small run read to its end."""
    events = run(url, {"input": "hi"})
    assert events[-1][0] == "session"
    return memory(pid, "VmRSS")


def assert_bounded(cost: int, runs_cost: int) -> None:
    extra = cost - runs_cost
    shown = f"{cost / MB:.0f} MB, {runs_cost / MB:.0f} MB with clients that read"
    assert extra < RSS_BOUND, f"the clients added {extra / MB:.0f} MB: {shown}"


def deltas(events: list[tuple[str, Any]]) -> str:
    """The text a client adds up from the response_text partials' deltas."""
    parts = [v["value"].get("delta", "") for n, v in events if n == "partial"]
    return "".join(p for p in parts if isinstance(p, str))


@pytest.fixture(scope="module")
def runs_cost(tmp_path_factory: pytest.TempPathFactory) -> int:
    """What five runs of the answer add to a worker's peak resident size, read by clients
    that keep up (the runs' own cost, which the bound is over)."""
    folder = tmp_path_factory.mktemp("reading")
    (folder / "agents").mkdir()
    (folder / "agents" / "main.agent").write_text(AGENT, encoding="utf-8")
    (folder / "app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    script = [text("[response_text]\nhello\n[/response_text]")] + [answer()] * CLIENTS
    with (
        FakeOpenAIServer(script) as fake,
        worker(folder, fake.base_url, f"sqlite:///{folder / 's.db'}") as (pid, _, url),
    ):
        base = warm_base(url, pid)
        with ThreadPoolExecutor(CLIENTS) as pool:
            bodies = [{"input": "Tell me.", "conversation_id": f"r{i}"} for i in range(CLIENTS)]
            for events in pool.map(lambda body: run(url, body), bodies):
                assert dict(events)["response_text"] == {"text": ANSWER}
        return memory(pid, "VmHWM") - base


def test_five_clients_that_do_not_read_keep_the_worker_bounded(
    project: Path, tmp_path: Path, runs_cost: int
) -> None:
    script = [text("[response_text]\nhello\n[/response_text]")] + [answer()] * CLIENTS
    with (
        FakeOpenAIServer(script) as fake,
        worker(project, fake.base_url, f"sqlite:///{tmp_path / 's.db'}") as (pid, port, url),
    ):
        base = warm_base(url, pid)
        clients = [silent_client(port, f"silent-{i}") for i in range(CLIENTS)]
        try:
            for i in range(CLIENTS):
                session = saved(url, f"silent-{i}")
                assert session["turns"][-1]["status"] == "complete"
                assert session["turns"][-1]["output"] == ANSWER
            assert_bounded(memory(pid, "VmHWM") - base, runs_cost)
            # Read late, a client gets its partials (coalesced: the deltas add up to a prefix
            # of the answer, never a text with a hole), then every final event.
            events = read_late(clients[0])
        finally:
            for sock in clients:
                sock.close()
    names = [name for name, _ in events]
    assert names[-2:] == ["response_text", "session"], names[-5:]
    assert dict(events)["response_text"] == {"text": ANSWER}
    assert ANSWER.startswith(deltas(events))
    assert names.count("partial") < len(ANSWER) // CHUNK  # coalesced while waiting


def test_clients_that_hang_up_leave_their_runs_going_and_nothing_buffered(
    project: Path, tmp_path: Path, runs_cost: int
) -> None:
    script = [text("[response_text]\nhello\n[/response_text]")] + [answer()] * CLIENTS
    with (
        FakeOpenAIServer(script) as fake,
        worker(project, fake.base_url, f"sqlite:///{tmp_path / 's.db'}") as (pid, port, url),
    ):
        base = warm_base(url, pid)
        for i in range(CLIENTS):
            sock = silent_client(port, f"gone-{i}")
            assert sock.recv(12) == b"HTTP/1.1 200"  # the run has started
            sock.close()
        for i in range(CLIENTS):
            session = saved(url, f"gone-{i}")
            assert session["turns"][-1]["status"] == "complete"
            assert session["turns"][-1]["output"] == ANSWER
        assert_bounded(memory(pid, "VmHWM") - base, runs_cost)


def test_a_client_too_slow_for_the_final_events_gets_an_error_and_the_run_is_saved(
    project: Path, tmp_path: Path
) -> None:
    script = [answer(), text("[response_text]\nShort.\n[/response_text]")]
    store = f"sqlite:///{tmp_path / 's.db'}"
    # The second run sends the 2 MB answer back as history: a window that holds it (gpt-4o's
    # 128000 tokens would not, and the run would end before sending; docs/context.md).
    big = 'model Big {\n    provider: openai("gpt-4o")\n    contextWindow: 2000000\n}\n'
    agent = big + AGENT.replace('model: openai("gpt-4o")', "model: Big")
    (project / "agents" / "main.agent").write_text(agent, encoding="utf-8")
    with (
        FakeOpenAIServer(script) as fake,
        worker(project, fake.base_url, store, ["--stream-buffer", str(MB)]) as (_, port, url),
    ):
        sock = silent_client(port, "slow")
        try:
            session = saved(url, "slow")
            assert session["turns"][-1]["output"] == ANSWER
            events = read_late(sock)
        finally:
            sock.close()
        # A client that keeps up gets everything, whatever the bound.
        short = run(url, {"input": "again", "conversation_id": "slow"})
    names = [name for name, _ in events]
    assert names[-1] == "error" and "session" not in names  # the session did not fit
    # The finals that came before the error are whole (the first may have fit: a response
    # not held up takes any event, and the socket's own buffers take some partials).
    assert all(value == {"text": ANSWER} for name, value in events if name == "response_text")
    error = events[-1][1]
    assert error["code"] == "slow_client"
    assert f"more than {MB} bytes" in error["message"] and "saves its session" in error["message"]
    assert ANSWER.startswith(deltas(events))
    assert [n for n, _ in short][-2:] == ["response_text", "session"]
    assert len(short[-1][1]["turns"]) == 2


def test_the_stream_buffer_option_is_checked(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "auwgent", "serve", "agents", "--app", "app:config",
         "--stream-buffer", "0"],
        cwd=project, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--stream-buffer: expected a whole number of at least 1, got '0'" in done.stderr
