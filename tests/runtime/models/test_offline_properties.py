"""For any declared types, what the offline model writes decodes to values that validate."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auwgent.runtime.evaluate.schema import validate
from auwgent.runtime.protocol import codec_for
from auwgent.runtime.protocol.contract import CallableSpec, Contract, FinalEvent
from auwgent.runtime.providers.base import Message, ModelRequest, StreamEvent
from auwgent.testing.offline import OfflineModel

NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
LITERALS = st.sampled_from(["low", "high", "a b", "x-y", "yes", "1", "true", "", " pad ", "é"])

PRIMITIVES = st.sampled_from([{"kind": "string"}, {"kind": "number"}, {"kind": "boolean"}])


def _literal_union(values: list[str]) -> dict[str, Any]:
    literals = [{"kind": "literal", "value": v} for v in dict.fromkeys(values)]
    return literals[0] if len(literals) == 1 else {"kind": "union", "variants": literals}


def _fields(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[list[dict[str, Any]]]:
    field = st.builds(
        lambda name, type_, optional: {
            "name": name,
            "type": type_,
            "optional": optional,
            "description": None,
        },
        NAMES,
        children,
        st.booleans(),
    )
    return st.lists(field, min_size=1, max_size=4, unique_by=lambda f: f["name"])


TYPES = st.recursive(
    st.one_of(PRIMITIVES, st.lists(LITERALS, min_size=1, max_size=3).map(_literal_union)),
    lambda children: st.one_of(
        children.map(lambda t: {"kind": "array", "items": t}),
        _fields(children).map(lambda fs: {"kind": "object", "fields": fs}),
    ),
    max_leaves=6,
)
OBJECTS = _fields(TYPES).map(lambda fs: {"kind": "object", "fields": fs})

USER = (Message("user", "go"),)


async def _finals(protocol: str, contract: Contract) -> list[Any]:
    codec = codec_for(protocol)
    request = ModelRequest(
        "offline",
        codec.system_section(contract),
        USER,
        functions=codec.functions(contract),
        response_schema=codec.response_schema(contract),
        contract=contract,
    )
    events: list[StreamEvent] = [e async for e in OfflineModel(chunk_size=5).stream(request)]
    decoder = codec.decoder(contract)
    decoded = [d for e in events for d in decoder.feed(e)] + decoder.close()
    return [d for d in decoded if type(d).__name__ != "PartialEvent"]


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(output=OBJECTS, protocol=st.sampled_from(["blocks", "native"]))
async def test_structured_answers_validate_for_any_output_type(
    output: dict[str, Any], protocol: str
) -> None:
    types = {"Out": output}
    contract = Contract("Main", (), (), {"kind": "ref", "name": "Out"}, types)
    finals = await _finals(protocol, contract)
    assert len(finals) == 1 and isinstance(finals[0], FinalEvent), finals
    assert finals[0].payload["type"] == "Out"
    assert validate(finals[0].payload["response"], {"kind": "ref", "name": "Out"}, types) == []


@SETTINGS
@given(params=_fields(TYPES), protocol=st.sampled_from(["blocks", "native"]))
async def test_tool_arguments_validate_for_any_parameter_types(
    params: list[dict[str, Any]], protocol: str
) -> None:
    spec = CallableSpec("tool", "probe", "", tuple(params), {"kind": "string"})
    contract = Contract("Main", (spec,), (), {"kind": "text"}, {})
    finals = await _finals(protocol, contract)
    assert len(finals) == 1 and isinstance(finals[0], FinalEvent), finals
    args = finals[0].payload["args"]
    assert validate(args, {"kind": "object", "fields": params}, {}) == []
