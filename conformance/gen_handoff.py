"""Engine scenarios ``engine/handoff/<n>``: the ``handoff_complete`` intent of a helper that was
handed the conversation (``handoff user``), in both protocols: who may emit it, what it does
to the session stack and the parent's history, its payload's validation, and the other
handoff modes beside it (docs/runtime.md, "Helpers"). Called from ``generate.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

HANDOFF_AGENT = """
helper Support {
    description: "Talks billing with the user until it is settled"
    default config { model: openai("gpt-4o") prompt: "You do billing." }
    tool refund(invoice: number): string
}
helper Closer {
    description: "Closes the sale with the user, then hands back"
    default config { model: openai("gpt-4o") prompt: "You close sales." }
}
helper Analyst {
    description: "Analyses a topic"
    default config { model: openai("gpt-4o") prompt: "You analyse." }
}
agent Main {
    default config { model: openai("gpt-4o") prompt: "You help {{ctx.name}}." }
    context { name: string }
    tool lookup(order: string): string
    helpers {
        Support with tools { lookup } handoff user
        Closer handoff user then continue
        Analyst
    }
}
"""

COMPLETE = "handoff_complete"


def tb(kind: str, name: str | None, body: str) -> str:
    head = f"[{kind}: {name}]" if name else f"[{kind}]"
    return f"{head}\n{body}\n[/{kind}]"


def say(text: str) -> str:
    return tb("response_text", None, text)


def done(summary: str | None = None) -> str:
    return tb("custom", COMPLETE, f"summary: {summary}" if summary is not None else "")


def native(*parts: Any) -> dict[str, Any]:
    return {"parts": [p if isinstance(p, str) else {"call": p[0], "args": p[1]} for p in parts]}


HAND = tb("helper_call", "Support", "input: billing")
NATIVE_HAND = native(("helper__Support", {"input": "billing"}))
REFUND = {"refund": {"return": "refunded"}, "lookup": {"return": "shipped"}}

# The conversation handed to Support in one run, continued by the scenarios that say "from".
STARTS: dict[str, dict[str, Any]] = {
    "handed": {"inputs": ["billing"], "replies": [HAND, say("Which invoice?")]},
    "handed_native": {"inputs": ["billing"], "protocol": "native",
                      "replies": [NATIVE_HAND, "Which invoice?"]},
}  # fmt: skip

HANDOFF_SCENARIOS: list[dict[str, Any]] = [
    # Handed over and kept: no handoff_complete, the helper stays on the stack.
    {"inputs": ["billing", "invoice 7"], "replies": [HAND, say("Which invoice?"), say("Invoice 7 is paid.")]},
    # Complete with a summary: popped; the parent's history gets the note; the next run is the parent's.
    {"inputs": ["billing", "invoice 7", "thanks"],
     "replies": [HAND, say("Which invoice?"), say("Refunded.") + "\n" + done("refund 7"), say("Anything else?")]},
    # Complete without a summary: the note has none.
    {"inputs": ["billing", "done", "hi again"],
     "replies": [HAND, say("Which invoice?"), say("Bye.") + "\n" + done(), say("Hello again.")]},
    # Only the intent, no text: a complete answer, not an empty response.
    {"inputs": ["billing", "done", "hi"], "replies": [HAND, say("Which invoice?"), done("nothing to do"), say("Hi.")]},
    # Completed in the same run that handed over.
    {"inputs": ["billing", "next"], "replies": [HAND, say("Settled.") + "\n" + done("settled at once"), say("Next?")]},
    # The helper's tools work while it holds the conversation; then it completes.
    {"inputs": ["billing", "refund 7", "thanks"], "tools": REFUND,
     "replies": [HAND, say("Which invoice?"), tb("tool_call", "refund", "invoice: 7"),
                 say("Refunded 7.") + "\n" + done("refund 7"), say("Glad to help.")]},
    # A number for the summary is read as its text (a block body's scalars are repaired to the
    # declared type, as for any intent): the completion stands.
    {"inputs": ["billing", "x"],
     "replies": [HAND, say("Which invoice?"), tb("custom", COMPLETE, '{"summary": 7}'), say("Still here.")]},
    # An unknown field in the payload: invalid, sent back; the helper keeps the conversation.
    {"inputs": ["billing", "x"],
     "replies": [HAND, say("Which invoice?"), tb("custom", COMPLETE, "summary: ok\nmood: happy"), say("Still here.")]},
    # The root agent was handed nothing: handoff_complete is not its intent.
    {"inputs": ["hi"], "replies": [done("nothing"), say("Hello.")]},
    # A plain helper (no handoff) cannot emit it: its answer is its output.
    {"inputs": ["analyse"],
     "replies": [tb("helper_call", "Analyst", "input: q3"), done("analysed"), say("Flat."), say("Q3 was flat.")]},
    # `handoff user then continue`: the helper answers the user, the parent continues; no intent to give back.
    {"inputs": ["close"],
     "replies": [tb("helper_call", "Closer", "input: close it"), say("Deal closed."), say("Anything else?")]},
    # ... and it cannot emit handoff_complete either.
    {"inputs": ["close"],
     "replies": [tb("helper_call", "Closer", "input: close it"), say("Closed.") + "\n" + done("closed"),
                 say("Closed for real."), say("Done.")]},
    # Twice in one response: one completion, the frame is popped once.
    {"inputs": ["billing", "bye", "hello"],
     "replies": [HAND, say("Which invoice?"), say("Bye.") + "\n" + done("one") + "\n" + done("two"), say("Hello.")]},
    # Native: the intent__handoff_complete function.
    {"inputs": ["billing", "invoice 7", "thanks"], "protocol": "native",
     "replies": [NATIVE_HAND, "Which invoice?",
                 native("Refunded.", ("intent__handoff_complete", {"summary": "refund 7"})), "Anything else?"]},
    # Native, no summary and no text.
    {"inputs": ["billing", "done", "hi"], "protocol": "native",
     "replies": [NATIVE_HAND, "Which invoice?", native(("intent__handoff_complete", {})), "Hi."]},
    # Native, from the root: not a function it was offered.
    {"inputs": ["hi"], "protocol": "native",
     "replies": [native(("intent__handoff_complete", {"summary": "x"})), "Hello."]},
    # Native, an invalid payload.
    {"inputs": ["billing", "x"], "protocol": "native",
     "replies": [NATIVE_HAND, "Which invoice?", native(("intent__handoff_complete", {"summary": ["a"]})), "Still here."]},
    # Continued from a session the Python runtime stored: complete, then the parent.
    {"inputs": ["invoice 9", "thanks"], "from": "handed",
     "replies": [say("Done.") + "\n" + done("9"), say("You are welcome.")]},
    # Continued natively.
    {"inputs": ["invoice 9", "thanks"], "from": "handed_native", "protocol": "native",
     "replies": [native("Done.", ("intent__handoff_complete", {"summary": "9"})), "You are welcome."]},
    # A middleware and a handler see the intent like any other.
    {"inputs": ["billing", "done"],
     "replies": [HAND, say("Which invoice?"), say("Bye.") + "\n" + done("seen")],
     "guards": [{"kind": "middleware", "name": "mw", "on": "never"},
                {"kind": "handler", "name": "h1", "on": "never"}]},
    # A handler that throws on handoff_complete: reported; the completion itself stands.
    {"inputs": ["billing", "done", "hi"], "handler_raises": COMPLETE,
     "replies": [HAND, say("Which invoice?"), say("Bye.") + "\n" + done("raised"), say("Hi.")]},
    # Handed over again after completing: a fresh frame.
    {"inputs": ["billing", "done", "billing again", "invoice 8"],
     "replies": [HAND, say("Which invoice?"), say("Bye.") + "\n" + done("first"),
                 HAND, say("Which one now?"), say("Invoice 8 settled.") + "\n" + done("second")]},
]  # fmt: skip


def handoff_vectors(
    compile_ir: Callable[[str], dict[str, Any]],
    run_vector: Callable[[str, dict[str, Any]], dict[str, Any]],
) -> list[dict[str, Any]]:
    """The ``engine/handoff/<n>`` scenarios (``generate.py`` passes its compiler and runner)."""
    ir = compile_ir(HANDOFF_AGENT)
    out = []
    for i, sc in enumerate(HANDOFF_SCENARIOS):
        sc = {"context": {"name": "Ama"}, **sc}
        if "from" in sc:
            start = {"context": {"name": "Ama"}, **STARTS[sc["from"]]}
            first = run_vector("engine", {"ir": ir, "scenario": start, "chunk_size": 5})
            sc = {**sc, "session": first["session"]}
        out.append({"id": f"engine/handoff/{i}", "ir": ir, "scenario": sc, "chunk_size": 5})
    return out
