"""The IR helpers and the JSON Schema, checked on the hand-made documents."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from auwgent.ir import canonical_json, compute_hash, dumps_ir, load_schema, with_hash

HANDMADE = Path(__file__).parents[2] / "data" / "ir" / "handmade"
DOCS = sorted(HANDMADE.glob("*.agent.json"))


def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(load_schema())


def _load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(load_schema())


def test_load_schema_returns_independent_copies() -> None:
    first = load_schema()
    first["title"] = "changed"
    assert load_schema()["title"] != "changed"


def test_there_are_handmade_documents() -> None:
    assert len(DOCS) >= 3


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_handmade_documents_validate_and_carry_their_hash(path: Path) -> None:
    doc = _load(path)
    _validator().validate(doc)
    assert doc["hash"] == compute_hash(doc)
    assert path.read_text(encoding="utf-8") == dumps_ir(doc)


def test_canonical_json_sorts_keys_and_keeps_unicode() -> None:
    assert canonical_json({"b": 1, "a": ["é", {"d": None, "c": True}]}) == (
        '{"a":["é",{"c":true,"d":null}],"b":1}'
    )


def test_hash_ignores_the_hash_field_and_follows_content() -> None:
    doc = _load(DOCS[0])
    assert compute_hash({**doc, "hash": "sha256:" + "0" * 64}) == doc["hash"]
    changed = {**doc, "root": "Other"}
    assert compute_hash(changed) != doc["hash"]
    assert with_hash(changed)["hash"] == compute_hash(changed)


def test_dumps_ir_is_sorted_indented_and_ends_with_newline() -> None:
    text = dumps_ir({"b": 1, "a": 2})
    assert text == '{\n  "a": 2,\n  "b": 1\n}\n'


def _break(doc: dict[str, Any], mutate: str) -> dict[str, Any]:
    bad = copy.deepcopy(doc)
    main = bad["agents"]["Main"]
    match mutate:
        case "extra_top_key":
            bad["extra"] = 1
        case "no_default_config":
            main["configs"] = {"Strict": main["configs"]["default"]}
        case "unknown_type_kind":
            main["output"] = {"kind": "float"}
        case "bad_stmt":
            main["workflows"][0]["body"][0] = {"s": "while", "loc": [1, 1]}
        case "bad_expr_op":
            main["workflows"][0]["body"][1]["value"] = {"e": "binary", "op": "**"}
        case "custom_without_id":
            main["configs"]["default"]["model"]["provider"] = "custom"
        case "too_many_examples":
            main["examples"] = [main["examples"][0]] * 6
        case "bad_loc":
            main["workflows"][0]["loc"] = [0, 1]
    return bad


@pytest.mark.parametrize(
    "mutate",
    [
        "extra_top_key",
        "no_default_config",
        "unknown_type_kind",
        "bad_stmt",
        "bad_expr_op",
        "custom_without_id",
        "too_many_examples",
        "bad_loc",
    ],
)
def test_schema_rejects_broken_documents(mutate: str) -> None:
    doc = _load(HANDMADE / "workflow.agent.json")
    assert not _validator().is_valid(_break(doc, mutate))


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_handmade_documents_are_what_the_compiler_writes(path: Path) -> None:
    from auwgent.compiler.pipeline import compile_sources

    source = path.with_name(path.name[: -len(".json")])
    result = compile_sources({source.name: source.read_text(encoding="utf-8")})
    assert result.ok, result.diagnostics
    assert dumps_ir(result.documents[source.name]) == path.read_text(encoding="utf-8")
