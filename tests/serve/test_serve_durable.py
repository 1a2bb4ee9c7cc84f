"""``auwgent serve``'s run lifecycle under crashes and races, with real worker processes on real
Redis and PostgreSQL: an approved call whose worker is SIGKILLed is never run twice when the
approval is re-posted to another worker; a run keeps its conversation lock for as long as it
lives; a run whose lock was taken from it ends with a conflict, unsaved."""

from __future__ import annotations

import json
import os
import select
import textwrap
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from auwgent.serve_security import conversation_key
from auwgent.testing import FakeOpenAIServer, text

from .test_serve import headers, read_sse, run
from .workers import ServeWorker

AGENT = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a helpful assistant."
    }
    tool send_email(to: string): string @approval
    tool wait_for(name: string): string
}
"""

# send_email counts its side effect in sent.txt, then, when the test made the two pipes of
# that address, says so on one and blocks on the other (the test kills the worker meanwhile).
# wait_for blocks on a pipe until the test writes to it.
APP = """
import os

HERE = os.path.dirname(os.path.abspath(__file__))

def send_email(to):
    with open(os.path.join(HERE, "sent.txt"), "a") as log:
        log.write(to + "\\n")
    entered = os.path.join(HERE, "entered-" + to)
    if os.path.exists(entered):
        with open(entered, "w") as pipe:
            pipe.write("in")
        with open(os.path.join(HERE, "release-" + to)) as pipe:
            pipe.read()
    return "sent to " + to

def wait_for(name):
    with open(os.path.join(HERE, "entered-" + name), "w") as pipe:
        pipe.write("in")
    with open(os.path.join(HERE, "release-" + name)) as pipe:
        return pipe.read()

def config(agent_name):
    return {
        "apiKeys": {"openaiApiKey": "sk-test"},
        "baseUrls": {"openai": os.environ["FAKE_OPENAI_URL"]},
        "tools": {"send_email": send_email, "wait_for": wait_for},
        "retry": {"attempts": 1},
        "approvals": "defer",
    }
"""

#: The conversation lock's time to live in these tests (seconds); renewed every third of it.
TTL = 2.0
#: Each of these many workers is SIGKILLed with this many approved calls in flight (even
#: ones inside the tool, odd ones while the model answers the call's result): 50
#: crash-and-retry approvals per store.
KILLS, IN_FLIGHT = 10, 5


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "main.agent").write_text(AGENT, encoding="utf-8")
    (tmp_path / "app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    return tmp_path


class Worker(ServeWorker):
    """One ``auwgent serve`` process on ``store`` (started at once, ready and warm once
    :meth:`ready` returns)."""

    def __init__(self, project: Path, fake_url: str, store: str) -> None:
        options = ["--store", store, "--lock-ttl", str(TTL)]
        super().__init__(project, options, {"FAKE_OPENAI_URL": fake_url})

    def ready(self) -> Worker:
        super().ready()
        return self.warm()

    def warm(self) -> Worker:
        """One run without a conversation, so that the first locked run does not also build
        the agent and import what a run uses (seconds on a loaded machine)."""
        run(self.url, {"input": "Hi"})
        return self


@contextmanager
def workers(project: Path, fake_url: str, store: str, ahead: int = 2) -> Iterator[Any]:
    """``take()`` gives a ready worker; the next ``ahead`` ones start meanwhile."""
    started: deque[Worker] = deque()
    every: list[Worker] = []

    def take() -> Worker:
        while len(started) < ahead + 1:
            started.append(Worker(project, fake_url, store))
            every.append(started[-1])
        return started.popleft().ready()

    try:
        yield take
    finally:
        for worker in every:
            worker.stop()


def pipes(project: Path, name: str) -> tuple[Path, Path]:
    entered, release = project / f"entered-{name}", project / f"release-{name}"
    os.mkfifo(entered)
    os.mkfifo(release)
    return entered, release


def wait_entered(entered: Path, timeout: float = 60) -> None:
    """Until the tool has written to its ``entered`` pipe (a select, not a sleep)."""
    fd = os.open(entered, os.O_RDONLY | os.O_NONBLOCK)
    try:
        readable, _, _ = select.select([fd], [], [], timeout)
        assert readable, f"the tool never reached {entered.name}"
        assert os.read(fd, 16) == b"in"
    finally:
        os.close(fd)


class Model:
    """The fake model: asks for send_email (or wait_for) from the user's text, answers once it
    has the call's result; an address in ``gated`` makes its answer wait for the test."""

    def __init__(self) -> None:
        self.gated: dict[str, tuple[threading.Event, threading.Event]] = {}

    def __call__(self, request: Any) -> Any:
        messages = request.body["messages"]
        said = next(
            m["content"]
            for m in reversed(messages)
            if m["role"] == "user" and "[tool_" not in json.dumps(m)
        )
        word, _, subject = said.partition(" ")
        last = json.dumps(messages[-1])
        if "[tool_" in last or messages[-1]["role"] == "tool":
            gate = self.gated.pop(subject, None)
            if gate is not None:
                gate[0].set()  # the call's result reached the model
                gate[1].wait(60)
            return text("[response_text]\nSent.\n[/response_text]")
        if word not in ("Mail", "Wait"):
            return text("[response_text]\nHello.\n[/response_text]")
        tool, arg = ("wait_for", "name") if word == "Wait" else ("send_email", "to")
        return text(f"[tool_call: {tool}]\n{arg}: {subject}\n[/tool_call]")


