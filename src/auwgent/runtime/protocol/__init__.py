"""Protocol codecs: how the runtime and the model talk (see ``docs/protocol.md``).

``codec_for("blocks")`` (the default) teaches the model a plain-text block syntax;
``codec_for("native")`` uses the provider's function calling. Both produce the same intents.
"""

from __future__ import annotations

from auwgent.errors import ConfigError
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


def codec_for(name: str) -> Codec:
    """The codec for a protocol name (``"blocks"`` or ``"native"``)."""
    if name == "blocks":
        return BlocksCodec()
    if name == "native":
        return NativeCodec()
    raise ConfigError(f'unknown protocol {name!r}: use "blocks" or "native"')
