"""The decoder corpus (``tests/data/decoder_corpus``): every case decoded whole and in 1-, 3-
and 16-character chunks plus two random chunkings, in both protocols where the shape applies.

All ways must settle identically; the call must decode to exactly the arguments the generator
meant (with at least the repairs it expects), or be rejected, or (quoted blocks) not happen;
and every partial snapshot must be a prefix of the truth: a key only if the final has it, a
text value a prefix of the final one, anything else equal to it.
"""

from __future__ import annotations

import importlib.util
import json
import random
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from protocol_contracts import is_prefix

from auwgent.runtime.protocol import BlocksCodec, NativeCodec
from auwgent.runtime.protocol.contract import (
    CallableSpec,
    Contract,
    DecodeEvent,
    FinalEvent,
    PartialEvent,
    RejectedEvent,
)
from auwgent.runtime.protocol.native import function_name
from auwgent.runtime.protocol.section import BLOCK_KIND
from auwgent.runtime.providers.base import StreamEvent, TextDelta, ToolCallDelta

pytestmark = pytest.mark.corpus

HERE = Path(__file__).parents[2] / "data" / "decoder_corpus"
CORPUS = json.loads((HERE / "corpus.json").read_text(encoding="utf-8"))
CASES = CORPUS["cases"]
CALLS = ("tool_call", "workflow_call", "helper_call")


def _contract() -> Contract:
    spec = CORPUS["contract"]
    callables = tuple(
        CallableSpec(c["kind"], c["name"], "", tuple(c["params"]), {"kind": "boolean"})
        for c in spec["callables"]
    )
    return Contract(
        agent="Main",
        callables=callables,
        intents=tuple(spec["intents"]),
        output={"kind": "text"},
        types=spec["types"],
    )


CONTRACT = _contract()
KINDS = {c.name: c.kind for c in CONTRACT.callables}


@cache
def _expanded(text: str, index: int) -> str:
    expands = CASES[index].get("expand") or []
    for spec in expands if isinstance(expands, list) else [expands]:
        if spec.get("indent"):
            lines = [" " * (i + 1) + f"k{i}:" for i in range(spec["times"])]
            unit = "\n".join([*lines, " " * (spec["times"] + 1) + "label: x"])
        else:
            unit = spec["unit"] * spec["times"]
        text = text.replace(spec["marker"], unit)
    return text


def _chunks(text: str, index: int) -> list[tuple[str, list[str]]]:
    rng = random.Random(index)
    ways = [("whole", [text])]
    for size in (1, 3, 16):
        ways.append((f"{size}-char", [text[i : i + size] for i in range(0, len(text), size)]))
    for n in range(2):
        cuts, i = [], 0
        while i < len(text):
            step = rng.choice((1, 2, 5, 7, 11, 40))
            cuts.append(text[i : i + step])
            i += step
        ways.append((f"random-{n}", cuts))
    return ways


def _blocks(chunks: list[str], partials: bool) -> list[DecodeEvent]:
    decoder = BlocksCodec().decoder(CONTRACT, partials=partials)
    out: list[DecodeEvent] = []
    for chunk in chunks:
        out += decoder.feed(TextDelta(chunk))
    return out + decoder.close()


def _native(function: str, chunks: list[str], partials: bool) -> list[DecodeEvent]:
    decoder = NativeCodec().decoder(CONTRACT, partials=partials)
    out: list[DecodeEvent] = []
    for n, chunk in enumerate(chunks):
        event: StreamEvent = ToolCallDelta(0, "c0" if n == 0 else None, function, chunk)
        out += decoder.feed(event)
    return out + decoder.close()


def settled(events: list[DecodeEvent]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for e in events:
        if isinstance(e, FinalEvent):
            out.append(("final", e.kind, e.name, e.segment, e.payload, e.raw, e.repairs))
        elif isinstance(e, RejectedEvent):
            out.append(("rejected", e.kind, e.name, e.segment, e.message, e.raw))
    return out


def check_partials(events: list[DecodeEvent]) -> None:
    finals = {e.segment: e for e in events if isinstance(e, FinalEvent)}
    for e in events:
        if not isinstance(e, PartialEvent) or e.kind not in CALLS:
            continue
        final = finals.get(e.segment)
        if final is not None:
            assert is_prefix(e.snapshot, final.payload), (e.snapshot, final.payload)


def check_expectation(expect: dict[str, Any], got: list[tuple[Any, ...]]) -> None:
    calls = [row for row in got if row[1] in CALLS or (row[0] == "rejected" and row[1] is None)]
    if expect.get("no_call"):
        assert calls == []
        return
    assert len(calls) == 1, got
    row = calls[0]
    if "rejected" in expect:
        assert row[0] == "rejected", row
        assert expect["rejected"] in row[4], row[4]
        return
    assert row[0] == "final", row
    assert row[4]["args"] == expect["args"]
    kinds = {r["kind"] for r in row[6]}
    assert set(expect["repairs"]) <= kinds, (expect["repairs"], row[6])


def _huge(index: int) -> bool:
    return len(_expanded(CASES[index]["blocks"], index)) > 50_000


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c["id"] for c in CASES])
def test_corpus_case(index: int) -> None:
    item = CASES[index]
    partials = not _huge(index)  # partials of megabyte bodies are covered by bench_decode
    ways = [("blocks", _expanded(item["blocks"], index))]
    if item.get("native") is not None:
        ways.append(("native", _expanded(item["native"], index)))
    for protocol, text in ways:
        results = {}
        for label, chunks in _chunks(text, index):
            if protocol == "blocks":
                events = _blocks(chunks, partials)
            else:
                kind = BLOCK_KIND[KINDS[item["function"]]]
                events = _native(function_name(kind, item["function"]), chunks, partials)
            check_partials(events)
            results[label] = settled(events)
        first = results["whole"]
        for label, result in results.items():
            assert result == first, f"{protocol}: {label} differs from whole"
        check_expectation(item["expect"], first)


def test_corpus_is_what_the_generator_writes_and_large_enough() -> None:
    spec = importlib.util.spec_from_file_location("corpus_generate", HERE / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.render() == (HERE / "corpus.json").read_text(encoding="utf-8")
    assert len(CASES) >= 600


def test_docs_print_the_corpus_rates() -> None:
    """docs/protocol.md states the corpus counts; the case tests above hold them at 100%."""
    recoverable = sum(1 for c in CASES if "args" in c["expect"])
    refused = sum(1 for c in CASES if "args" not in c["expect"])
    native = sum(1 for c in CASES if c.get("native") is not None)
    docs = (Path(__file__).parents[3] / "docs" / "protocol.md").read_text(encoding="utf-8")
    line = (
        f"{len(CASES)} cases ({native} also as native calls): recovered exactly"
        f" {recoverable}/{recoverable} (100%), rejected or left as text {refused}/{refused} (100%)"
    )
    assert line in re.sub(r"\s+", " ", docs)
