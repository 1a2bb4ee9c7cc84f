"""Real Redis and PostgreSQL servers for the tests, started on 127.0.0.1 in a temporary folder.

``scripts/test.sh`` installs the servers from the system's packages when they are missing
(and it can); these helpers only start them. A server that cannot start fails the tests that
need it, loudly: CI must run them, not skip them.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], what: str, log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited at start: {log.read_text(errors='replace')}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port}: {log.read_text()}")


@contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    """A fresh ``redis-server`` on a free port; yields its ``redis://`` URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (scripts/test.sh installs it)")
    port = free_port()
    log = folder / "redis.log"
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
         "no", "--dir", str(folder), "--logfile", str(log)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        log.touch()
        _wait_for_port(port, process, "redis-server", log)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


def _postgres_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}")) or [shutil.which(name) or ""]
    if not found[-1]:
        raise RuntimeError(f"PostgreSQL's {name} is not installed (scripts/test.sh installs it)")
    return found[-1]


@contextmanager
def postgres_server() -> Iterator[str]:
    """A fresh PostgreSQL cluster on a free port; yields its ``postgresql://`` URL.

    PostgreSQL refuses to run as root, so under root the cluster belongs to the ``postgres``
    system user (which the Debian package creates), in a folder of its own under the system's
    temporary directory (pytest's are private to root).
    """
    folder = Path(tempfile.mkdtemp(prefix="auwgent-pg-"))
    try:
        with _postgres_in(folder) as url:
            yield url
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def _postgres_in(folder: Path) -> Iterator[str]:
    as_user: Callable[[list[str]], list[str]] = lambda argv: argv  # noqa: E731
    data = folder / "pgdata"
    data.mkdir(parents=True)
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
        shutil.chown(data, "postgres")
        as_user = lambda argv: ["runuser", "-u", "postgres", "--", *argv]  # noqa: E731
    subprocess.run(
        as_user([_postgres_bin("initdb"), "-D", str(data), "-A", "trust", "-U", "auwgent",
                 "--no-sync", "-E", "UTF8"]),
        check=True,
        capture_output=True,
    )  # fmt: skip
    port = free_port()
    log = folder / "postgres.log"
    log.touch()
    if os.geteuid() == 0:
        shutil.chown(log, "postgres")
    process = subprocess.Popen(
        as_user([_postgres_bin("postgres"), "-D", str(data), "-p", str(port), "-h", "127.0.0.1",
                 "-k", str(folder), "-c", "fsync=off", "-c", "max_connections=200",
                 "-c", "logging_collector=off"]),
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        _wait_for_port(port, process, "postgres", log)
        url = f"postgresql://auwgent@127.0.0.1:{port}/postgres"
        _wait_for_postgres(url)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


def _wait_for_postgres(url: str) -> None:
    import psycopg

    deadline = time.monotonic() + 30
    while True:
        try:
            psycopg.connect(url).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
