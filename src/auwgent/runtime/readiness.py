"""Whether this process can take more work: what ``auwgent serve``'s ``/readyz`` reports.

:func:`problems` lists what is wrong, empty when all is well: the event loop's default thread
pool (where sync tools, the SQLite store and DNS lookups run) does not start a no-op task
within ``timeout`` seconds, because every one of its threads is blocked; or a code mode
sandbox worker has not answered for longer than its code's limit allows
(:func:`auwgent.runtime.code_mode.stuck`). A process whose event loop itself is blocked does
not answer at all, which a load balancer reads the same way.
"""

from __future__ import annotations

import asyncio
import sys

__all__ = ["PROBE_TIMEOUT", "problems"]

#: Seconds the default thread pool has to start a no-op task.
PROBE_TIMEOUT = 1.0


async def problems(timeout: float = PROBE_TIMEOUT) -> list[str]:
    """What keeps this process from taking work (see the module docstring)."""
    found: list[str] = []
    loop = asyncio.get_running_loop()
    try:
        await asyncio.wait_for(loop.run_in_executor(None, _nothing), timeout)
    except asyncio.TimeoutError:
        found.append(
            f"the default thread pool did not start a task within {timeout:g} s: every one of "
            "its threads is busy (blocking tools, a slow store or a stuck worker)"
        )
    code_mode = sys.modules.get("auwgent.runtime.code_mode")
    if code_mode is not None:
        found += code_mode.stuck()
    return found


def _nothing() -> None:
    return None
