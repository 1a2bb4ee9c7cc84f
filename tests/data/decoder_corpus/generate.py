"""Writes ``corpus.json``: the decoder corpus, generated deterministically (a fixed seed).

Run: ``.venv/bin/python tests/data/decoder_corpus/generate.py`` (rewrites the file; the test
``tests/runtime/protocol/test_protocol_corpus.py`` checks the file is what this script writes).

Each case is a model's answer written in one shape the issue lists, built here from the
arguments it means, so the expectation never comes from the decoder itself:

- ``{"args": {...}, "repairs": [kinds]}``: recoverable; the call must decode to exactly these
  arguments and list at least these repair kinds;
- ``{"rejected": "words"}``: ambiguous or hostile; the call must be rejected (nothing runs)
  with a message holding these words;
- ``{"no_call": true}``: the text quotes a block (a code fence): no call at all.

``blocks`` is the whole streamed text of the block protocol; ``native`` (where the shape
applies) the argument text of a native call of ``function``. ``expand`` replaces a marker
by a repeated unit, so huge cases stay small on disk.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
Case = dict[str, Any]


def fld(name: str, type_: Any, optional: bool = False) -> dict[str, Any]:
    return {"name": name, "type": type_, "optional": optional, "description": None}


STRING = {"kind": "string"}
NUMBER = {"kind": "number"}
BOOLEAN = {"kind": "boolean"}
LEVELS = ["user", "address", "region", "district", "city", "block"]


def level_types() -> dict[str, Any]:
    """Level1 .. Level6: each has an optional ``label`` and the next level's field."""
    types: dict[str, Any] = {}
    for depth in range(1, 7):
        fields = [fld("label", STRING, True)]
        if depth < 6:
            fields.append(fld(LEVELS[depth], {"kind": "ref", "name": f"Level{depth + 1}"}, True))
        types[f"Level{depth}"] = {"kind": "object", "fields": fields}
    return types


CONTRACT: dict[str, Any] = {
    "types": level_types(),
    "intents": [{"name": "Later", "description": None, "fields": [fld("step", STRING)]}],
    "callables": [
        {
            "kind": "tool",
            "name": "create_user",
            "params": [
                fld("name", STRING),
                fld("age", NUMBER),
                fld("vip", BOOLEAN, True),
                fld("note", STRING, True),
            ],
        },
        {
            "kind": "tool",
            "name": "notify",
            "params": [
                fld("contact", STRING),
                fld("url", STRING, True),
                fld("value", STRING, True),
                fld("tags", {"kind": "array", "items": STRING}, True),
            ],
        },
        {"kind": "tool", "name": "send_email", "params": [fld("to", STRING)]},
        {"kind": "helper", "name": "DataAnalyzer", "params": [fld("input", STRING)]},
        {"kind": "workflow", "name": "delete_user", "params": [fld("id", STRING)]},
        {"kind": "tool", "name": "place", "params": [fld("user", {"kind": "ref", "name": "Level1"})]},
        {
            "kind": "tool",
            "name": "pick",
            "params": [
                fld("a_b", {"kind": "object", "fields": [fld("c", STRING, True)]}, True),
                fld("a", {"kind": "object", "fields": [fld("b_c", STRING, True)]}, True),
            ],
        },
    ],
}
HEADER = {"tool": "tool_call", "helper": "helper_call", "workflow": "workflow_call"}
KIND_OF = {c["name"]: c["kind"] for c in CONTRACT["callables"]}

# Values a model writes unquoted: spaces, colons, @, +, dots, slashes, hyphens.
WORDS = [
    "Accra",
    "Kwame Mensah",
    "alerts+ops@example.org",
    "https://api.example.com/items/1",
    "https://example.org/a-b/c.html?x=2",
    "region: Tarkwa case 2",
    "north-east",
    "a+b-c",
    "12 Main St.",
    "x@y.z",
    "Ama-Serwaa Boateng",
    "v1.2.3",
    "10:30 tomorrow",
    "ops@team.example.com",
    "Tema Harbour",
    "route 66 / exit 4",
]
# Plain words for JS-style bare values (no commas, brackets or `name:` inside).
BARE = ["Accra", "Kwame", "north-east", "a+b-c", "x@y.z", "v1.2.3", "Tema", "alerts+ops@example.org"]


def header(name: str) -> str:
    return f"[{HEADER[KIND_OF[name]]}: {name}]"


