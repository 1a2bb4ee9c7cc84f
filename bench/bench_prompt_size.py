"""Size of the first request for an agent with 100 tools: blocks vs native.

Builds the first Chat Completions request body (the OpenAI adapter's own ``build_chat_body``)
for each codec, with an empty base prompt and one short user message, and counts the
characters of its compact JSON, as httpx sends it: the protocol section in the system prompt
plus the native function list.

Run: ``.venv/bin/python bench/bench_prompt_size.py``
"""

from __future__ import annotations

import json
import re

from auwgent.runtime.protocol import codec_for
from auwgent.runtime.protocol.contract import CallableSpec, Contract
from auwgent.runtime.providers.base import Message, ModelRequest
from auwgent.runtime.providers.openai import build_chat_body

KINDS = ("string", "number", "boolean")

# A rough token count without a tokenizer dependency: words, numbers and single punctuation
# marks. BPE tokenizers split JSON punctuation much like this, so the ratio is what matters.
_TOKEN = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")


def tool(i: int) -> CallableSpec:
    params = tuple(
        {
            "name": f"arg_{j}",
            "type": {"kind": KINDS[(i + j) % 3]},
            "optional": j == 2,
            "description": f"the {j}th input" if j == 0 else None,
        }
        for j in range(3)
    )
    return CallableSpec(
        "tool", f"tool_number_{i}", f"Does task number {i}", params, {"kind": "string"}
    )


def main() -> None:
    contract = Contract(
        agent="Big",
        callables=tuple(tool(i) for i in range(100)),
        intents=(),
        output={"kind": "text"},
        types={},
    )
    sizes: dict[str, int] = {}
    tokens: dict[str, int] = {}
    for name in ("blocks", "native"):
        codec = codec_for(name)
        request = ModelRequest(
            model="gpt-4o-mini",
            system=codec.system_section(contract),
            messages=(Message(role="user", content="hello"),),
            functions=codec.functions(contract),
            response_schema=codec.response_schema(contract),
        )
        body = json.dumps(build_chat_body(request), ensure_ascii=False, separators=(",", ":"))
        section = len(request.system)
        sizes[name] = len(body)
        tokens[name] = len(_TOKEN.findall(body))
        print(
            f"{name:>6}: first request {len(body):6} chars, ~{tokens[name]:5} tokens"
            f" (protocol section {section} chars, {len(request.functions)} functions)"
        )
    print(
        f"native / blocks = {sizes['native'] / sizes['blocks']:.1f}x in characters,"
        f" {tokens['native'] / tokens['blocks']:.1f}x in (approximate) tokens"
    )


if __name__ == "__main__":
    main()
