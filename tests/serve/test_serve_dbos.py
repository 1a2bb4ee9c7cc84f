"""``auwgent serve --durable dbos`` with real worker processes on a real PostgreSQL: a worker
SIGKILLed in the middle of runs loses none of them, repeats no completed model request and
no completed tool call; a client that lost its stream reads on from any worker with
``Last-Event-ID``."""

from __future__ import annotations

import json
import random
import textwrap
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from auwgent.testing import FakeOpenAIServer, stall, text

from .test_serve import TOKEN, headers
from .workers import ServeWorker

pytestmark = pytest.mark.servers

AGENT = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a helpful assistant."
    }
    tool record(run: string, round: number): string
}
"""

# record's side effect is a row keyed by its idempotency key (so an attempt that repeats an
# interrupted call adds none); every attempt is also a line of attempts.txt. The first
# attempt of a call the test chose to interrupt waits there until the worker is killed.
APP = """
import os
import time

import psycopg

HERE = os.path.dirname(os.path.abspath(__file__))

def record(run, round, idempotency_key=None):
    with open(os.path.join(HERE, "attempts.txt"), "a") as log:
        log.write(f"{run} {round} {idempotency_key}\\n")
    with psycopg.connect(os.environ["EFFECTS_URL"], autocommit=True) as conn:
        conn.execute(
            "INSERT INTO effects (key, run, round) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
            (idempotency_key, run, round),
        )
    hold = os.path.join(HERE, f"hold-{run}-{round}")
    if os.path.exists(hold):
        os.remove(hold)
        with open(os.path.join(HERE, f"held-{run}-{round}"), "w"):
            pass
        time.sleep(30)
    return f"recorded {run} {round}"

def config(agent_name):
    return {
        "apiKeys": {"openaiApiKey": "sk-test"},
        "baseUrls": {"openai": os.environ["FAKE_OPENAI_URL"]},
        "tools": {"record": record},
        "retry": {"attempts": 1},
        "timeouts": {"firstByte": 120, "idle": 120, "call": 120},
    }
