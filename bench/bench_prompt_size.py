"""Size of the first request for an agent with 100 tools: blocks vs native.

Counts the characters the codec adds to the first request: the protocol section (system
prompt) plus the native functions serialised as JSON, the way a provider sends them.

Run: ``.venv/bin/python bench/bench_prompt_size.py``
"""

from __future__ import annotations

import json

from auwgent.runtime.protocol import codec_for
from auwgent.runtime.protocol.contract import CallableSpec, Contract

KINDS = ("string", "number", "boolean")


def tool(i: int) -> CallableSpec:
    params = tuple(
        {"name": f"arg_{j}", "type": {"kind": KINDS[(i + j) % 3]}, "optional": j == 2,
         "description": f"the {j}th input" if j == 0 else None}
        for j in range(3)
    )
    return CallableSpec("tool", f"tool_number_{i}", f"Does task number {i}", params,
                        {"kind": "string"})


def main() -> None:
    contract = Contract(
        agent="Big", callables=tuple(tool(i) for i in range(100)), intents=(),
        output={"kind": "text"}, types={},
    )
    sizes = {}
    for name in ("blocks", "native"):
        codec = codec_for(name)
        functions = [
            {"type": "function", "function": {"name": f.name, "description": f.description,
                                              "parameters": f.parameters}}
            for f in codec.functions(contract)
        ]
        section = codec.system_section(contract)
        payload = json.dumps(functions, separators=(",", ":")) if functions else ""
        sizes[name] = len(section) + len(payload)
        print(f"{name:>6}: section {len(section):6} chars + functions JSON {len(payload):6}"
              f" chars = {sizes[name]:6} chars")
    print(f"native / blocks = {sizes['native'] / sizes['blocks']:.1f}x")


if __name__ == "__main__":
    main()