def post_in_background(url: str, body: dict[str, Any]) -> threading.Thread:
    """POST and read the stream in a thread (the worker may die under it)."""

    def read() -> None:
        try:
            with httpx.stream("POST", url, json=body, headers=headers(), timeout=120) as answer:
                for _ in answer.iter_bytes():
                    pass
        except httpx.HTTPError:
            pass

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def post_when_free(url: str, body: dict[str, Any]) -> list[tuple[str, Any]]:
    """POST once the conversation is free (a dead worker's lock expires within ``TTL``)."""
    deadline = time.monotonic() + 30
    while True:
        with httpx.stream("POST", url, json=body, headers=headers(), timeout=120) as answer:
            if answer.status_code == 200:
                return read_sse(answer)
            answer.read()
            assert answer.status_code == 409 and answer.json()["error"]["code"] == "busy", (
                answer.status_code,
                answer.text,
            )
        assert time.monotonic() < deadline, "the dead worker's lock never expired"
        time.sleep(0.05)


@pytest.mark.parametrize("backend", ["redis", "postgres"])
def test_an_approved_call_runs_once_whatever_worker_dies(
    project: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    store = request.getfixturevalue(f"{backend}_url")
    model = Model()
    sent = project / "sent.txt"
    stamp = time.time_ns()
    with FakeOpenAIServer(model) as fake, workers(project, fake.base_url, store) as take:
        survivor = take()
        for kill in range(KILLS):
            victim = take()
            crashes = [_Crash(project, model, victim, f"{backend}-{stamp}-{kill}-{j}", j % 2 == 0)
                       for j in range(IN_FLIGHT)]  # fmt: skip
            for crash in crashes:
                crash.approve(victim)
            for crash in crashes:
                crash.wait_in_flight()
            victim.kill()
            for crash in crashes:
                crash.check_retried(survivor, sent)
    assert len(sent.read_text().split()) == KILLS * IN_FLIGHT


class _Crash:
    """One approved call caught by a worker's death: paused, approved, retried elsewhere."""

    def __init__(
        self, project: Path, model: Model, victim: Worker, conversation: str, in_tool: bool
    ) -> None:
        self.address = f"{conversation}@example.com"
        self.conversation, self.in_tool = conversation, in_tool
        self.case = f"{conversation} ({'in the tool' if in_tool else 'after the tool'})"
        paused = run(victim.url, {"input": f"Mail {self.address}", "conversation_id": conversation})
        assert "pending_approvals" in paused[-1][1], paused
        (pending,) = paused[-1][1]["pending_approvals"]
        self.body = {"decisions": {pending["id"]: True}}
        self.endpoint = f"/v1/conversations/{conversation}/approvals"
        if in_tool:
            self.entered, _ = pipes(project, self.address)
        else:
            self.reached, self.release = threading.Event(), threading.Event()
            model.gated[self.address] = (self.reached, self.release)

    def approve(self, victim: Worker) -> None:
        post_in_background(victim.url + self.endpoint, self.body)

    def wait_in_flight(self) -> None:
        if self.in_tool:
            wait_entered(self.entered)
        else:
            assert self.reached.wait(60), f"{self.case}: the result never reached the model"

    def check_retried(self, survivor: Worker, sent: Path) -> None:
        if not self.in_tool:
            self.release.set()
        events = post_when_free(survivor.url + self.endpoint, self.body)
        case = self.case
        assert sent.read_text().split().count(self.address) == 1, case
        last = events[-1][1]["turns"][-1]
        assert last["status"] == "complete", (case, last)
        assert ("response_text", {"text": "Sent."}) in events, case
        errors = [v["message"] for n, v in events if n == "tool_error"]
        if self.in_tool:  # started, never finished: refused, never run again
            assert len(errors) == 1 and "send_email was interrupted" in errors[0], case
        else:  # finished before the crash: its saved result is used
            assert errors == [], case
        stored = httpx.get(f"{survivor.url}/v1/conversations/{self.conversation}",
                           headers=headers()).json()  # fmt: skip
        assert stored.get("status") is None and stored["pending_approvals"] == [], case
        assert "paused_context" not in stored, case


@pytest.mark.parametrize("backend", ["redis", "postgres"])
def test_a_run_keeps_its_lock_while_it_lives_and_stops_when_it_is_taken(
    project: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    store = request.getfixturevalue(f"{backend}_url")
    stamp = time.time_ns()
    with FakeOpenAIServer(Model()) as fake, workers(project, fake.base_url, store, 1) as take:
        one, two = take(), take()
        runs = f"{one.url}/v1/agents/Main/runs"
        # A run four times as long as the lock's time to live keeps its lock throughout.
        long = f"{backend}-long-{stamp}"
        entered, release = pipes(project, "long")
        reader = _Stream(runs, {"input": "Wait long", "conversation_id": long})
        wait_entered(entered)
        for _ in range(4):
            time.sleep(TTL)  # time passing is the point: the lock outlives its ttl
            again = httpx.post(f"{two.url}/v1/agents/Main/runs", headers=headers(),
                               json={"input": "Hi", "conversation_id": long})  # fmt: skip
            assert again.status_code == 409 and again.json()["error"]["code"] == "busy"
        release.write_text("done")
        events = reader.events()
        assert events[-1][1]["turns"][-1]["status"] == "complete"
        stored = httpx.get(f"{one.url}/v1/conversations/{long}", headers=headers()).json()
        assert stored["turns"][-1]["output"] == "Sent."

        # A run whose lock is taken from it stops, unsaved, with the conflict status.
        taken = f"{backend}-taken-{stamp}"
        entered, release = pipes(project, "taken")
        reader = _Stream(runs, {"input": "Wait taken", "conversation_id": taken})
        wait_entered(entered)
        _take_lock(store, taken)
        events = reader.events()
        release.write_text("done")
        last = events[-1][1]["turns"][-1]
        assert last["status"] == "conflict" and "lost its lock" in last["error"]
        assert any(n == "error" and "lost its lock" in v["message"] for n, v in events)
        assert (
            httpx.get(f"{one.url}/v1/conversations/{taken}", headers=headers()).status_code == 404
        )


class _Stream:
    """A run's SSE stream read in a thread."""

    def __init__(self, url: str, body: dict[str, Any]) -> None:
        self._events: list[tuple[str, Any]] = []
        self._done = threading.Event()

        def read() -> None:
            try:
                with httpx.stream("POST", url, json=body, headers=headers(), timeout=120) as r:
                    assert r.status_code == 200, r.read()
                    self._events = read_sse(r)
            finally:
                self._done.set()

        threading.Thread(target=read, daemon=True).start()

    def events(self) -> list[tuple[str, Any]]:
        assert self._done.wait(60), "the run never ended"
        return self._events


def _take_lock(store: str, conversation: str) -> None:
    """Another worker takes the lock (as if this one's had expired)."""
    # The bearer token's principal owns the conversation: its store key is namespaced.
    conversation = conversation_key({"tenant": "default", "user": "default"}, conversation)
    if store.startswith("redis"):
        import redis

        client = redis.Redis.from_url(store)
        client.set(f"auwgent:lock:{conversation}", "thief", px=60_000)
        client.close()
        return
    import psycopg

    with psycopg.connect(store, autocommit=True) as db:
        db.execute(
            "UPDATE auwgent_locks SET owner = 'thief', expires_at = now() + interval '60 s' "
            "WHERE key = %s",
            (conversation,),
        )
