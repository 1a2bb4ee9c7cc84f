"""Build a user's project the way the manual does: .agent files and auwgent.yml on disk, the
real CLI, and the generated module imported from the output folder."""

from __future__ import annotations

import importlib.util
import itertools
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

_counter = itertools.count()


def generate(root: Path, sources: dict[str, str]) -> dict[str, ModuleType]:
    """Write ``sources`` (file name -> .agent text) under ``root/agents``, run
    ``python -m auwgent generate`` there and import every ``<stem>_types.py`` it wrote."""
    agents = root / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    for name, text in sources.items():
        (agents / name).parent.mkdir(parents=True, exist_ok=True)
        (agents / name).write_text(textwrap.dedent(text), encoding="utf-8")
    (root / "auwgent.yml").write_text(
        'source: "agents"\noutput: "generated"\ntargets:\n  - py\n', encoding="utf-8"
    )
    done = subprocess.run(
        [sys.executable, "-m", "auwgent", "generate"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    modules: dict[str, ModuleType] = {}
    for path in sorted((root / "generated").glob("*_types.py")):
        unique = f"acceptance_gen_{next(_counter)}_{path.stem}"
        spec = importlib.util.spec_from_file_location(unique, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[unique] = module
        spec.loader.exec_module(module)
        modules[path.stem.removesuffix("_types")] = module
    return modules


class Recorder:
    """Records every final intent as (name, value, agent_name), like a user's print()."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any, str]] = []

    def __call__(self, name: str, value: Any, agent_name: str) -> None:
        self.events.append((name, value, agent_name))

    @property
    def names(self) -> list[str]:
        return [name for name, _, _ in self.events]

    def payloads(self, name: str) -> list[Any]:
        return [value for n, value, _ in self.events if n == name]

    def agents(self, name: str) -> list[str]:
        return [agent for n, _, agent in self.events if n == name]


def gemini_system(body: dict[str, Any]) -> str:
    """The system prompt of a recorded Gemini request body."""
    parts = body["systemInstruction"]["parts"]
    return "".join(part.get("text", "") for part in parts)


def gemini_user_texts(body: dict[str, Any]) -> list[str]:
    """The text of every user turn of a recorded Gemini request body."""
    texts = []
    for content in body["contents"]:
        if content.get("role") == "user":
            texts.append("".join(p.get("text", "") for p in content["parts"] if "text" in p))
    return texts


def openai_system(body: dict[str, Any]) -> str:
    """The system prompt of a recorded OpenAI request body."""
    first = body["messages"][0]
    assert first["role"] == "system"
    content = first["content"]
    return content if isinstance(content, str) else "".join(p["text"] for p in content)
