"""The offline model: deterministic answers from the agent's own contract, no network.

:class:`OfflineModel` is a :class:`~auwgent.runtime.providers.base.Provider` that answers every
request from the protocol contract the engine attaches to it (``request.contract``):

1. On the first model call of a turn it calls every tool the model may use and that has an
   implementation, once each, with the arguments of the tool's first ``@example`` that gives
   every required one, else arguments built from the declared parameter types
   (:func:`auwgent.runtime.evaluate.schema.example_value`).
2. Once the history holds those results (or when there is no tool to call) it answers: for a
   structured output, a value of the first output variant that validates against the declared
   type; for ``Text``, a short text quoting the user's last input.

With the block codec it writes ``[tool_call: name]`` and ``[schema: Name]`` blocks, and a
``[response_text]`` block when the prompt teaches it (plain text otherwise, which both codecs
read as ``response_text``). When the request offers native functions or a response schema it
answers natively: ``tool__<name>`` calls, one ``output__<Type>`` call for a union output, and
other structured output as JSON text. Text is streamed in small chunks so partial intents
happen. ``embed`` returns deterministic unit vectors (:func:`hashed_embedding`).

Run any compiled agent on it without editing the ``.agent`` file: pass ``"provider": "offline"``
in the runtime config, or set the environment variable ``AUWGENT_PROVIDER=offline``.

It is built on the scripted model (:mod:`auwgent.runtime.providers.scripted`): it decides a
:class:`~auwgent.runtime.providers.scripted.Reply` and streams it the scripted model's way.
``auwgent.testing`` re-exports both.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from auwgent.runtime.code_mode import EXECUTE_CODE
from auwgent.runtime.evaluate.schema import example_value
from auwgent.runtime.protocol.contract import CallableSpec, Contract
from auwgent.runtime.protocol.native import function_name, parse_function_name
from auwgent.runtime.protocol.section import output_variants
from auwgent.runtime.providers.base import FunctionSpec, Message, ModelRequest, StreamEvent
from auwgent.runtime.providers.scripted import (
    NativeCall,
    Reply,
    block_text,
    hashed_embedding,
    reply_events,
)

__all__ = ["OfflineModel", "hashed_embedding", "structured_reply"]

_CALL_HEADER = re.compile(r"\[(?:tool_call|workflow_call|helper_call)\s*:")
_QUOTE_LIMIT = 120


class OfflineModel:
    """A deterministic provider that needs no network and no API key.

    Args:
        chunk_size: characters per streamed text piece (small, so partials happen).
        dimensions: length of the vectors returned by :meth:`embed`.
    """

    def __init__(self, *, chunk_size: int = 6, dimensions: int = 8) -> None:
        if chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")
        if dimensions < 1:
            raise ValueError("dimensions must be at least 1")
        self.name = "offline"
        self.chunk_size = chunk_size
        self.dimensions = dimensions
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Answer ``request`` as described in the module docstring."""
        self.requests.append(request)
        reply = respond(request)
        # Ids only need to be unique within a conversation: number them by the model's turn.
        number = 1 + sum(1 for m in request.messages if m.role == "assistant")
        for event in reply_events(reply, call_number=number, chunk_size=self.chunk_size):
            await asyncio.sleep(0)  # let other tasks run between chunks, as a network would
            yield event

    async def embed(
        self, texts: list[str], model: str, options: Mapping[str, Any] | None = None
    ) -> list[list[float]]:
        """One deterministic unit vector per text (see :func:`hashed_embedding`)."""
        return [hashed_embedding(text, self.dimensions) for text in texts]


def respond(request: ModelRequest) -> Reply:
    """The offline model's whole answer to ``request``, before streaming."""
    contract = request.contract if isinstance(request.contract, Contract) else None
    # The native codec always offers functions or a response schema when the contract has
    # anything to call or a structured output; without either, plain text suits both codecs.
    native = bool(request.functions) or request.response_schema is not None
    if contract is not None and not _answers_own_calls(request.messages):
        calls = _tool_calls(contract, request.functions, native)
        if calls:
            return Reply(tuple(calls) if native else (_call_blocks(calls),))
    if contract is not None and contract.output.get("kind") != "text":
        return _structured_answer(request, contract, native)
    return _text_reply(request, native)


# -- reading the history ---------------------------------------------------------------------


def _made_calls(message: Message) -> bool:
    return message.role == "assistant" and (
        bool(message.tool_calls) or _CALL_HEADER.search(message.content) is not None
    )


def _answers_own_calls(messages: Sequence[Message]) -> bool:
    """Whether the last messages are the results of calls the previous response made.

    Native results are ``tool`` messages; block results come back as one user message right
    after the assistant message that held the call blocks.
    """
    if not messages:
        return False
    if messages[-1].role == "tool":
        return True
    return messages[-1].role == "user" and len(messages) > 1 and _made_calls(messages[-2])


