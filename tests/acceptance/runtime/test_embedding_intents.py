"""Embedding (RAG from middleware) and Custom Intents, plus the partial envelope of the
Intents Payloads page for structured intents."""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import pytest

from auwgent.testing import FakeGeminiServer, FakeOpenAIServer, hashed_embedding, text

from ._project import Recorder, gemini_system, generate, openai_system

RAG = """
agent Main {
    default config {
        model: gemini("gemini-2.5-flash")
        embedding: gemini("gemini-embedding-001")
        prompt: "You are a helpful assistant"
    }
}
"""

NO_EMBEDDING = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a helpful assistant"
    }
}
"""

OPENAI_RAG = """
agent Main {
    default config {
        model: openai("gpt-4o")
        embedding: openai("text-embedding-3-small")
        prompt: "You are a helpful assistant"
    }

    config Large {
        model: openai("gpt-4o")
        embedding: openai("text-embedding-3-large")
        prompt: "You are a helpful assistant"
    }
}
"""

PLANNING = """
intent Planning {
    description: "Emit a structured execution plan before taking action"
    fields {
        step: string
        confidence: number
        rationale: string
    }
}

intent Dialogue {
    description: "Emit the user-facing dialogue decision"
    fields {
        tone: string
        summary: string
    }
}

agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a planning assistant"
    }

    intent: Planning + Dialogue
}
"""

INLINE_INTENT = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a planning assistant"
    }

    intent: {
        Planning {
            description: "Emit plan"
            fields {
                step: string
            }
        }
    }
}
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModuleType]:
    return generate(
        tmp_path_factory.mktemp("embedding_intents"),
        {
            "rag.agent": RAG,
            "plain.agent": NO_EMBEDDING,
            "openai_rag.agent": OPENAI_RAG,
            "planning.agent": PLANNING,
            "inline.agent": INLINE_INTENT,
        },
    )


DOCS = ["Refunds take five days.", "Shipping is free over 100 cedis.", "We open at nine."]


async def test_rag_in_on_run_start(project: dict[str, ModuleType]) -> None:
    rag = project["rag"]
    vectors: dict[str, list[float]] = {}

    class RagMiddleware(rag.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "rag"

        async def onRunStart(self, session: Any, ctx: Any) -> Any:
            index = await ctx["embedBatch"](DOCS)
            vectors.update(zip(DOCS, index, strict=True))
            turns = session.get("turns", [])
            query = turns[-1]["input"]["text"]
            query_vector = await ctx["embed"](query)
            ranked = sorted(
                DOCS,
                key=lambda d: -sum(a * b for a, b in zip(query_vector, vectors[d], strict=True)),
            )
            ctx["set_context"]({"retrieved_chunks": ranked[:1]})
            return session

    with FakeGeminiServer([text("Refunds take five days.")]) as server:
        agent = rag.auwgent(
            {
                "apiKeys": {"geminiApiKey": "k"},
                "baseUrls": {"gemini": server.base_url},
                "middleware": [RagMiddleware],
            }
        )
        await agent.run("How many days do refunds take?")

    paths = [r.path for r in server.requests]
    assert paths == [
        "/v1beta/models/gemini-embedding-001:batchEmbedContents",
        "/v1beta/models/gemini-embedding-001:batchEmbedContents",
        "/v1beta/models/gemini-2.5-flash:generateContent",
    ] or paths == [
        "/v1beta/models/gemini-embedding-001:batchEmbedContents",
        "/v1beta/models/gemini-embedding-001:embedContent",
        "/v1beta/models/gemini-2.5-flash:generateContent",
    ]
    assert vectors[DOCS[0]] == pytest.approx(hashed_embedding(DOCS[0]))
    assert math.isclose(sum(v * v for v in vectors[DOCS[1]]), 1.0, rel_tol=1e-6)
    system = gemini_system(server.requests[-1].body)
    assert "Refunds take five days." in system  # automatically injected
    assert "Shipping is free" not in system


async def test_embed_without_an_embedding_model_is_a_clear_error(
    project: dict[str, ModuleType],
) -> None:
    plain = project["plain"]
    errors: list[str] = []

    class RagMiddleware(plain.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "rag"

        async def onRunStart(self, session: Any, ctx: Any) -> Any:
            try:
                await ctx["embed"]("hello")
            except Exception as exc:  # the user's code sees a clear error
                errors.append(str(exc))
            return session

    with FakeOpenAIServer([text("Hi.")]) as server:
        agent = plain.auwgent(
            {
                "apiKeys": {"openaiApiKey": "k"},
                "baseUrls": {"openai": server.base_url},
                "middleware": [RagMiddleware],
            }
        )
        await agent.run("hello")
    (message,) = errors
    assert "embedding" in message


async def test_embed_uses_the_active_configs_embedding_model(
    project: dict[str, ModuleType],
) -> None:
    rag = project["openai_rag"]
    lengths: list[int] = []

    class RagMiddleware(rag.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "rag"

        async def onRunStart(self, session: Any, ctx: Any) -> Any:
            vectors = await ctx["embed_batch"](["one", "two"])
            vector = await ctx["embed"](session["turns"][-1]["input"])  # the turn input works
            lengths.extend([len(vectors), len(vector)])
            return session

    with FakeOpenAIServer([text("Hi."), text("Hi.")], embedding_dimensions=5) as server:
        agent = rag.auwgent(
            {
                "apiKeys": {"openaiApiKey": "k"},
                "baseUrls": {"openai": server.base_url},
                "middleware": [RagMiddleware],
            }
        )
        await agent.run("hello")
        await agent.run("hello", config="Large")
    embeddings = [r for r in server.requests if r.path == "/v1/embeddings"]
    assert [r.body["model"] for r in embeddings] == [
        "text-embedding-3-small",
        "text-embedding-3-small",
        "text-embedding-3-large",
        "text-embedding-3-large",
    ]
    assert embeddings[0].body["input"] == ["one", "two"]
    assert lengths == [2, 5, 2, 5]


PLAN_BLOCK = (
    "[custom: Planning]\nstep: Collect user constraints\nconfidence: 0.92\n"
    "rationale: Need constraints before proposing options\n[/custom]"
)
DIALOGUE_BLOCK = (
    "[custom: Dialogue]\ntone: calm\n"
    "summary: I will ask two questions before making a recommendation\n[/custom]"
)


async def test_custom_intents_reach_class_methods_by_name(project: dict[str, ModuleType]) -> None:
    planning = project["planning"]
    printed: list[Any] = []

    class HandleIntent(planning.AuwgentBaseIntentHandler):  # type: ignore[name-defined, misc]
        async def Planning(self, intent: Any, agent_name: str) -> None:
            printed.append(("step:", intent.get("step")))
            printed.append(("confidence:", intent.get("confidence")))

        async def Dialogue(self, intent: Any, agent_name: str) -> None:
            printed.append(("tone:", intent.get("tone")))
            printed.append(("summary:", intent.get("summary")))

    partials: list[tuple[str, Any]] = []
    seen = Recorder()
    reply = text(PLAN_BLOCK + "\n" + DIALOGUE_BLOCK, chunk_size=7)
    with FakeOpenAIServer([reply]) as server:
        agent = planning.auwgent(
            {"apiKeys": {"openaiApiKey": "k"}, "baseUrls": {"openai": server.base_url}}
        )
        agent.on_intent(HandleIntent)
        agent.on_intent(seen)
        agent.on_intent_partial(lambda name, value, agent_name: partials.append((name, value)))
        await agent.run("Help me choose a laptop")

    assert printed == [
        ("step:", "Collect user constraints"),
        ("confidence:", 0.92),
        ("tone:", "calm"),
        ("summary:", "I will ask two questions before making a recommendation"),
    ]
    assert seen.events == [
        (
            "Planning",
            {
                "step": "Collect user constraints",
                "confidence": 0.92,
                "rationale": "Need constraints before proposing options",
            },
            "Main",
        ),
        (
            "Dialogue",
            {
                "tone": "calm",
                "summary": "I will ask two questions before making a recommendation",
            },
            "Main",
        ),
    ]
    # One request: custom intents alone are a complete answer.
    assert len(server.requests) == 1
    system = openai_system(server.requests[0].body)
    assert "Planning" in system and "Emit a structured execution plan" in system

    plan_partials = [value for name, value in partials if name == "Planning"]
    assert plan_partials
    for value in plan_partials:
        assert value["partial"] is True and value["complete"] is False
        assert value["mode"] == "structured"
        assert isinstance(value["segment"], int)
        assert isinstance(value["raw"], str)
        assert isinstance(value["snapshot"], dict)
    assert plan_partials[-1]["snapshot"].get("step") == "Collect user constraints"


async def test_a_sanitised_lowercase_method_and_an_inline_intent(
    project: dict[str, ModuleType],
) -> None:
    inline = project["inline"]
    got: list[Any] = []

    class HandleIntent(inline.AuwgentBaseIntentHandler):  # type: ignore[name-defined, misc]
        async def planning(self, intent: Any, agent_name: str) -> None:
            got.append((intent, agent_name))

    reply = text("[custom: Planning]\nstep: ask for the budget\n[/custom]")
    with FakeOpenAIServer([reply]) as server:
        agent = inline.auwgent(
            {"apiKeys": {"openaiApiKey": "k"}, "baseUrls": {"openai": server.base_url}}
        )
        agent.on_intent(HandleIntent)
        await agent.run("Plan")
    assert got == [({"step": "ask for the budget"}, "Main")]


async def test_tool_call_partials_use_the_structured_envelope(
    project: dict[str, ModuleType], tmp_path: Any
) -> None:
    tools = generate(
        tmp_path,
        {
            "main.agent": """
            agent Main {
                default config {
                    model: openai("gpt-4o")
                    prompt: "You search."
                }
                tool search_docs(query: string): string @desc "Searches the docs"
            }
            """
        },
    )["main"]
    partials: list[Any] = []

    class HandlePartialIntent(tools.AuwgentBasePartialIntentHandler):  # type: ignore[name-defined, misc]
        async def tool_call(self, intent: Any, agent_name: str) -> None:
            partials.append((intent, agent_name))

    script = [
        text("[tool_call: search_docs]\nquery: intent payload shape\n[/tool_call]", chunk_size=6),
        text("Found it."),
    ]
    with FakeOpenAIServer(script) as server:
        agent = tools.auwgent(
            {
                "apiKeys": {"openaiApiKey": "k"},
                "baseUrls": {"openai": server.base_url},
                "tools": {"search_docs": lambda query: "7 hits"},
            }
        )
        agent.on_intent_partial(HandlePartialIntent)
        await agent.run("Find the payload docs")
    assert partials
    last, agent_name = partials[-1]
    assert agent_name == "Main"
    assert last["mode"] == "structured"
    assert last["snapshot"]["type"] == "search_docs"
    assert last["snapshot"]["args"].get("query", "").startswith("intent payload")


async def test_an_invalid_custom_intent_is_sent_back(project: dict[str, ModuleType]) -> None:
    planning = project["planning"]
    seen = Recorder()
    bad = "[custom: Planning]\nstep: ask\nconfidence: very\nrationale: none\n[/custom]"
    good = "[custom: Planning]\nstep: ask\nconfidence: 0.5\nrationale: none\n[/custom]"
    with FakeOpenAIServer([text(bad), text(good)]) as server:
        agent = planning.auwgent(
            {"apiKeys": {"openaiApiKey": "k"}, "baseUrls": {"openai": server.base_url}}
        )
        agent.on_intent(seen)
        await agent.run("Plan")
    assert seen.events == [
        ("Planning", {"step": "ask", "confidence": 0.5, "rationale": "none"}, "Main")
    ]
    assert len(server.requests) == 2
    assert "confidence" in str(server.requests[1].body["messages"][1:])
