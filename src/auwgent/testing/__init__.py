"""Models and servers for testing agents without a network.

- :class:`OfflineModel`: deterministic answers built from the agent's own contract (calls each
  tool once, then a schema-valid output or a short text). Also selected by
  ``"provider": "offline"`` or ``AUWGENT_PROVIDER=offline``.
- :class:`ScriptedModel`: plays back a list of responses (or a function of the request), for
  precise tests of an agent's behaviour.
"""

from auwgent.testing.offline import OfflineModel, hashed_embedding
from auwgent.testing.scripted import NativeCall, Reply, ScriptedFailure, ScriptedModel

__all__ = [
    "NativeCall",
    "OfflineModel",
    "Reply",
    "ScriptedFailure",
    "ScriptedModel",
    "hashed_embedding",
]
