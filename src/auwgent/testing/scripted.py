"""The scripted model, for precise tests: :mod:`auwgent.runtime.providers.scripted`.

It lives with the runtime's providers (the offline model is built on it); this module keeps
the import path ``auwgent.testing.scripted`` working.
"""

from auwgent.runtime.providers.scripted import (
    EmbeddingFunction,
    NativeCall,
    Reply,
    Response,
    ScriptedFailure,
    ScriptedModel,
    ScriptFunction,
    block_text,
    hashed_embedding,
    reply_events,
)

__all__ = [
    "EmbeddingFunction",
    "NativeCall",
    "Reply",
    "Response",
    "ScriptFunction",
    "ScriptedFailure",
    "ScriptedModel",
    "block_text",
    "hashed_embedding",
    "reply_events",
]
