"""Whatever names and texts an IR holds, the generated module parses, imports, and keeps
every key exactly."""

from __future__ import annotations

import hashlib
import json
import keyword
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auwgent.codegen.python import render_python
from auwgent.ir import with_hash

HANDMADE = Path(__file__).resolve().parents[1] / "data" / "ir" / "handmade"
_BASE: dict[str, Any] = json.loads((HANDMADE / "minimal.agent.json").read_text(encoding="utf-8"))

text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=30)
keys = st.text(
    st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12
) | st.from_regex(r"_{1,2}[a-z]{1,3}_{0,2}", fullmatch=True)
type_names = st.from_regex(r"[A-Z][a-z0-9]{0,6}", fullmatch=True).filter(
    lambda n: n not in {"Any", "Literal", "Union", "TypedDict", "TypeVar", "ClassVar", "Callable",
                        "Awaitable", "Mapping", "Sequence", "Agent"}
)  # fmt: skip
idents = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n)
)
leaf = st.sampled_from([{"kind": "string"}, {"kind": "number"}, {"kind": "boolean"}]) | st.builds(
    lambda v: {"kind": "literal", "value": v}, text
)


def _field(name: str, t: dict[str, Any], optional: bool, desc: str | None) -> dict[str, Any]:
    return {"name": name, "type": t, "optional": optional, "description": desc}


fields = st.lists(
    st.builds(_field, keys, leaf | st.builds(lambda i: {"kind": "array", "items": i}, leaf),
              st.booleans(), st.none() | text),
    max_size=5,
    unique_by=lambda f: f["name"],
)  # fmt: skip


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    doc = json.loads(json.dumps(_BASE))
    names = draw(st.lists(type_names, max_size=3, unique=True))
    # Fields may also refer to the named types, hold inline objects, or unions of both.
    refs = [{"kind": "ref", "name": n} for n in names]
    inner = leaf | st.sampled_from(refs) if refs else leaf
    nested = st.builds(lambda f: {"kind": "object", "fields": f}, fields)
    rich = st.lists(
        st.builds(_field, keys, inner | nested | st.builds(
            lambda a, b: {"kind": "union", "variants": [a, b]}, inner, nested),
            st.booleans(), st.none() | text),
        max_size=4,
        unique_by=lambda f: f["name"],
    )  # fmt: skip
    doc["types"] = {n: {"kind": "object", "fields": draw(rich)} for n in names}
    main = doc["agents"]["Main"]
    main["context"] = draw(fields)
    main["tools"] = [
        {"name": name, "description": draw(st.none() | text), "params": draw(fields),
         "returns": draw(leaf), "examples": []}
        for name in draw(st.lists(idents, max_size=3, unique=True))
    ]  # fmt: skip
    main["intents"] = [
        {"name": name.capitalize(), "description": draw(st.none() | text), "fields": draw(fields)}
        for name in draw(st.lists(idents, max_size=2, unique=True))
    ]
    return with_hash(doc)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_any_names_and_texts_give_a_module_that_imports(doc: dict[str, Any]) -> None:
    source = render_python(doc)
    namespace: dict[str, Any] = {"__name__": "fuzzed_types"}
    exec(compile(source, "fuzzed_types.py", "exec"), namespace)
    for name, t in doc["types"].items():
        cls = namespace[name]
        assert cls.__required_keys__ == {f["name"] for f in t["fields"] if not f["optional"]}
        assert cls.__optional_keys__ == {f["name"] for f in t["fields"] if f["optional"]}
    # The embedded IR is the exact text its hash covers, whatever the names and texts hold.
    digest = hashlib.sha256(namespace["IR_JSON"].encode("utf-8")).hexdigest()
    assert namespace["IR_HASH"] == f"sha256:{digest}" == doc["hash"]
    assert {**json.loads(namespace["IR_JSON"]), "hash": namespace["IR_HASH"]} == doc
    for tool in doc["agents"]["Main"]["tools"]:
        if not tool["name"].startswith("__"):
            method = namespace["AuwgentTools"].__dict__[tool["name"]]
            assert method.__auwgent_unimplemented__ is True
