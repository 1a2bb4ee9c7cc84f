"""Protocol codecs: how the runtime and the model talk (see ``docs/protocol.md``).

``codec_for("blocks")`` (the default) teaches the model a plain-text block syntax;
``codec_for("native")`` uses the provider's function calling. Both produce the same intents.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from auwgent.errors import ConfigError

if TYPE_CHECKING:
    from auwgent.runtime.protocol.blocks import BlocksCodec, BlocksDecoder
    from auwgent.runtime.protocol.contract import Codec
    from auwgent.runtime.protocol.native import NativeCodec, NativeDecoder, function_name

__all__ = [
    "BlocksCodec",
    "BlocksDecoder",
    "NativeCodec",
    "NativeDecoder",
    "codec_for",
    "function_name",
]


# The codecs load on first use: importing ``protocol.contract`` (which every runtime module
# does for the neutral types) runs this package first, and the codecs cost more to import
# than the rest of what a generated module needs.
_LAZY = {
    "BlocksCodec": "blocks",
    "BlocksDecoder": "blocks",
    "NativeCodec": "native",
    "NativeDecoder": "native",
    "function_name": "native",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def codec_for(name: str) -> Codec:
    """The codec for a protocol name (``"blocks"`` or ``"native"``)."""
    if name == "blocks":
        from auwgent.runtime.protocol.blocks import BlocksCodec

        return BlocksCodec()
    if name == "native":
        from auwgent.runtime.protocol.native import NativeCodec

        return NativeCodec()
    raise ConfigError(f'unknown protocol {name!r}: use "blocks" or "native"')