"""

ROUNDS = 3  # tool rounds per run, then the answer
TTL = 1.5  # --worker-ttl: a killed worker's runs move after this long
#: Each round, this many runs are held at their points on the victim, which is then killed
#: (it executes them all at once: --durable-concurrency).
KILL_ROUNDS, RUNS_PER_KILL = 2, 25


class Model:
    """The fake model's script: run R's request k (k tool results so far) calls record(R, k),
    the fourth answers. Requests are counted per (run, k); the first request of each (run, k)
    the test chose stalls (before its first byte, or mid-stream) until the worker dies."""

    def __init__(self) -> None:
        self.sent: Counter[tuple[str, int]] = Counter()
        self.stall: dict[tuple[str, int], str] = {}  # (run, k) -> "before" | "stream"
        self.stalled: set[tuple[str, int]] = set()
        self.lock = threading.Lock()

    def __call__(self, request: Any) -> Any:
        messages = request.body["messages"]
        run = next(m["content"] for m in messages if m["role"] == "user").split()[-1]
        k = sum(1 for m in messages if "[tool_result" in json.dumps(m) and m["role"] != "system")
        with self.lock:
            self.sent[run, k] += 1
            first = self.sent[run, k] == 1
        answer = (
            text("[response_text]\nAll recorded.\n[/response_text]", chunk_size=4)
            if k >= ROUNDS
            else text(
                f'[tool_call: record]\n{{"run": "{run}", "round": {k}}}\n[/tool_call]',
                chunk_size=4,
            )
        )
        where = self.stall.get((run, k))
        if first and where is not None:
            with self.lock:
                self.stalled.add((run, k))
            return stall(30, after_chunks=None if where == "before" else 3, reply=answer)
        return answer


class Worker(ServeWorker):
    def __init__(self, project: Path, fake: str, pg: str) -> None:
        options = ["--store", pg, "--durable", "dbos", "--worker-ttl", str(TTL),
                   "--durable-concurrency", str(RUNS_PER_KILL)]  # fmt: skip
        super().__init__(project, options, {"FAKE_OPENAI_URL": fake, "EFFECTS_URL": pg})


class Client(threading.Thread):
    """Reads one run's events from ``first``; when the stream drops, reconnects to ``then``
    with the last event id it saw, until the ``session`` event."""

    def __init__(self, first: str, then: list[str], run: str) -> None:
        super().__init__(daemon=True)
        self.first, self.then, self.run_tag = first, then, run
        self.events: list[tuple[int, str, Any]] = []
        self.run_id = ""
        self.reconnects = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            body = {"input": f"record {self.run_tag}", "conversation_id": self.run_tag}
            with httpx.stream(
                "POST", f"{self.first}/v1/agents/Main/runs", json=body, headers=headers(TOKEN),
                timeout=httpx.Timeout(10, read=None),
            ) as response:  # fmt: skip
                assert response.status_code == 200, response.read()
                self.run_id = response.headers["x-auwgent-run"]
                self.read(response)
            while not self.done():
                self.reconnects += 1
                url = self.then[0]
                last = str(self.events[-1][0]) if self.events else "-1"
                with httpx.stream(
                    "GET", f"{url}/v1/runs/{self.run_id}/events",
                    headers={**headers(TOKEN), "last-event-id": last},
                    timeout=httpx.Timeout(10, read=None),
                ) as response:  # fmt: skip
                    assert response.status_code == 200, response.read()
                    self.read(response)
        except BaseException as exc:  # reported by the test
            self.error = exc

    def done(self) -> bool:
        return bool(self.events) and self.events[-1][1] == "session"

    def read(self, response: httpx.Response) -> None:
        try:
            self.events += read_events(response)
        except httpx.HTTPError:
            pass  # the worker died: reconnect


def read_events(response: httpx.Response, limit: int | None = None) -> list[tuple[int, str, Any]]:
    """The events of an SSE response as (id, name, data), the first ``limit`` of them."""
    events: list[tuple[int, str, Any]] = []
    seq, name, data = -1, "", ""
    for line in response.iter_lines():
        if line.startswith("id: "):
            seq = int(line[4:])
        elif line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data = line[6:]
        elif line == "" and name:
            events.append((seq, name, json.loads(data)))
            name = ""
            if len(events) == limit:
                break
    return events


@pytest.fixture
def database(postgres_url: str) -> Iterator[str]:
    """A database of its own for each test (DBOS's tables, the event log, the sessions)."""
    name = f"durable_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = postgres_url.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE effects (key TEXT PRIMARY KEY, run TEXT NOT NULL, round INT NOT NULL)"
        )
    yield url


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "main.agent").write_text(AGENT, encoding="utf-8")
    (tmp_path / "app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    return tmp_path


def _wait(condition: Any, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.mark.slow  # about 100 s on a loaded 2-core machine (four worker starts, 50 runs)
def test_runs_survive_a_killed_worker_and_repeat_nothing_completed(
    project: Path, database: str
) -> None:
    """50 runs of a three-round tool loop, 25 at a time on the worker that is then SIGKILLed
    while each is at a point of its own: before the first byte of a model answer, in the
    middle of a streamed answer, or inside a tool call. The other worker continues every
    one; the tool's side effect is in the database once per call, a tool call is attempted
    again only when it was the one interrupted, a model request is sent again only when it
    was the one interrupted, each conversation holds its one turn, and each client, which
    reconnected to the other worker, saw every event once, in order."""
    rng = random.Random(41)
    model = Model()
    points: dict[str, tuple[str, int]] = {}
    with FakeOpenAIServer(model) as fake:
        survivor = Worker(project, fake.base_url, database).ready()
        victim = Worker(project, fake.base_url, database).ready()
        clients: list[Client] = []
        try:
            for kill in range(KILL_ROUNDS):
                tags = [f"r{kill}x{i}" for i in range(RUNS_PER_KILL)]
                for tag in tags:
                    where = rng.choice(("before", "stream", "tool"))
                    k = rng.randrange(ROUNDS + (where != "tool"))
                    points[tag] = (where, k)
                    if where == "tool":
                        (project / f"hold-{tag}-{k}").touch()
                    else:
                        model.stall[tag, k] = where
                survivor.pause()  # so that the victim takes every run of this round
                batch = [Client(victim.url, [survivor.url], tag) for tag in tags]
                for client in batch:
                    client.start()

                def held(tag: str) -> bool:
                    where, k = points[tag]
                    if where == "tool":
                        return (project / f"held-{tag}-{k}").exists()
                    return (tag, k) in model.stalled

                _wait(lambda tags=tags: all(held(t) for t in tags), "every run at its point")
                survivor.resume()
                victim.kill()
                clients += batch
                # The replacement starts now; by the time it listens, the survivor has
                # taken the victim's runs over (after TTL) and finished most of them.
                victim = Worker(project, fake.base_url, database)
                for client in batch:
                    client.join(timeout=120)
                victim.ready()
            stored = {
                c.run_tag: httpx.get(
                    f"{survivor.url}/v1/conversations/{c.run_tag}", headers=headers(TOKEN)
                ).json()
                for c in clients
            }
        finally:
            survivor.stop()
            victim.stop()

    attempts = Counter(
        tuple(line.split()[:2]) for line in (project / "attempts.txt").read_text().splitlines()
    )
    with psycopg.connect(database) as conn:
        effects = Counter(conn.execute("SELECT run, round FROM effects").fetchall())
    for client in clients:
        tag = client.run_tag
        assert client.error is None, (tag, client.error)
        assert client.done(), (tag, points[tag], client.events[-3:])
        seqs = [seq for seq, _, _ in client.events]
        assert seqs == list(range(len(seqs))), (tag, seqs)  # every event once, in order
        assert client.reconnects >= 1, (
            tag,
            points[tag],
            [e for e in client.events if e[1] == "error"],
        )
        names = [name for _, name, _ in client.events if name != "partial"]
        assert names == ["tool_call", "tool_result"] * ROUNDS + ["response_text", "session"]
        session = client.events[-1][2]
        assert [t["status"] for t in session["turns"]] == ["complete"]
        where, k = points[tag]
        for round_ in range(ROUNDS):
            assert effects[tag, round_] == 1, (tag, round_)
            again = where == "tool" and round_ == k
            assert attempts[tag, str(round_)] == 1 + again, (tag, round_, points[tag])
        for round_ in range(ROUNDS + 1):
            again = where != "tool" and round_ == k
            assert model.sent[tag, round_] == 1 + again, (tag, round_, points[tag])
        turns = stored[tag]["turns"]  # the session store: the one turn, each result once
        assert [t["status"] for t in turns] == ["complete"], tag
        results = [m for m in turns[0]["messages"] if "[tool_result" in json.dumps(m)]
        assert len(results) == ROUNDS, (tag, turns[0]["messages"])
    assert len(clients) == KILL_ROUNDS * RUNS_PER_KILL


def test_a_client_that_drops_reads_on_from_another_worker(project: Path, database: str) -> None:
    """A client reads a few events from one worker, drops, and reconnects to the other with
    ``Last-Event-ID``: it sees every event once, in order, the same as the whole log."""
    model = Model()
    with FakeOpenAIServer(model) as fake:
        first = Worker(project, fake.base_url, database)
        second = Worker(project, fake.base_url, database)
        try:
            first.ready()
            second.ready()
            body = {"input": "record solo", "conversation_id": "solo"}
            with httpx.stream(
                "POST", f"{first.url}/v1/agents/Main/runs", json=body, headers=headers(TOKEN),
                timeout=30,
            ) as response:  # fmt: skip
                assert response.status_code == 200
                run_id = response.headers["x-auwgent-run"]
                seen = read_events(response, limit=5)

            def events(url: str, last: str | None) -> httpx.Response:
                extra = {} if last is None else {"last-event-id": last}
                return httpx.get(
                    f"{url}/v1/runs/{run_id}/events", headers={**headers(TOKEN), **extra},
                    timeout=30,
                )  # fmt: skip

            rest = events(second.url, str(seen[-1][0]))
            whole = events(first.url, None)
            unknown = httpx.get(f"{second.url}/v1/runs/nope/events", headers=headers(TOKEN))
            bad = events(second.url, "soon")
        finally:
            first.stop()
            second.stop()
    assert rest.status_code == whole.status_code == 200
    read = seen + read_events(rest)
    assert [seq for seq, _, _ in read] == list(range(len(read)))
    assert read == read_events(whole)
    assert read[-1][1] == "session"
    assert read[-1][2]["turns"][-1]["status"] == "complete"
    assert unknown.status_code == 404
    assert bad.status_code == 400 and "Last-Event-ID" in bad.json()["error"]["message"]


APPROVAL_AGENT = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a helpful assistant."
    }
    tool send_email(to: string): string @approval
}
"""

APPROVAL_APP = """
import os

