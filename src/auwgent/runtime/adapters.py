"""A class, an instance or a dict: how the application hands the runtime its objects.

Tools, intent handlers and middleware may each be given as a class (the runtime instantiates
it without arguments), an instance, or (tools and middleware) a dict of functions.
:func:`instance_of` and :func:`member_reader` are the one place that reads those forms.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from auwgent.errors import ConfigError

__all__ = ["instance_of", "member_reader"]


def instance_of(value: Any, where: str) -> Any:
    """``value`` instantiated when it is a class, else ``value`` itself.

    A constructor that fails is the application's configuration mistake: a
    :class:`~auwgent.errors.ConfigError` naming ``where`` and the class.
    """
    if not isinstance(value, type):  # inspect.isclass, without importing inspect
        return value
    try:
        return value()
    except Exception as exc:
        raise ConfigError(
            f"{where}: could not instantiate {value.__name__} without arguments ({exc}); "
            "pass an instance instead"
        ) from exc


def member_reader(obj: Any) -> Callable[[str], Any]:
    """Read a member by name: a key of a dict of functions, else an attribute (``None``
    when absent)."""
    if isinstance(obj, Mapping):
        return obj.get
    return lambda name: getattr(obj, name, None)