def closer(name: str) -> str:
    return f"[/{HEADER[KIND_OF[name]]}]"


def block(name: str, body: str, lead: str = "") -> str:
    return f"{lead}{header(name)}\n{body}\n{closer(name)}\n"


def line_body(args: dict[str, Any]) -> str:
    lines = []
    for key, value in args.items():
        if isinstance(value, bool):
            lines.append(f"{key}: {'true' if value else 'false'}")
        elif isinstance(value, list):
            lines.append(f"{key}: {json.dumps(value)}")
        else:
            lines.append(f"{key}: {value}")
    return "\n".join(lines)


def js_value(value: Any, quote: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if quote == "":
        return str(value)
    return f"{quote}{value}{quote}"


def user(rng: random.Random) -> dict[str, Any]:
    args: dict[str, Any] = {"name": rng.choice(WORDS), "age": rng.randint(1, 99)}
    if rng.random() < 0.5:
        args["vip"] = rng.random() < 0.5
    if rng.random() < 0.5:
        args["note"] = rng.choice(WORDS)
    return args


def bare_user(rng: random.Random) -> dict[str, Any]:
    args: dict[str, Any] = {"name": rng.choice(BARE), "age": rng.randint(1, 99)}
    if rng.random() < 0.5:
        args["vip"] = rng.random() < 0.5
    if rng.random() < 0.5:
        args["note"] = rng.choice(BARE)
    return args


def final(args: dict[str, Any], *repairs: str) -> dict[str, Any]:
    return {"args": args, "repairs": list(repairs)}


def case(shape: str, name: str, blocks: str | None, expect: dict[str, Any], **more: Any) -> Case:
    out: Case = {"shape": shape, "function": name, "blocks": blocks, "expect": expect}
    out.update(more)
    return out


def nested(path: list[str], value: Any) -> dict[str, Any]:
    out: Any = value
    for name in reversed(path):
        out = {name: out}
    return dict(out)


# ---------------------------------------------------------------------------------------------
# Shapes


def recoverable(rng: random.Random) -> Iterator[Case]:
    for _ in range(30):
        args = user(rng)
        yield case("key_value_lines", "create_user", block("create_user", line_body(args)), final(args))
    for word in WORDS:
        args = {"contact": word, "url": rng.choice(WORDS), "value": rng.choice(WORDS)}
        yield case("values_with_colons_emails_urls", "notify", block("notify", line_body(args)), final(args))
    for _ in range(20):
        args = user(rng)
        text = json.dumps(args, ensure_ascii=False)
        yield case("json_body", "create_user", block("create_user", text), final(args), native=text)
    for _ in range(20):
        args = bare_user(rng)
        pairs = ", ".join(f"{k}: {js_value(v, '')}" for k, v in args.items())
        text = "{" + pairs + "}"
        yield case("unquoted_keys_and_strings", "create_user", block("create_user", text), final(args, "unquoted_key"), native=text)
    for _ in range(20):
        args = bare_user(rng)
        pairs = "\n".join(f"  {k}: {js_value(v, chr(39))}" for k, v in args.items())
        text = "{\n" + pairs + "\n}"
        yield case("missing_commas_single_quotes", "create_user", block("create_user", text), final(args, "single_quotes", "missing_comma"), native=text)
    for _ in range(20):
        args = bare_user(rng)
        pairs = ", ".join(f'"{k}": {json.dumps(v)}' for k, v in args.items())
        text = "{" + pairs + ",}"
        yield case("trailing_commas", "create_user", block("create_user", text), final(args, "trailing_comma"), native=text)
    for _ in range(25):
        args = bare_user(rng)
        pairs = " ".join(f"{k}: {js_value(v, '')}" for k, v in args.items())
        text = "{" + pairs + "}"
        yield case("js_space_separated_pairs", "create_user", block("create_user", text), final(args, "split_pair"), native=text)
    for _ in range(15):
        args = bare_user(rng)
        pairs = "\n".join(f"{k}: {js_value(v, '')}" for k, v in args.items())
        text = "{\n" + pairs + "\n}"
        yield case("js_newline_separated_pairs", "create_user", block("create_user", text), final(args), native=text)
    for _ in range(10):
        args = user(rng)
        text = "```json\n" + json.dumps(args, ensure_ascii=False, indent=2) + "\n```"
        yield case("json_in_code_fence_body", "create_user", block("create_user", text), final(args))
    for depth in range(1, 7):
        path = LEVELS[:depth] + ["label"]
        for _ in range(6):
            value = rng.choice(WORDS)
            args = nested(path, value)
            dotted = block("place", f"{'.'.join(path)}: {value}")
            yield case(f"dotted_key_depth_{depth}", "place", dotted, final(args))
            if depth > 1:
                alias = block("place", f"{'_'.join(path)}: {value}")
                yield case(f"underscore_alias_depth_{depth}", "place", alias, final(args, "alias"))
                bare = rng.choice(BARE)
                js = "{" + f"{'_'.join(path)}: {bare}" + "}"
                js_args = nested(path, bare)
                yield case(f"underscore_alias_js_depth_{depth}", "place", block("place", js), final(js_args, "alias"), native=js)
    for _ in range(12):
        args = user(rng)
        text = f"{header('create_user')[:-1]}\n{line_body(args)}\n{closer('create_user')}\n"
        yield case("header_missing_bracket", "create_user", text, final(args, "header_bracket"))
    for _ in range(12):
        args = user(rng)
        text = f"{header('create_user')}\n{line_body(args)}\n"
        yield case("missing_closer_at_end", "create_user", text, final(args, "missing_closer"))
    for _ in range(8):
        args = user(rng)
        text = f"{header('create_user')}\n{line_body(args)}\n[custom: Later]\nstep: x\n[/custom]\n"
        yield case("missing_closer_next_header", "create_user", text, final(args, "missing_closer"))
    for _ in range(12):
        text = rng.choice(["Summarise", "Please look at", "Low stock in", "Trends for"])
        text += " " + rng.choice(WORDS) + "\nand " + rng.choice(WORDS)
        yield case("single_string_plain_text", "DataAnalyzer", block("DataAnalyzer", text), final({"input": text}))
    for word in WORDS[:10]:
        yield case("single_string_named", "send_email", block("send_email", f"to: {word}"), final({"to": word}))
        yield case("single_string_plain_value", "send_email", block("send_email", word), final({"to": word}) if not _key_like(word) else {"rejected": "only parameter"})
    for _ in range(10):
        args = user(rng)
        args.pop("note", None)
        body = line_body(args) + "\nnote: null"
        yield case("null_optional_lines", "create_user", block("create_user", body), final(args))
        text = json.dumps({**args, "note": None})
        yield case("null_optional_json", "create_user", block("create_user", text), final(args), native=text)
    for _ in range(10):
        args = user(rng)
        body = line_body(args) + f"\nname: {args['name']}"
        yield case("duplicate_same_value", "create_user", block("create_user", body), final(args))
    for _ in range(10):
        args = user(rng)
        body = line_body({**args, "age": f'"{args["age"]}"'})
        if "vip" in args:
            body = body.replace(f"vip: {'true' if args['vip'] else 'false'}", f"vip: {'yes' if args['vip'] else 'no'}")
        yield case("coerced_values", "create_user", block("create_user", body), final(args))


def _key_like(word: str) -> bool:
    head = word.split(" ", 1)[0]
    return head.endswith(":") and "//" not in word[: len(head) + 2]


def rejected(rng: random.Random) -> Iterator[Case]:
    twice = {"rejected": "given twice"}
    for _ in range(20):
        a, b = rng.sample(WORDS, 2)
        yield case("duplicate_lines", "create_user", block("create_user", f"name: {a}\nage: 3\nname: {b}"), twice)
    for _ in range(15):
        a, b = rng.sample(BARE, 2)
        text = json.dumps({"name": a, "age": 3})[:-1] + f', "name": "{b}"}}'
        yield case("duplicate_json", "create_user", block("create_user", text), twice, native=text)
    for _ in range(15):
        a, b = rng.sample(BARE, 2)
        text = f"{{name: {a} age: 3 name: '{b}'}}"
        yield case("duplicate_js", "create_user", block("create_user", text), twice, native=text)
    for depth in range(1, 7):
        path = LEVELS[:depth] + ["label"]
        for _ in range(4):
            a, b = rng.sample(WORDS, 2)
            body = f"{'.'.join(path)}: {a}\n{'.'.join(path)}: {b}"
            yield case(f"duplicate_dotted_depth_{depth}", "place", block("place", body), twice)
            inner = f'{{"label": "{a}", "label": "{b}"}}'
            for name in reversed(LEVELS[1:depth]):
                inner = f'{{"{name}": {inner}}}'
            text = f'{{"user": {inner}}}'
            yield case(f"duplicate_json_depth_{depth}", "place", block("place", text), twice, native=text)
            if depth > 1:
                alias = f"{'.'.join(path)}: {a}\n{'_'.join(path)}: {b}"
                yield case(f"duplicate_alias_vs_dotted_depth_{depth}", "place", block("place", alias), twice)
            objects = f"{_indented(path, a)}\n{_indented(path, b)}"
            yield case(f"duplicate_line_objects_depth_{depth}", "place", block("place", objects), twice)
    only = {"rejected": "only parameter"}
    for _ in range(12):
        a, b = rng.sample(WORDS, 2)
        yield case("single_string_duplicate_lines", "send_email", block("send_email", f"to: {a}\nto: {b}"), twice)
        text = json.dumps({"to": a, "admin": True})
        yield case("single_string_json_extra_key", "send_email", block("send_email", text), only)
        yield case("single_string_other_key", "send_email", block("send_email", f"subject: {a}\nbody: {b}"), only)
        yield case("single_string_js_object", "DataAnalyzer", block("DataAnalyzer", f"{{query: {rng.choice(BARE)} limit: 5}}"), only)
        yield case("single_string_names_itself_later", "send_email", block("send_email", f"Hello there\nto: {b}"), only)
    for _ in range(8):
        value = rng.choice(BARE)
        yield case("ambiguous_alias", "pick", block("pick", f"a_b_c: {value}"), {"rejected": "could be"})
    for digits in (5000, 20000):
        text = '{"name": "Ada", "age": @@N@@}'
        expand = {"marker": "@@N@@", "unit": "9", "times": digits}
        yield case("huge_number_json", "create_user", block("create_user", text), {"rejected": "too long"}, native=text, expand=expand)
        yield case("huge_number_line", "create_user", block("create_user", "name: Ada\nage: @@N@@"), {"rejected": "too long"}, expand=expand)
    for depth in (100, 1000, 100000):
        text = '{"name": "Ada", "age": 1, "note": @@O@@1@@C@@}'
        expand = [{"marker": "@@O@@", "unit": "[", "times": depth}, {"marker": "@@C@@", "unit": "]", "times": depth}]
        yield case("deep_nesting_json", "create_user", block("create_user", text), {"rejected": "nested deeper"}, native=text, expand=expand)
    for depth in (70, 300):
        text = "user:\n@@L@@"
        expand = {"marker": "@@L@@", "unit": "", "times": depth, "indent": True}
        yield case("deep_nesting_lines", "place", block("place", text), {"rejected": "nested deeper"}, expand=expand)
    text = '{"name": "@@S@@", "age": 1}'
    expand = {"marker": "@@S@@", "unit": "x", "times": (1 << 20) + 10}
    yield case("huge_string", "create_user", block("create_user", text), {"rejected": "characters long"}, native=text, expand=expand)


def _indented(path: list[str], value: str) -> str:
    lines = []
    for depth, name in enumerate(path[:-1]):
        lines.append("  " * depth + f"{name}:")
    lines.append("  " * (len(path) - 1) + f"{path[-1]}: {value}")
    return "\n".join(lines)


def fenced(rng: random.Random) -> Iterator[Case]:
    for _ in range(15):
        args = user(rng)
        lead = rng.choice(["Here is how a call looks:\n\n", "Example:\n", ""])
        fence = rng.choice(["```", "```text", "~~~"])
        close = "~~~" if fence == "~~~" else "```"
        text = f"{lead}{fence}\n{block('create_user', line_body(args)).strip()}\n{close}\nThat is all.\n"
        yield case("fenced_block_is_text", "create_user", text, {"no_call": True})
    for _ in range(5):
        text = f"Write it as `[tool_call: create_user]` then the fields.\n"
        yield case("inline_code_header_is_text", "create_user", text, {"no_call": True})


GENERATORS: list[Callable[[random.Random], Iterator[Case]]] = [recoverable, rejected, fenced]


def corpus() -> dict[str, Any]:
    rng = random.Random(13)
    cases: list[Case] = []
    for generate in GENERATORS:
        for item in generate(rng):
            item["id"] = f"{len(cases):04d}-{item['shape']}"
            cases.append(item)
    return {"contract": CONTRACT, "cases": cases}


def render() -> str:
    return json.dumps(corpus(), indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    (HERE / "corpus.json").write_text(render(), encoding="utf-8")
    print(f"{len(corpus()['cases'])} cases")