def _own_input(messages: Sequence[Message], i: int) -> bool:
    """Whether ``messages[i]`` is the user's own words, not the results of calls."""
    return messages[i].role == "user" and not (i > 0 and _made_calls(messages[i - 1]))


def _turn_input(messages: Sequence[Message]) -> str:
    """The user's last own input: the latest user message that is not a results message."""
    for i in range(len(messages) - 1, -1, -1):
        if _own_input(messages, i):
            return messages[i].content
    return ""


def _called_this_turn(messages: Sequence[Message]) -> list[str]:
    """Names of the calls made since the user's last own input, in order."""
    names: list[str] = []
    for i in range(len(messages) - 1, -1, -1):
        if _own_input(messages, i):
            break
        message = messages[i]
        if message.role == "assistant":
            found = [parse_function_name(c.name)[1] for c in message.tool_calls]
            names[:0] = found or _block_call_names(message.content)
    return names


def _block_call_names(text: str) -> list[str]:
    return re.findall(r"\[(?:tool_call|workflow_call|helper_call)\s*:\s*([^\]\s]+)", text)


# -- calling tools ---------------------------------------------------------------------------


def _tool_calls(
    contract: Contract, functions: Sequence[FunctionSpec], native: bool
) -> list[NativeCall]:
    offered = {f.name for f in functions}
    calls: list[NativeCall] = []
    for spec in contract.callables:
        if spec.kind != "tool" or not spec.configured:
            continue
        name = function_name("tool_call", spec.name) if native else spec.name
        if native and name not in offered:
            continue
        calls.append(NativeCall(name, _example_args(spec, contract)))
    return calls


def _example_args(spec: CallableSpec, contract: Contract) -> dict[str, Any]:
    if spec.raw_body and contract.code_api is not None:
        return {"code": _example_code(contract)}  # code mode's execute_code
    required = [p["name"] for p in spec.params if not p.get("optional", False)]
    for example in spec.examples:
        # The tool's own @example, when it gives every required argument (the checker has
        # matched its values against the parameter types): what a real model would imitate.
        if all(name in example for name in required):
            return dict(example)
    args: dict[str, Any] = {}
    for param in spec.params:
        # Leave optional parameters out: the smallest call that honours the contract.
        if not param.get("optional", False):
            args[param["name"]] = example_value(param["type"], contract.types)
    return args


def _example_code(contract: Contract) -> str:
    """Code mode: a program calling each configured tool of ``api`` once."""
    assert contract.code_api is not None
    calls = []
    for spec in contract.code_api.callables:
        if spec.kind == "tool" and spec.configured:
            args = ", ".join(f"{k}={v!r}" for k, v in _example_args(spec, contract).items())
            calls.append(f"api.{spec.name}({args})")
    return "import api\n[" + ", ".join(calls) + "]"


def _call_blocks(calls: Sequence[NativeCall]) -> str:
    return "\n\n".join(_call_block(call) for call in calls)


def _call_block(call: NativeCall) -> str:
    arguments = call.arguments
    if call.name == EXECUTE_CODE and isinstance(arguments, Mapping):
        return f"[tool_call: {EXECUTE_CODE}]\n{arguments['code']}\n[/tool_call]"  # the code as is
    return block_text("tool_call", call.name, arguments)


# -- answering -------------------------------------------------------------------------------


def _text_reply(request: ModelRequest, native: bool) -> Reply:
    # Defuse "[/" so that a quoted input cannot close a block early.
    text = _text_answer(request.messages).replace("[/", "[ /")
    if native or "[/response_text]" not in request.system:
        return Reply((text,))  # text outside blocks is response_text for the block codec too
    return Reply((f"[response_text]\n{text}\n[/response_text]",))


def _text_answer(messages: Sequence[Message]) -> str:
    said = " ".join(_turn_input(messages).split())
    if len(said) > _QUOTE_LIMIT:
        said = said[: _QUOTE_LIMIT - 3] + "..."
    text = f'Offline reply to "{said}".'
    called = _called_this_turn(messages)
    if called:
        text += " Called: " + ", ".join(called) + "."
    return text


def _structured_answer(request: ModelRequest, contract: Contract, native: bool) -> Reply:
    name, type_ = output_variants(contract)[0]
    return structured_reply(request, contract, example_value(type_, contract.types), native)


def structured_reply(request: ModelRequest, contract: Contract, value: Any, native: bool) -> Reply:
    """``value`` as the structured output of ``contract``, in the request's protocol (the
    first output variant names it when the output is a union)."""
    name, _ = output_variants(contract)[0]
    if not native:
        return Reply((block_text("schema", name, value),))
    function = function_name("response_schema", name)
    if request.response_schema is None and any(f.name == function for f in request.functions):
        # A union output: the native codec offers one output function per variant.
        args = value if isinstance(value, dict) else {"value": value}
        return Reply((NativeCall(function, args),))
    return Reply((json.dumps(value, ensure_ascii=False),))
