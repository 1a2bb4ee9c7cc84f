"""Models and servers for testing agents without a network.

- :class:`OfflineModel`: deterministic answers built from the agent's own contract (calls each
  tool once, then a schema-valid output or a short text). Also selected by
  ``"provider": "offline"`` or ``AUWGENT_PROVIDER=offline``.
- :class:`ScriptedModel`: plays back a list of responses (or a function of the request), for
  precise tests of an agent's behaviour.
- :class:`Cassette`: an HTTP client that records real provider traffic once and replays it
  (also the ``cassette`` pytest fixture).
- :class:`FakeOpenAIServer`, :class:`FakeGeminiServer` and :class:`FakeAnthropicServer`: real
  HTTP servers on 127.0.0.1 speaking each API's wire format, driven by a script of
  :func:`text`, :func:`tool_calls`, :func:`structured` replies and faults (:func:`status`,
  :func:`disconnect`, :func:`malformed_chunk`, :func:`error_event`, :func:`stall`).

See ``docs/testing.md``.
"""

from auwgent.runtime.providers.offline import OfflineModel, hashed_embedding
from auwgent.runtime.providers.scripted import NativeCall, Reply, ScriptedFailure, ScriptedModel
from auwgent.testing.cassette import Cassette, CassetteMiss
from auwgent.testing.fake_servers import (
    Disconnect,
    Endless,
    ErrorEvent,
    FakeAnthropicServer,
    FakeGeminiServer,
    FakeOpenAIServer,
    Malformed,
    RecordedRequest,
    ServerReply,
    Stall,
    Status,
    Turn,
    disconnect,
    endless,
    error_event,
    malformed_chunk,
    stall,
    status,
    structured,
    text,
    tool_calls,
)

__all__ = [
    "Cassette",
    "CassetteMiss",
    "Disconnect",
    "Endless",
    "ErrorEvent",
    "FakeAnthropicServer",
    "FakeGeminiServer",
    "FakeOpenAIServer",
    "Malformed",
    "NativeCall",
    "OfflineModel",
    "RecordedRequest",
    "Reply",
    "ScriptedFailure",
    "ScriptedModel",
    "ServerReply",
    "Stall",
    "Status",
    "Turn",
    "disconnect",
    "endless",
    "error_event",
    "hashed_embedding",
    "malformed_chunk",
    "stall",
    "status",
    "structured",
    "text",
    "tool_calls",
]
