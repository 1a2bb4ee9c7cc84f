"""The policies of provider calls the runtime config sets: retries, time limits, size caps.

Their own module, so that parsing the runtime config (when an agent is built) does not load the
HTTP machinery of :mod:`auwgent.runtime.providers.http`, which re-exports them.
"""

from __future__ import annotations

from auwgent._records import record
from auwgent.runtime.config_fields import Field, Section

__all__ = ["LIMITS", "RETRY", "TIMEOUTS", "Limits", "RetryPolicy", "Timeouts"]

#: The runtime config's ``"retry"``, ``"timeouts"`` and ``"limits"`` (each value's
#: ``from_config`` reads its section).
RETRY = Section(
    "retry",
    (
        Field("attempts", "attempts", integer=True, minimum=1, doc="Tries, the first included."),
        Field("baseDelay", "base_delay"),
        Field("maxDelay", "max_delay"),
    ),
    "AuwgentRetry",
    "Retries with backoff on 429, 5xx and connection errors (delays in seconds).",
)
TIMEOUTS = Section(
    "timeouts",
    (
        Field("connect", "connect"),
        Field("firstByte", "first_byte"),
        Field("idle", "idle"),
        Field("call", "call"),
        Field("run", "run", nullable=True),
    ),
    "AuwgentTimeouts",
    "Timeouts in seconds.",
)
LIMITS = Section(
    "limits",
    (
        Field("eventBytes", "event_bytes", integer=True, minimum=1),
        Field("responseBytes", "response_bytes", integer=True, minimum=1),
    ),
    "AuwgentLimits",
    "Size caps on one event and one response from a provider, in bytes.",
)


# The value classes here are records (auwgent._records), not dataclasses: they are built when
# an agent is, and importing ``dataclasses`` plus making a frozen dataclass costs more than the
# rest of the import of the runtime (bench/bench_overhead.py, import time).


@record
class RetryPolicy:
    """How often and how patiently a failed request is retried.

    ``attempts`` counts every try, the first one included. The wait before retry ``n`` (1-based)
    is a random value in ``[0, min(max_delay, base_delay * 2**(n-1))]`` ("full jitter"), or the
    upper bound itself when ``jitter`` is off. A ``Retry-After`` header replaces the computed
    wait, capped by ``max_delay``.
    """

    attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 20.0
    jitter: bool = True

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("RetryPolicy.attempts must be at least 1")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("RetryPolicy delays must not be negative")

    @classmethod
    def from_config(cls, value: object) -> RetryPolicy:
        """The runtime config's ``"retry"`` (or the policy itself); defaults fill the rest."""
        return value if isinstance(value, cls) else cls(**RETRY.read(value))


@record
class Timeouts:
    """Time limits of provider calls, in seconds.

    ``connect``: opening the connection. ``first_byte``: from sending the request to receiving
    the response headers, and again from the headers to the first piece of the body.
    ``idle``: the longest silence allowed between two later pieces of a response body.
    ``call``: the deadline of one model call, from its first attempt to the end of its
    response, retries and their waits included. ``run``: the deadline of a whole run, which
    the engine (not a provider) keeps; ``None``, the default, is none.

    With the default retry policy, a server that never answers is given up after at most
    4 x 25 s plus 3.5 s of backoff (103.5 s); an endless stream ends at ``call``.
    """

    connect: float = 10.0
    first_byte: float = 25.0
    idle: float = 30.0
    call: float = 300.0
    run: float | None = None

    @classmethod
    def from_config(cls, value: object) -> Timeouts:
        """The runtime config's ``"timeouts"`` (or the timeouts themselves)."""
        return value if isinstance(value, cls) else cls(**TIMEOUTS.read(value))

    @property
    def piece(self) -> float:
        """The longest wait for one piece of a response body (the first or a later one)."""
        return max(self.first_byte, self.idle)


@record
class Limits:
    """Size caps, in bytes, on what a provider may send back.

    ``event_bytes``: one server-sent event as received (its ``data:`` lines together, field
    names included), or one line still arriving. ``response_bytes``: one response body,
    streamed or not.
    """

    event_bytes: int = 16 * 1024 * 1024
    response_bytes: int = 64 * 1024 * 1024

    def __post_init__(self) -> None:
        if self.event_bytes < 1 or self.response_bytes < 1:
            raise ValueError("Limits must be at least 1 byte")

    @classmethod
    def from_config(cls, value: object) -> Limits:
        """The runtime config's ``"limits"`` (or the limits themselves)."""
        return value if isinstance(value, cls) else cls(**LIMITS.read(value))
