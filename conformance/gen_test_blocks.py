"""Vectors ``test_blocks/<n>``: one DSL ``test`` block each, run by each runtime's test runner
(``auwgent test``, ``auwgent test --runtime ts``): the model script in the agent's protocol,
the tools' values, the recorded intents, and every ``expect`` line that does not hold with
its failure message. A vector is the block's spec (``auwgent.compiler.testspec``), its agent's
IR and the JSON pointers of the IR's whole-number floats. Called from ``generate.py``."""

from __future__ import annotations

import json
from typing import Any

from auwgent.codegen.typescript import whole_floats
from auwgent.compiler.pipeline import compile_sources
from auwgent.testing.dsl import project_tests

DESK = """
helper Billing {
    description: "Settles billing questions with the user"
    default config { model: openai("gpt-4o") prompt: "You settle billing." }
    tool refund(invoice: number): string
}
helper Analyst {
    description: "Analyses a topic"
    default config { model: openai("gpt-4o") prompt: "You analyse." }
    output: { summary: string, score: number }
}
persona Terse { "Answer in one line." }
agent Desk {
    default config { model: openai("gpt-4o") prompt: "You help {{ctx.customer}}." }
    config native {
        model: openai("gpt-4o")
        prompt: "You help {{ctx.customer}}."
        protocol: "native"
    }
    personas { Terse }
    context { customer: string is_admin?: boolean }
    tool lookup(order: string): { status: string, eta: number }
    tool note(text: string): string
    tool save(user: { name: string, tags: string[] }): string
    workflow purge(id: string): string {
        description: "Purges a record"
        tool purge_db(id: string): string
        if (ctx.is_admin) {
            let r = purge_db(id)
            return "purged " + r
        }
        return "denied"
    }
    helpers {
        Billing handoff user
        Analyst
    }
}
"""

PROFILER = """
type Profile { name: string age: number tags: string[] }
agent Profiler {
    default config { model: openai("gpt-4o") prompt: "You build profiles." }
    config native {
        model: openai("gpt-4o")
        prompt: "You build profiles."
        protocol: "native"
    }
    output: Profile
}
"""


def block(name: str, agent: str, body: str, ctx: str = '{ customer: "Ada" }') -> str:
    context = f"    context: {ctx}\n" if agent == "Desk" else ""
    return f'test "{name}" {{\n    agent: {agent}\n{context}{body}\n}}\n'


LOOKUP = '    model {\n        call lookup(order = "A-17")\n        say "A-17 arrives in 2 days."\n    }\n'

