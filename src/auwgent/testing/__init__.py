"""Models and servers for testing agents without a network.

- :class:`ScriptedModel`: plays back a list of responses (or a function of the request), for
  precise tests of an agent's behaviour.
"""

from auwgent.testing.scripted import NativeCall, Reply, ScriptedFailure, ScriptedModel

__all__ = ["NativeCall", "Reply", "ScriptedFailure", "ScriptedModel"]
