"""Workers started together on a fresh PostgreSQL database: creating the store's tables is
safe however their first connections interleave (two processes, several stores each)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg")

WORKER = """
import asyncio, os, sys, time
from auwgent.runtime.stores import PostgresSessionStore

async def main(url, go):
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.001)
    stores = [PostgresSessionStore(url, max_connections=1) for _ in range(4)]
    try:
        results = await asyncio.gather(*(s.load("k") for s in stores), return_exceptions=True)
    finally:
        for store in stores:
            await store.aclose()
    failures = [repr(r) for r in results if r is not None]
    print("\\n".join(failures) or "ok")

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def test_two_workers_create_the_tables_of_a_fresh_database(
    postgres_url: str, tmp_path: Path
) -> None:
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(WORKER), encoding="utf-8")
    for round_ in range(8):
        name = f"fresh_{time.time_ns()}_{round_}"
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        url = postgres_url.rsplit("/", 1)[0] + f"/{name}"
        go = tmp_path / f"go-{round_}"
        workers = [
            subprocess.Popen(
                [sys.executable, str(script), url, str(go)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            for _ in range(2)
        ]
        for worker in workers:  # both imported and waiting for the signal
            assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
        go.touch()
        for worker in workers:
            out, err = worker.communicate(timeout=120)
            assert worker.returncode == 0, err
            assert out.strip() == "ok", f"round {round_}: {out}"