DESK_TESTS = [
    block("called with its arguments", "Desk", LOOKUP + '    input: "Where is A-17?"\n'
          '    expect {\n        called lookup(order = "A-17")\n        text contains "2 days"\n    }'),
    block("called with other arguments", "Desk", LOOKUP + '    input: "Where is A-17?"\n'
          '    expect {\n        called lookup(order = "B-2")\n        called note\n    }'),
    block("not called holds", "Desk", LOOKUP + '    input: "Where is A-17?"\n'
          "    expect {\n        not called note\n        not called purge\n    }"),
    block("not called fails, with its arguments", "Desk", LOOKUP + '    input: "Where is A-17?"\n'
          '    expect {\n        not called lookup(order = "A-17")\n        not called lookup\n    }'),
    block("text contains fails (non-ASCII)", "Desk", LOOKUP + '    input: "Where is A-17?"\n'
          '    expect {\n        text contains "naïve café"\n    }'),
    block("natively", "Desk", '    config: native\n' + LOOKUP + '    input: "Where is A-17?"\n'
          '    expect {\n        called lookup(order = "A-17")\n        text contains "2 days"\n    }'),
    block("natively, failing", "Desk", '    config: native\n' + LOOKUP + '    input: "Where?"\n'
          '    expect {\n        not called lookup\n        text contains "3 days"\n    }'),
    block("tools give their values", "Desk", LOOKUP + '    input: "Where is A-17?"\n'
          '    tools { lookup: { status: "lost", eta: 0 } }\n'
          '    expect {\n        intent tool_result { result: { status: "lost" } }\n    }'),
    block("others give an example of their type", "Desk", LOOKUP + '    input: "Where is A-17?"\n'
          '    expect {\n        intent tool_result { result: { status: "example", eta: 1 } }\n    }'),
    block("an intent's fields do not match", "Desk", LOOKUP + '    input: "Where is A-17?"\n'
          '    expect {\n        intent tool_result { result: { status: "shipped" } }\n'
          "        intent helper_call\n    }"),
    block("a workflow and its scoped tool", "Desk", '    input: "Purge r1"\n'
          '    model {\n        call purge(id = "r1")\n        say "Purged."\n    }\n'
          '    tools { purge_db: "ok" }\n'
          '    expect {\n        called purge(id = "r1")\n        called purge_db(id = "r1")\n'
          '        intent workflow_result { result: "purged ok" }\n    }',
          '{ customer: "Ada", is_admin: true }'),
    block("the workflow reads the context", "Desk", '    input: "Purge r1"\n'
          '    model {\n        call purge(id = "r1")\n        say "Denied."\n    }\n'
          '    expect {\n        not called purge_db\n        intent workflow_result { result: "denied" }\n    }',
          '{ customer: "Ada", is_admin: false }'),
    block("a scoped tool called directly is refused", "Desk", '    input: "Purge r1 directly"\n'
          '    model {\n        call purge_db(id = "r1")\n        say "Sorry."\n    }\n'
          '    expect {\n        not called purge_db\n        error contains "purge_db"\n    }'),
    block("an error the test did not expect", "Desk", '    input: "Purge r1 directly"\n'
          '    model {\n        call purge_db(id = "r1")\n        say "Sorry."\n    }\n'
          '    expect {\n        not called purge_db\n    }'),
    block("an error that says something else", "Desk", '    input: "Purge r1 directly"\n'
          '    model {\n        call purge_db(id = "r1")\n        say "Sorry."\n    }\n'
          '    expect {\n        error contains "disk full"\n    }'),
    block("no reply left is an error", "Desk", '    input: "Note it"\n'
          '    model {\n        call note(text = "hello")\n    }\n'
          '    expect {\n        called note(text = "hello")\n        error\n    }'),
    block("no reply left, unexpected", "Desk", '    input: "Note it"\n'
          '    model {\n        call note(text = "hello")\n    }\n'
          '    expect {\n        called note\n    }'),
    block("an error expected but none came", "Desk", LOOKUP + '    input: "Where is A-17?"\n'
          "    expect {\n        error\n    }"),
    block("nested arguments", "Desk", '    input: "Save Ada"\n'
          '    model {\n        call save(user = { name: "Ada", tags: ["math", "poetry"] })\n'
          '        say "Saved."\n    }\n'
          '    expect {\n        called save(user = { name: "Ada", tags: ["math", "poetry"] })\n    }'),
    block("nested arguments that differ", "Desk", '    input: "Save Ada"\n'
          '    model {\n        call save(user = { name: "Ada", tags: ["math"] })\n'
          '        say "Saved."\n    }\n'
          '    expect {\n        called save(user = { name: "Zoë", tags: ["math"] })\n    }'),
    block("a plain helper's output comes back", "Desk", '    input: "Analyse Q3"\n'
          '    model {\n        call Analyst(input = "Q3")\n'
          '        output { summary: "flat", score: 2 }\n        say "Q3 was flat."\n    }\n'
          '    expect {\n        called Analyst(input = "Q3")\n'
          '        intent helper_result { result: { summary: "flat" } }\n'
          '        text contains "flat"\n    }'),
    block("the handed helper's tools are its own", "Desk", '    input: "Refund invoice 7"\n'
          '    model {\n        call Billing(input = "refund 7")\n        call refund(invoice = 7)\n'
          '        say "Refunded invoice 7."\n    }\n'
          '    tools { refund: "refunded" }\n'
          '    expect {\n        intent helper_call { type: "Billing" }\n'
          "        called refund(invoice = 7)\n        not called Billing\n    }"),
    block("with a persona", "Desk", '    persona: Terse\n    input: "Hi"\n'
          '    model {\n        say "Hi."\n    }\n    expect {\n        text contains "Hi."\n    }'),
    block("a text agent has no output", "Desk", '    input: "Hi"\n'
          '    model {\n        say "Hi."\n    }\n    expect {\n        output { name: "Ada" }\n    }'),
]  # fmt: skip

PROFILE = '        output { name: "Ada", age: 36, tags: ["math", "poetry"] }\n'
PROFILER_TESTS = [
    block("a structured output by subset", "Profiler", '    input: "Profile Ada"\n'
          "    model {\n" + PROFILE + "    }\n"
          '    expect {\n        output { name: "Ada", tags: ["math", "poetry"] }\n    }'),
    block("a structured output that differs", "Profiler", '    input: "Profile Ada"\n'
          "    model {\n" + PROFILE + "    }\n"
          '    expect {\n        output { tags: ["math"], name: "Zoë", age: 36 }\n'
          '        text contains "Ada"\n    }'),
    block("a structured output, natively", "Profiler", '    config: native\n    input: "Profile Ada"\n'
          "    model {\n" + PROFILE + "    }\n"
          '    expect {\n        output { age: 36 }\n'
          '        intent response_schema { type: "Profile" }\n    }'),
    block("text instead of the output is sent back, then no reply is left", "Profiler",
          '    input: "Profile Ada"\n    model {\n        say "I cannot."\n    }\n'
          '    expect {\n        error contains "no reply left"\n        output { name: "Ada" }\n    }'),
]  # fmt: skip


def test_block_vectors() -> list[dict[str, Any]]:
    """The ``test_blocks`` group, without ``expected`` (``generate.py`` computes it)."""
    sources = {
        "desk.agent": DESK + "\n" + "\n".join(DESK_TESTS),
        "profiler.agent": PROFILER + "\n" + "\n".join(PROFILER_TESTS),
    }
    result = compile_sources(sources)
    result.raise_for_errors()
    docs = {doc["root"]: json.loads(json.dumps(doc)) for doc in result.documents.values()}
    out = []
    for i, spec in enumerate(project_tests(result)):
        doc = docs[spec["agent"]]
        vector = {
            "id": f"test_blocks/{i}",
            "ir": doc,
            "floats": whole_floats(doc, ""),
            "spec": spec,
        }
        out.append(vector)
    assert len(out) == len(DESK_TESTS) + len(PROFILER_TESTS)
    return out
