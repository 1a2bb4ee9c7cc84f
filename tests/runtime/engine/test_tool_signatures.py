"""Tool implementations' signatures, read from code objects, agree with ``inspect``.

Building an agent checks each implementation against its declaration and decides whether it
is awaited; for plain functions and methods it reads their code objects (``inspect`` costs
about 25 ms to import), for anything else it asks ``inspect``. Both must answer alike.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import pytest

from auwgent.runtime.tools import _mode, _parameters


def _by_inspect(fn: Callable[..., Any]) -> tuple[set[str], set[str]] | None:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    takes = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    required = {p.name for p in params if p.default is p.empty and p.kind is not p.VAR_POSITIONAL}
    return takes, required


def plain(location, days=3):
    return location


async def coroutine(location, *, unit, days=1):
    return location


def star_args(first, *rest, only, maybe=None):
    return first


def positional_only(a, b=2, /, c=3, *, d):
    return a


def any_keyword(location, **more):
    return location


def _decorated(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return wrapper


class Tools:
    def method(self, location, days=3):
        return location

    async def async_method(self, *, location):
        return location

    @staticmethod
    def static(location):
        return location

    @classmethod
    def cls(cls, location, /, other):
        return location

    def __call__(self, location):
        return location


async def _async_tool(location: str) -> str:
    return location


CASES = {
    "plain": plain,
    "coroutine": coroutine,
    "star args": star_args,
    "positional only": positional_only,
    "any keyword": any_keyword,
    "lambda": lambda location, days=1: location,
    "decorated": _decorated(plain),
    "partial": functools.partial(plain, days=5),
    "partial of async": functools.partial(coroutine, unit="C"),
    "bound method": Tools().method,
    "async bound method": Tools().async_method,
    "static method": Tools.static,
    "class method": Tools.cls,
    "callable object": Tools(),
    "builtin": len,
    "annotated async": _async_tool,
}


@pytest.mark.parametrize("fn", CASES.values(), ids=CASES.keys())
def test_parameters_and_mode_agree_with_inspect(fn: Callable[..., Any]) -> None:
    assert _parameters(fn) == _by_inspect(fn)
    expected = "async" if inspect.iscoroutinefunction(fn) else "thread"
    assert _mode(fn) == expected
