"""Test-wide setup: no test may reach the network, and no real API key leaks in."""

from __future__ import annotations

import ipaddress
import signal
import socket
from collections.abc import Iterator
from typing import Any

import pytest

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_local(address: Any) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX paths
        return True
    host = address[0]
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guarded_connect(self: socket.socket, address: Any) -> None:
    if not _is_local(address):
        raise OSError(f"tests may not reach the network (tried {address!r})")
    _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    if not _is_local(address):
        raise OSError(f"tests may not reach the network (tried {address!r})")
    return _real_connect_ex(self, address)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]

# A process started in the background by a non-interactive shell (`cmd &`, nohup, some CI
# runners) begins with SIGINT ignored, every program it starts inherits that, and a Python
# started with SIGINT ignored never raises KeyboardInterrupt: the tests that stop
# `auwgent generate --watch` with Ctrl-C would wait forever. A handled signal is reset to the
# default in a child, so handling it here gives the subprocesses their Ctrl-C back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

_KEY_VARS = (
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_BASE_URL",
    # A proxy set for the machine (package downloads, say) would make the agent's own
    # connections an httpx client and route the fake servers' traffic through it; a test of
    # proxies sets them itself.
    *(f"{scheme}_proxy" for scheme in ("http", "https", "all")),
    *(f"{scheme}_PROXY" for scheme in ("HTTP", "HTTPS", "ALL")),
)


_SERVER_FIXTURES = frozenset({"redis_url", "postgres_url"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses a real Redis or PostgreSQL server is marked ``servers``."""
    for item in items:
        if _SERVER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.servers)


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in _KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    yield


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server on 127.0.0.1 for the whole test session (one per xdist worker)."""
    from servers import redis_server

    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server on 127.0.0.1 for the whole test session (one per xdist
    worker)."""
    from servers import postgres_server

    with postgres_server() as url:
        yield url
