"""The public surface of ``auwgent.testing`` is explicit and pinned."""

from __future__ import annotations

import auwgent.testing


def test_testing_exports_are_pinned() -> None:
    assert sorted(auwgent.testing.__all__) == sorted(
        [
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
    )
    for name in auwgent.testing.__all__:
        assert getattr(auwgent.testing, name) is not None
