"""The ``cassette`` pytest fixture (registered when ``auwgent`` is installed).

```python
async def test_weather(cassette):
    agent = auwgent({"apiKeys": {...}, "httpClient": cassette})
    await agent.run("What's the weather in Accra?")
```

The cassette file is ``cassettes/<test module>/<test name>.json`` beside the test module, or
the path given with ``@pytest.mark.cassette("path/to/file.json")`` (relative to the module).
The mode comes from ``--cassette-mode`` (``replay``, ``record`` or ``auto``), else from the
``AUWGENT_CASSETTE_MODE`` environment variable, else ``replay``. A test whose requests missed
the cassette fails with the diff against the nearest recorded request, even when the agent
turned the miss into an ``error`` intent.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from auwgent.testing.cassette import Cassette

_MODES = ("replay", "record", "auto")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cassette-mode",
        choices=_MODES,
        default=None,
        help="how auwgent cassettes treat requests: replay (default), record or auto",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cassette(path): the auwgent cassette file of this test (module-relative)"
    )


def cassette_path(request: pytest.FixtureRequest) -> Path:
    """Where the test's cassette lives (see the module docstring)."""
    module = Path(str(request.node.path))
    marker = request.node.get_closest_marker("cassette")
    if marker is not None and marker.args:
        return module.parent / str(marker.args[0])
    name = re.sub(r"[^\w.-]+", "_", request.node.name).strip("_")
    return module.parent / "cassettes" / module.stem / f"{name}.json"


@pytest.fixture
def cassette(request: pytest.FixtureRequest) -> Iterator[Cassette]:
    """An :class:`auwgent.testing.Cassette` for this test (see the module docstring)."""
    from auwgent.testing.cassette import Cassette

    mode: Any = request.config.getoption("--cassette-mode")
    mode = mode or os.environ.get("AUWGENT_CASSETTE_MODE") or "replay"
    if mode not in _MODES:
        raise pytest.UsageError(f"AUWGENT_CASSETTE_MODE must be one of {', '.join(_MODES)}")
    recorded = Cassette(cassette_path(request), mode)
    yield recorded
    if recorded.misses:
        pytest.fail(str(recorded.misses[0]), pytrace=False)
