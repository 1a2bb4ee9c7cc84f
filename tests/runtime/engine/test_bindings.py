"""Through generated bindings, as the manual's Python tabs show (compiler + codegen + runtime)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from auwgent.compiler.pipeline import compile_sources
from auwgent.testing import ScriptedModel

from .irkit import block, text

SOURCE = """
agent Main {
    default config {
        model: gemini("gemini-2.5-flash")
        prompt: "You are a data assistant."
    }

    context {
        is_admin: boolean
        user_id: string
    }

    tool get_user(id: string): string
        @desc "Retrieves a user record by ID"

    tool get_weather(location: string): string

    workflow delete_user(id: string): string {
        description: "Deletes a user record. Requires admin privileges."

        tool remove_user(id: string): string

        if (ctx.is_admin) {
            let result = remove_user(id)
            return "user deleted"
        }

        return "you do not have permission to delete users"
    }
}
"""


def generated(tmp_path: Path, name: str = "main_types") -> ModuleType:
    from auwgent.codegen.python import render_python

    result = compile_sources({"main.agent": SOURCE})
    assert result.ok, [d.message for d in result.diagnostics]
    path = tmp_path / f"{name}.py"
    path.write_text(render_python(result.documents["main.agent"]))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


async def test_manual_tabs_through_generated_bindings(tmp_path: Path) -> None:
    m = generated(tmp_path)
    removed: list[str] = []

    class Tools(m.AuwgentTools):  # type: ignore[name-defined,misc]
        async def remove_user(self, id: Any) -> str:
            removed.append(id)
            return f"deleted user {id}"

        async def get_user(self, id: Any) -> str:
            return f"user {id}"

    seen: list[Any] = []

    class HandleIntent(m.AuwgentBaseIntentHandler):  # type: ignore[name-defined,misc]
        async def workflow_call(self, intent: Any, agent_name: str) -> None:
            seen.append(("workflow triggered:", intent.get("type")))

        async def workflow_result(self, intent: Any, agent_name: str) -> None:
            seen.append(("workflow result:", intent["result"]))

        async def tool_call(self, intent: Any, agent_name: str) -> Any:
            if intent["type"] == "get_weather":
                return {"result": "Sunny, 28°C"}
            return None

        async def response_text(self, intent: Any, agent_name: str) -> None:
            seen.append(intent.get("text"))

    class Mw(m.AuwgentMiddleware):  # type: ignore[name-defined,misc]
        name = "observer"
        calls: list[str] = []

        async def onLLMStart(self, prompt: str, ctx: Any) -> None:
            Mw.calls.append(ctx["activeAgent"])

    model = ScriptedModel(
        [
            block("workflow_call", "delete_user", "id: user_1")
            + "\n"
            + block("tool_call", "get_weather", "location: Accra")
            + "\n"
            + block("tool_call", "get_user", "id: user_1"),
            text("Done."),
        ]
    )
    agent = m.auwgent(
        {
            "apiKeys": {"geminiApiKey": "YOUR_API_KEY"},
            "context": {"is_admin": True, "user_id": "user_1"},
            "tools": Tools,
            "middleware": [Mw],
            "provider": model,
        }
    )
    agent.on_intent(HandleIntent)
    session = await agent.run("delete user_1")
    assert removed == ["user_1"]
    assert ("workflow result:", "user deleted") in seen
    assert seen[-1] == "Done."
    assert Mw.calls == ["Main", "Main"]
    assert "[NOT CONFIGURED]" in model.requests[0].system  # get_weather has no implementation
    fed_back = " ".join(msg.content for msg in model.requests[1].messages)
    assert "Sunny, 28°C" in fed_back and "user user_1" in fed_back
    assert json.loads(json.dumps(session))["turns"][0]["status"] == "complete"
