"""Stand-ins for the application objects the manual's snippets use (``db``, ``logger``,
``vector_db``, ``user_id``): in-memory and typed, so the snippets run and type-check."""

from __future__ import annotations

import logging
from typing import Any


class _Table:
    def __init__(self) -> None:
        self.rows: dict[Any, Any] = {}

    async def get(self, key: Any) -> Any:
        return self.rows.get(key)

    async def save(self, key: Any, value: Any) -> None:
        self.rows[key] = value


class _User:
    name = "Ama"
    plan = "premium"


class _Users:
    async def get(self, key: Any) -> _User:
        return _User()


class _Db:
    def __init__(self) -> None:
        self.sessions = _Table()
        self.users = _Users()


class _VectorDb:
    async def search(self, vector: list[float], top_k: int = 5) -> list[dict[str, str]]:
        return [{"text": f"chunk {i}"} for i in range(min(top_k, 2))]


db = _Db()
vector_db = _VectorDb()
logger = logging.getLogger("sample_app")
user_id = "user_1"
