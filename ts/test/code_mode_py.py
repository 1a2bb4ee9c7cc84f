"""The Python side of ts/test/code_mode.test.mjs: reads a JSON request on argv[1], prints JSON.

``{"do": "stub", "cases": [...]}``: ``api_stub`` of each case (callables, types, examples);
``{"do": "config", "ir": ..., "configs": [...]}``: the ConfigError each runtime config raises
at ``agent_from_ir`` (or null).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from auwgent.errors import AuwgentError
from auwgent.runtime.agent import agent_from_ir
from auwgent.runtime.code_mode import api_stub
from auwgent.runtime.protocol.contract import CallableSpec


def _stub(case: dict[str, Any]) -> str:
    specs = [
        CallableSpec(
            c["kind"],
            c["name"],
            c["description"],
            tuple(c["params"]),
            c["returns"],
            configured=c.get("configured", True),
        )
        for c in case["callables"]
    ]
    return api_stub(specs, case["types"], case.get("examples", ()))


def _config_error(ir: dict[str, Any], config: dict[str, Any]) -> str | None:
    try:
        agent_from_ir(ir, {"provider": "offline", **config})
    except AuwgentError as error:
        return f"{type(error).__name__}: {error}"
    return None


def main() -> None:
    request = json.loads(sys.argv[1])
    if request["do"] == "stub":
        out: Any = [_stub(case) for case in request["cases"]]
    else:
        out = [_config_error(request["ir"], config) for config in request["configs"]]
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    main()
