"""The MCP ``run`` tool takes a list of parts as its input, as ``agent.run`` does."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

from mcp import Client, StdioServerParameters

AGENT = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "Describe."
    }
    output: { answer: string, notes: number }
}
"""

# The scripted model answers with what the user message carried: the media type of each part.
APP = """
from auwgent.testing.scripted import ScriptedModel


def seen(request):
    parts = request.messages[-1].parts
    kinds = ",".join(p.get("media_type", p["type"]) for p in parts)
    return ScriptedModel.json({"answer": kinds, "notes": len(parts)})


def config(name):
    return {"provider": ScriptedModel(seen), "protocol": "native"}
"""

PNG = base64.b64encode(b"\\x89PNG-tiny").decode()


async def test_run_takes_parts_and_refuses_bad_ones(tmp_path: Path) -> None:
    (tmp_path / "main.agent").write_text(AGENT, encoding="utf-8")
    (tmp_path / "app.py").write_text(APP, encoding="utf-8")
    serve = ["mcp", "serve", str(tmp_path), "--agent", "Main", "--app", "app:config"]
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "auwgent", *serve], cwd=str(tmp_path)
    )
    parts = [
        {"type": "text", "text": "What is this?"},
        {"type": "image", "data": PNG, "media_type": "image/png"},
    ]
    async with Client(params, read_timeout_seconds=60) as client:
        listed = await client.list_tools()
        schema = listed.tools[0].input_schema["properties"]["input"]
        assert [v.get("type") for v in schema["oneOf"]] == ["string", "array"]
        result = await client.call_tool("run", {"input": parts})
        assert not result.is_error, result.content
        assert result.structured_content == {"answer": "text,image/png", "notes": 2}
        bad = await client.call_tool("run", {"input": [{"type": "image", "data": "%%"}]})
    assert bad.is_error
    assert "part 1 (image)" in json.dumps([c.text for c in bad.content])
