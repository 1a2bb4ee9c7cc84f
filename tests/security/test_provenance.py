"""The provenance index on constructed cases beyond the shared vectors (conformance/taint.json):
spans in the original text through URL-decoding and folding, long histories, values that only
look alike, and the normal form itself."""

from __future__ import annotations

import pytest

from auwgent.runtime.provenance import TextIndex, normalise


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("  Hello \n\t World  ", "hello world"),
        ("bob%40x.com", "bob@x.com"),
        ("caf%C3%A9", "café"),
        ("100%", "100%"),
        ("%zz%4", "%zz%4"),
        ("STRASSE Straße", "strasse strasse"),
    ],
)
def test_the_normal_form(text: str, folded: str) -> None:
    assert normalise(text)[0] == folded


def test_spans_point_into_the_original_text() -> None:
    index = TextIndex()
    original = "Hi,\n\n  send   it to  BOB%40Evil.TEST%20now please"
    index.add({"n": 0}, original)
    found = index.find("bob@evil.test now")
    assert found is not None
    start, end = found[1]
    assert original[start:end] == "BOB%40Evil.TEST%20now"


def test_a_long_history_finds_the_one_text_that_holds_the_value() -> None:
    index = TextIndex()
    for i in range(5000):
        index.add({"n": i}, f"mail {i}: write to user{i}@corp.test or user{i}@corp.tests")
    index.add({"n": "last"}, "final note: wire to eve@evil.test")
    found = index.find("EVE@EVIL.TEST")
    assert found is not None and found[0].label == {"n": "last"}
    assert index.find("user4999@corp.test") is not None
    assert index.find("user4999@corp.tes") is None  # only looks alike
    assert index.find("ser4999@corp.test") is None
    assert index.find("eve@evil") is not None  # a bounded prefix is a value of its own


def test_no_value_is_found_across_two_texts() -> None:
    index = TextIndex()
    index.add({"n": 0}, "send to eve")
    index.add({"n": 1}, "@evil.test")
    assert index.find("eve@evil.test") is None
