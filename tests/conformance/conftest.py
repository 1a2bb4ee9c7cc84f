from __future__ import annotations

from typing import Any


def pytest_terminal_summary(terminalreporter: Any) -> None:
    passed = [r for r in terminalreporter.stats.get("passed", []) if "test_vector[" in r.nodeid]
    if passed:
        terminalreporter.write_line(
            f"conformance: {len(passed)} vectors passed in the Python runtime"
        )
