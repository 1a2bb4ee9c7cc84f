"""A wrong context type reaches the runtime too (for code mypy does not check): construction
fails before anything runs, naming the key, the expected and the given type."""

from typing import Any

from generated.main_types import auwgent

context: Any = {"name": "Ama", "is_vip": "yes"}
agent = auwgent({"apiKeys": {"geminiApiKey": "YOUR_API_KEY"}, "context": context})
