"""The offline model: :mod:`auwgent.runtime.providers.offline`.

It is a provider of the runtime (``"provider": "offline"``); this module keeps the import path
``auwgent.testing.offline`` working.
"""

from auwgent.runtime.providers.offline import OfflineModel, hashed_embedding, structured_reply

__all__ = ["OfflineModel", "hashed_embedding", "structured_reply"]