HERE = os.path.dirname(os.path.abspath(__file__))

def send_email(to):
    with open(os.path.join(HERE, "sent.txt"), "a") as log:
        log.write(to + "\\n")
    return "sent to " + to

def config(agent_name):
    return {
        "apiKeys": {"openaiApiKey": "sk-test"},
        "baseUrls": {"openai": os.environ["FAKE_OPENAI_URL"]},
        "tools": {"send_email": send_email},
        "retry": {"attempts": 1},
        "approvals": "defer",
    }
"""


def approval_script(request: Any) -> Any:
    if "[tool_result" in json.dumps(request.body["messages"][-1]):
        return text("[response_text]\nSent.\n[/response_text]")
    return text('[tool_call: send_email]\n{"to": "ada@example.com"}\n[/tool_call]')


def test_a_paused_run_waits_for_its_decisions_as_a_dbos_message(
    tmp_path: Path, database: str
) -> None:
    """A run paused for approval is a workflow waiting for a message: the decisions posted to
    the other worker reach it, the approved call runs once, and the run's events go on in
    the approvals response; a second post finds nothing pending."""
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "main.agent").write_text(APPROVAL_AGENT, encoding="utf-8")
    (tmp_path / "app.py").write_text(textwrap.dedent(APPROVAL_APP), encoding="utf-8")
    with FakeOpenAIServer(approval_script) as fake:
        first = Worker(tmp_path, fake.base_url, database)
        second = Worker(tmp_path, fake.base_url, database)
        try:
            first.ready()
            second.ready()
            body = {"input": "mail ada", "conversation_id": "mail"}
            with httpx.stream(
                "POST", f"{first.url}/v1/agents/Main/runs", json=body, headers=headers(TOKEN),
                timeout=30,
            ) as response:  # fmt: skip
                paused = read_events(response)
            session = paused[-1][2]
            assert session["status"] == "awaiting_approval", paused
            request_id = session["pending_approvals"][0]["id"]
            approve = {"decisions": {request_id: True}}
            url = f"{second.url}/v1/conversations/mail/approvals"
            with httpx.stream(
                "POST", url, json=approve, headers=headers(TOKEN), timeout=30
            ) as response:
                assert response.status_code == 200, response.read()
                resumed = read_events(response)
            again = httpx.post(url, json=approve, headers=headers(TOKEN), timeout=30)
            stored = httpx.get(
                f"{first.url}/v1/conversations/mail", headers=headers(TOKEN), timeout=30
            ).json()
        finally:
            first.stop()
            second.stop()
    names = [name for _, name, _ in resumed if name != "partial"]
    assert "tool_result" in names and names[-2:] == ["response_text", "session"], names
    # One run, one log: the resumed events follow the paused ones (after the pause's own row,
    # which is never sent).
    seqs = [seq for seq, _, _ in paused + resumed]
    assert seqs == [*range(len(paused)), *range(len(paused) + 1, len(seqs) + 1)]
    assert resumed[-1][2]["turns"][-1]["status"] == "complete"
    assert (tmp_path / "sent.txt").read_text() == "ada@example.com\n"
    assert again.status_code == 409
    assert stored["turns"][-1]["status"] == "complete" and len(stored["turns"]) == 1
