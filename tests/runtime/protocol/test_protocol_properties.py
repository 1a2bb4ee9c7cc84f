"""Properties of the block protocol, checked over generated values and streams."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st
from protocol_contracts import CONTRACTS, STRING, fld

from auwgent.runtime.protocol import BlocksCodec
from auwgent.runtime.protocol.contract import DecodeEvent, FinalEvent, PartialEvent
from auwgent.runtime.protocol.section import render_args
from auwgent.runtime.protocol.values import BodyError, parse_body
from auwgent.runtime.providers.base import TextDelta

FIELDS = [
    fld("title"),
    fld("count", {"kind": "number"}),
    fld("done", {"kind": "boolean"}),
    fld("tags", {"kind": "array", "items": STRING}),
    fld("meta", {"kind": "object", "fields": [fld("owner"), fld("rank", {"kind": "number"})]}),
]
text = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"),
    max_size=40,
)
values = st.fixed_dictionaries(
    {},
    optional={
        "title": text,
        "count": st.integers(-(10**9), 10**9)
        | st.floats(-1e6, 1e6, allow_nan=False).map(lambda f: round(f, 3)),
        "done": st.booleans(),
        "tags": st.lists(text, max_size=4),
        "meta": st.fixed_dictionaries({"owner": text, "rank": st.integers(0, 99)}),
    },
)


@settings(max_examples=150, deadline=None)
@given(values)
@example({"title": ">"})  # alone, `>` and `|` open an indented block: they must be quoted
@example({"title": "|"})
def test_argument_lines_as_the_section_teaches_read_back_exactly(args: dict[str, Any]) -> None:
    assert parse_body(render_args(args), FIELDS, {}) == args


@settings(max_examples=100, deadline=None)
@given(values)
def test_json_bodies_read_back_exactly(args: dict[str, Any]) -> None:
    assert parse_body(json.dumps(args, ensure_ascii=False), FIELDS, {}) == args


def _decode(chunks: list[str]) -> list[DecodeEvent]:
    decoder = BlocksCodec().decoder(CONTRACTS["text"])
    out: list[DecodeEvent] = []
    for chunk in chunks:
        out += decoder.feed(TextDelta(chunk))
    return out + decoder.close()


block = st.sampled_from(
    [
        "[tool_call: get_weather]\nlocation: {v}\n[/tool_call]\n",
        "[tool_call: notify]\ncontact: {v}\ntags:\n  - a\n  - {v}\n[/tool_call]\n",
        "[custom: Planning]\nstep: {v}\nconfidence: 1\n[/custom]\n",
        "[helper_call: DataAnalyzer]\n{v}\n[/helper]\n",
        "[response_text]\n{v}\n[/response_text]\n",
        "[tool_call: nope]\nx: {v}\n[/tool_call]\n",
        "commentary {v}\n",
        "[tool_call: get_weather\nlocation: {v}\n",
    ]
)
word = st.text(alphabet="abc xyz:/@+.-[]_", min_size=1, max_size=12).filter(
    lambda s: s.strip() and "[/" not in s and not s.lstrip().startswith("[")
)


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(block, word), min_size=1, max_size=5), st.data())
def test_any_chunking_decodes_to_the_same_events(
    parts: list[tuple[str, str]], data: st.DataObject
) -> None:
    stream = "".join(template.format(v=value.strip()) for template, value in parts)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(1, len(stream) - 1)), max_size=12))))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True) if a < b]
    whole = [e for e in _decode([stream]) if not isinstance(e, PartialEvent)]
    assert [e for e in _decode(chunks) if not isinstance(e, PartialEvent)] == whole
    assert [e for e in _decode(list(stream)) if not isinstance(e, PartialEvent)] == whole
    assert all(e.raw for e in whole if isinstance(e, FinalEvent))


noise = st.lists(
    st.sampled_from(
        [
            "[",
            "]",
            "{",
            "}",
            ":",
            "=",
            ",",
            "\n",
            "  ",
            "- ",
            '"',
            "'",
            "\\",
            "|",
            "title",
            "tags",
            "meta",
            "meta.owner",
            "meta_rank",
            "x",
            "1",
            "null",
            "```",
            "//",
            "/*",
            "*/",
        ]
    ),
    max_size=25,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(noise)
def test_any_body_reads_or_is_refused_with_a_message(body: str) -> None:
    assert isinstance(parse_body(body, FIELDS, {}, partial=True), dict)
    try:
        parse_body(body, FIELDS, {})
    except BodyError as error:
        assert str(error)
