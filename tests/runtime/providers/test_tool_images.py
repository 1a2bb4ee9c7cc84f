"""A tool returns images (``auwgent.tool_parts``): each provider shows them to the model.

Native tool loops against each provider's real-HTTP fake server: Anthropic gets the images as
blocks of the ``tool_result`` content, Gemini as ``functionResponse.parts`` (compared with what
``google-genai`` sends for the same ``FunctionResponse``), OpenAI (whose ``tool`` messages hold
text only) as one user message after the round's ``tool`` messages. Under the block protocol
the images follow the result blocks in the same user message.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from auwgent import __version__
from auwgent.compiler.pipeline import compile_sources
from auwgent.runtime.agent import Agent, create_agent
from auwgent.runtime.parts import InputError, image, tool_parts
from auwgent.testing.fake_servers import (
    FakeAnthropicServer,
    FakeGeminiServer,
    FakeOpenAIServer,
    text,
    tool_calls,
)

PNG = b"\x89PNG\r\n\x1a\n-chart"
B64 = base64.b64encode(PNG).decode()
CALL = ("tool__draw_chart", {"city": "Accra"})

AGENT = """
agent Main {
    default config {
        model: MODEL
        prompt: "You draw charts."
    }
    tool draw_chart(city: string): string @desc "Draws a chart"
}
"""


def _draw_chart(city: str) -> Any:
    return tool_parts(f"chart of {city}", image(PNG, "image/png"))


def _agent(model: str, provider: str, url: str, protocol: str = "native") -> Agent:
    result = compile_sources({"main.agent": AGENT.replace("MODEL", model)})
    assert result.ok, [str(d) for d in result.diagnostics]
    doc = dict(result.documents["main.agent"])
    settings = {
        "apiKeys": {f"{provider}ApiKey": "k"},
        "baseUrls": {provider: url},
        "tools": {"draw_chart": _draw_chart},
        "protocol": protocol,
        "retry": {"attempts": 1},
    }
    return create_agent(
        doc,
        settings,
        ir_hash=doc["hash"],
        compiler_version=__version__,
        ir_version=doc["ir_version"],
    )


async def _second_request(server: Any, agent: Agent) -> Any:
    session = await agent.run("Chart Accra.")
    assert session["turns"][-1]["status"] == "complete", session["turns"][-1]["error"]
    tool_message = session["turns"][-1]["messages"][1]
    assert tool_message["parts"] == [{"type": "image", "data": B64, "media_type": "image/png"}]
    return server.requests[1].body


async def test_anthropic_tool_result_carries_image_blocks() -> None:
    with FakeAnthropicServer([tool_calls([CALL]), text("Done.")]) as server:
        body = await _second_request(
            server, _agent('anthropic("claude-sonnet-4-5")', "anthropic", server.base_url)
        )
    assert body["messages"][-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_fake1_0",
                "content": [
                    {"type": "text", "text": "chart of Accra"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": B64},
                    },
                ],
            }
        ],
    }


async def test_gemini_function_response_carries_parts_as_the_sdk_sends_them() -> None:
    genai = pytest.importorskip("google.genai")
    types = genai.types
    with FakeGeminiServer([tool_calls([CALL]), text("Done.")]) as server:
        body = await _second_request(
            server, _agent('gemini("gemini-2.5-flash")', "gemini", server.base_url)
        )
    answer = body["contents"][-1]["parts"][0]["functionResponse"]
    sdk = types.FunctionResponse(
        name="tool__draw_chart",
        response={"result": "chart of Accra"},
        parts=[types.FunctionResponsePart.from_bytes(data=PNG, mime_type="image/png")],
    ).model_dump(mode="json", exclude_none=True)
    assert answer.get("id") == sdk.get("id", answer.get("id"))
    answer.pop("id", None)
    assert answer["parts"] == [
        {"inlineData": {"data": sdk["parts"][0]["inline_data"]["data"], "mimeType": "image/png"}}
    ]
    assert {k: v for k, v in answer.items() if k != "parts"} == {
        k: v for k, v in sdk.items() if k != "parts"
    }


async def test_openai_shows_the_images_in_a_user_message_after_the_tool_messages() -> None:
    with FakeOpenAIServer([tool_calls([CALL, CALL]), text("Done.")]) as server:
        body = await _second_request(server, _agent('openai("gpt-4o")', "openai", server.base_url))
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool", "user"]
    ids = [m["tool_call_id"] for m in body["messages"][3:5]]
    assert [m["content"] for m in body["messages"][3:5]] == ["chart of Accra"] * 2
    shown = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}"}}
    assert body["messages"][-1]["content"] == [
        {"type": "text", "text": f"The tool call {ids[0]} returned these images:"},
        shown,
        {"type": "text", "text": f"The tool call {ids[1]} returned these images:"},
        shown,
    ]


async def test_under_the_block_protocol_the_images_follow_the_result_blocks() -> None:
    call = '[tool_call: draw_chart]\n{"city": "Accra"}\n[/tool_call]'
    answer = "[response_text]\nDone.\n[/response_text]"
    with FakeAnthropicServer([text(call), text(answer)]) as server:
        agent = _agent('anthropic("claude-sonnet-4-5")', "anthropic", server.base_url, "blocks")
        await agent.run("Chart Accra.")
    content = server.requests[1].body["messages"][-1]["content"]
    assert content[0]["type"] == "text" and "chart of Accra" in content[0]["text"]
    assert content[1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": B64},
    }
    assert json.dumps(content).count(B64) == 1


def test_tool_parts_takes_images_only() -> None:
    with pytest.raises(InputError, match=r"tool_parts\(\): part 1: a tool returns image parts"):
        tool_parts("x", {"type": "text", "text": "no"})
    with pytest.raises(InputError, match="give at least one image part"):
        tool_parts("x")
