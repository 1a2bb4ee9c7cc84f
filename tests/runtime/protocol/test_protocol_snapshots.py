"""Incremental snapshots of streaming JSON bodies (``JsonSnapshot``).

Every snapshot must equal what a whole partial read of the same text gives, however the text
was cut on its way; the work must be incremental (each completed value read once); and a
large block must get a partial at least every 8 KB.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from protocol_contracts import STRING, fld

from auwgent.runtime.protocol import BlocksCodec, NativeCodec
from auwgent.runtime.protocol.contract import CallableSpec, Contract, FinalEvent, PartialEvent
from auwgent.runtime.protocol.values import BodyError, JsonPrefix, JsonSnapshot, align, parse_body
from auwgent.runtime.protocol.values.read import _parse_body
from auwgent.runtime.providers.base import TextDelta, ToolCallDelta

NUMBER = {"kind": "number"}
ITEM = {"kind": "object", "fields": [fld("sku"), fld("qty", NUMBER), fld("note", optional=True)]}
LEVEL = {
    "kind": "union",
    "variants": [{"kind": "literal", "value": "low"}, {"kind": "literal", "value": "high"}],
}
TYPES: dict[str, Any] = {"Item": ITEM}
FIELDS = [
    fld("title"),
    fld("count", NUMBER, optional=True),
    fld("done", {"kind": "boolean"}, optional=True),
    fld("items", {"kind": "array", "items": {"kind": "ref", "name": "Item"}}, optional=True),
    fld("matrix", {"kind": "array", "items": {"kind": "array", "items": NUMBER}}, optional=True),
    fld("address", {"kind": "object", "fields": [fld("city"), fld("zip", NUMBER)]}, optional=True),
    fld("tags", {"kind": "array", "items": STRING}, optional=True),
    fld("level", LEVEL, optional=True),
    fld("either", {"kind": "union", "variants": [NUMBER, ITEM]}, optional=True),
]

BODIES = [
    {"title": "plain", "count": 3, "done": True},
    {"title": "nested", "address": {"city": "Accra", "zip": 23301}, "tags": ["a", "b c"]},
    {
        "title": "items",
        "items": [{"sku": f"s-{i}", "qty": i, "note": "x" * i} for i in range(5)],
    },
    {"title": "matrix", "matrix": [[1, 2.5, -3e-2], [], [10, 1e21]]},
    {"title": 'esc\\ap"es\n\u00e9\U0001f600 \t', "tags": ["\\", '"', "\u2028"]},
    {"title": "coerced", "count": "28", "done": "yes", "address": {"city": 5, "zip": "9"}},
    {"title": "nulls", "count": None, "items": [{"sku": "a", "qty": 1, "note": None}]},
    {"title": "union", "level": "high", "either": {"sku": "u", "qty": "2"}},
    {"title": "extra", "unknown": {"deep": [1, {"x": None}]}, "other": [None, "n"]},
]
RAW_BODIES = [
    '{"title": "a", "title": "b", "count": 1}',  # a key given twice
    '{"title": "a", "count": 1, "title": "bb"}',
    '{"address": {"city": "x", "zip": 1}, "title": "t", "address": {"city": "yy", "zip": 2}}',
    '{"title": "dots", "address.city": "Kumasi", "address.zip": 4}',  # dotted keys
    '{"title": "alias", "address_city": "Tema", "address_zip": 7}',  # underscore aliases
    '```json\n{"title": "fenced", "tags": ["x"]}\n```\n',
    '  \n {"title":"tight","items":[{"sku":"a","qty":1},{"sku":"b","qty":2}]}  ',
    '{"title": "num", "count": -12.5e+3, "matrix": [[0, -0.0, 123456789012]]}',
    '{"title": "bad\\u00',  # an escape cut off by the end
    '{"title": "x", "count": 1 "done": true}',  # not JSON: read whole
    '{"title": "x", "tags": ["a",]}',
    "{\"title\": 'single', count: 2}",
    '{"title": "x"} trailing, text',
    '{"title": "deep", "unknown": ' + "[" * 70 + "]" * 70 + "}",
]


def whole(text: str) -> dict[str, Any]:
    """A whole partial read of ``text``, as the decoder did before snapshots were
    incremental (a fresh JSON tracker fed the whole text)."""
    prefix = JsonPrefix()
    prefix.feed(text)
    try:
        return dict(_parse_body(text, FIELDS, TYPES, True, prefix, None))
    except BodyError:
        return {}


def streamed(text: str, cuts: list[int]) -> list[tuple[str, dict[str, Any]]]:
    """Each prefix at ``cuts`` read incrementally by one builder."""
    stream = JsonSnapshot()
    return [
        (text[:cut], parse_body(text[:cut], FIELDS, TYPES, partial=True, stream=stream))
        for cut in cuts
    ]


ALL = [json.dumps(b, ensure_ascii=False) for b in BODIES] + RAW_BODIES


@pytest.mark.parametrize("text", ALL)
def test_every_prefix_matches_a_whole_read(text: str) -> None:
    for prefix, snapshot in streamed(text, list(range(len(text) + 1))):
        assert snapshot == whole(prefix), prefix


@pytest.mark.parametrize("text", ALL)
@pytest.mark.parametrize("seed", range(4))
def test_random_chunkings_match_a_whole_read(text: str, seed: int) -> None:
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, rng.randint(1, 12))))
    for prefix, snapshot in streamed(text, cuts):
        assert snapshot == whole(prefix), prefix


leaf = st.one_of(
    st.integers(-(10**6), 10**6),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.booleans(),
    st.none(),
    st.text(max_size=8),
)
anything = st.recursive(
    leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=12,
)
documents = st.fixed_dictionaries(
    {"title": st.text(max_size=10)},
    optional={
        "count": leaf,
        "items": st.lists(
            st.fixed_dictionaries({"sku": st.text(max_size=6), "qty": leaf}), max_size=4
        ),
        "matrix": st.lists(st.lists(leaf, max_size=3), max_size=3),
        "address": st.dictionaries(st.sampled_from(["city", "zip", "x.y", "a_b"]), leaf),
        "either": anything,
        "free": anything,
    },
)


@settings(max_examples=120, deadline=None)
@given(documents, st.randoms(use_true_random=False))
def test_generated_documents_match_a_whole_read(doc: dict[str, Any], rng: random.Random) -> None:
    text = json.dumps(doc, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1]))
    cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, 16)))
    for prefix, snapshot in streamed(text, cuts):
        assert snapshot == whole(prefix), prefix


@pytest.mark.load
def test_completed_values_are_read_once_and_never_changed() -> None:
    items = [{"sku": f"s-{i}", "qty": i} for i in range(2000)]
    text = json.dumps({"title": "t", "items": items})
    stream = JsonSnapshot()
    cuts = [*range(64, len(text), 64), len(text)]
    snapshots = [parse_body(text[:c], FIELDS, TYPES, partial=True, stream=stream) for c in cuts]
    # Each item (and each field of the open one) is read once, however many snapshots.
    assert len(items) <= stream.values_read <= len(items) + 3 * len(snapshots) + 10
    assert snapshots[-1] == {"title": "t", "items": items}
    # Earlier snapshots still show what they showed: nothing handed out was changed.
    for cut, snapshot in zip(cuts, snapshots, strict=True):
        assert snapshot == whole(text[:cut])


def test_the_final_is_unchanged_by_the_fast_path() -> None:
    repairs: list[dict[str, str]] = []
    body = '{"title": "t", "count": "28", "items": [{"sku": "a", "qty": 1}]}'
    assert parse_body(body, FIELDS, TYPES, repairs=repairs) == {
        "title": "t",
        "count": 28,
        "items": [{"sku": "a", "qty": 1}],
    }
    assert [r["kind"] for r in repairs] == ["coerced"]
    with pytest.raises(BodyError, match="given twice"):
        parse_body('{"title": "a", "title": "b"}', FIELDS, TYPES)


# ---------------------------------------------------------------------------------------------
# Cadence: a partial at least every 8 KB of a large block, in both protocols

REPORT = {"kind": "object", "fields": FIELDS}
SCHEMA = Contract(
    agent="A", callables=(), intents=(), output={"kind": "ref", "name": "Report"},
    types={"Report": REPORT, "Item": ITEM},
)  # fmt: skip
CALL = Contract(
    agent="A",
    callables=(CallableSpec("tool", "save", "", tuple(FIELDS), {"kind": "string"}),),
    intents=(),
    output={"kind": "text"},
    types=TYPES,
)


def big_body() -> str:
    items = [{"sku": f"sku-{i}", "qty": i, "note": "restock " * (i % 5)} for i in range(5000)]
    return json.dumps({"title": "inventory", "items": items})


def longest_gap(raws: list[str], total: int) -> int:
    sizes = [0, *(len(r) for r in raws), total]
    return max(b - a for a, b in zip(sizes, sizes[1:], strict=False))


@pytest.mark.parametrize("chunk", [1, 64])
def test_blocks_partial_every_8_kb(chunk: int) -> None:
    body = big_body()
    text = f"[schema: Report]\n{body}\n[/schema]\n"
    decoder = BlocksCodec().decoder(SCHEMA)
    events = []
    for i in range(0, len(text), chunk):
        events += decoder.feed(TextDelta(text[i : i + chunk]))
    events += decoder.close()
    partials = [e for e in events if isinstance(e, PartialEvent)]
    assert longest_gap([e.raw for e in partials], len(body) + 2) <= 8192
    shown = partials[-1].snapshot["response"]["items"]
    assert len(shown) > 4900 and shown[:-1] == json.loads(body)["items"][: len(shown) - 1]
    final = events[-1]
    assert isinstance(final, FinalEvent) and final.payload["response"] == json.loads(body)


def test_native_call_partial_every_8_kb() -> None:
    body = big_body()
    decoder = NativeCodec().decoder(CALL)
    events = decoder.feed(ToolCallDelta(0, "c1", "tool__save", ""))
    for i in range(0, len(body), 64):
        events += decoder.feed(ToolCallDelta(0, None, None, body[i : i + 64]))
    events += decoder.close()
    partials = [e for e in events if isinstance(e, PartialEvent)]
    assert longest_gap([e.raw for e in partials], len(body)) <= 8192
    final = events[-1]
    assert isinstance(final, FinalEvent) and final.payload["args"] == json.loads(body)


def test_line_bodies_keep_the_cadence_with_the_last_snapshot() -> None:
    """A body that is not JSON is read whole only within the budget; in between, a partial is
    still due every 4 KB and shows the last snapshot again."""
    body = "title: " + "word " * 8000 + "\ncount: 3\n"
    text = f"[schema: Report]\n{body}[/schema]\n"
    decoder = BlocksCodec().decoder(SCHEMA)
    events = []
    for i in range(0, len(text), 64):
        events += decoder.feed(TextDelta(text[i : i + 64]))
    partials = [e for e in events if isinstance(e, PartialEvent)]
    assert longest_gap([e.raw for e in partials], len(body) + 1) <= 8192
    final = (events + decoder.close())[-1]
    assert isinstance(final, FinalEvent) and final.payload["response"]["count"] == 3


def test_native_structured_answer_partial_every_8_kb() -> None:
    body = big_body()
    decoder = NativeCodec().decoder(SCHEMA)
    events = []
    for i in range(0, len(body), 64):
        events += decoder.feed(TextDelta(body[i : i + 64]))
    events += decoder.close()
    partials = [e for e in events if isinstance(e, PartialEvent)]
    assert longest_gap([e.raw for e in partials], len(body)) <= 8192
    shown = partials[-1].snapshot["response"]["items"]
    assert len(shown) > 4900 and shown[:-1] == json.loads(body)["items"][: len(shown) - 1]
    final = events[-1]
    assert isinstance(final, FinalEvent) and final.payload["response"] == json.loads(body)


@settings(max_examples=150, deadline=None)
@given(documents, st.randoms(use_true_random=False))
def test_values_kept_as_parsed_read_as_the_general_reader_does(
    doc: dict[str, Any], rng: random.Random
) -> None:
    """The shortcut for values already aligned gives what aligning and coercing them gives,
    finals (with their repairs and errors) and partials alike."""
    text = json.dumps(doc)
    cut = rng.randint(0, len(text))

    def read(prefix: str) -> Any:
        repairs: list[dict[str, str]] = []
        try:
            final: Any = parse_body(prefix, FIELDS, TYPES, repairs=repairs)
        except BodyError as error:
            final = str(error)
        return final, repairs, whole(prefix[:cut])

    fast = read(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(align.Reader, "plain", lambda self, type_: align._never)
        assert read(text) == fast


@pytest.mark.parametrize("text", ALL)
def test_listed_bodies_read_as_the_general_reader_does(text: str) -> None:
    def read() -> Any:
        repairs: list[dict[str, str]] = []
        try:
            return parse_body(text, FIELDS, TYPES, repairs=repairs), repairs
        except BodyError as error:
            return str(error)

    fast = read()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(align.Reader, "plain", lambda self, type_: align._never)
        assert read() == fast
