"""Protocol codecs: how the runtime and the model talk (see ``docs/protocol.md``).

``codec_for("blocks")`` (the default) teaches the model a plain-text block syntax;
``codec_for("native")`` uses the provider's function calling. Both produce the same intents.

The codecs are read from their modules on first use (PEP 562), so importing one module of the
package (the framing rules of :mod:`.section`, say) does not load both codecs.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from auwgent.errors import ConfigError

__all__ = [
    "BlocksCodec",
    "BlocksDecoder",
    "NativeCodec",
    "NativeDecoder",
    "codec_for",
    "function_name",
]

_HOMES = {
    "BlocksCodec": "blocks",
    "BlocksDecoder": "blocks",
    "NativeCodec": "native",
    "NativeDecoder": "native",
    "function_name": "native",
}


def codec_for(name: str) -> Any:
    """The codec for a protocol name (``"blocks"`` or ``"native"``)."""
    if name == "blocks":
        return __getattr__("BlocksCodec")()
    if name == "native":
        return __getattr__("NativeCodec")()
    raise ConfigError(f'unknown protocol {name!r}: use "blocks" or "native"')


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
