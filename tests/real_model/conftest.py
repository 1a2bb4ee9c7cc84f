"""The ``real_model`` tier: a session-wide llama.cpp server with SmolLM2-135M on 127.0.0.1."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from local_model import llama_server, unavailable


def _cannot_run(reason: str) -> None:
    # CI installs the server (scripts/_env.sh): there it must run, never be skipped away.
    if os.environ.get("CI"):
        pytest.fail(f"real_model tier: {reason}", pytrace=False)
    pytest.skip(f"real_model tier skipped: {reason}")


@pytest.fixture(scope="session")
def local_model_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The OpenAI-compatible base URL (``http://127.0.0.1:<port>/v1``) of the served model."""
    reason = unavailable()
    if reason is not None:
        _cannot_run(reason)
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with ExitStack() as stack:
        try:
            url = stack.enter_context(llama_server(log, threads=1))
        except RuntimeError as error:
            _cannot_run(str(error))
        yield url
