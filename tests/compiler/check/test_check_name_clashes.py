"""``name_clashes`` finds exactly the E2071 diagnostics of ``lower_file``, without the IR.

``auwgent check`` wants only the diagnostics, so it may call the cheaper walk; both must agree
on every project: the test data, the examples, and generated projects where one name is
given to two declarations in every place the lowering claims names (types through fields,
parameters, returns, inputs, outputs and intents; prompts; helpers; synthesized names).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from check_support import DATA, REPO, sources_of

from auwgent.compiler.diagnostics import render_all
from auwgent.compiler.lower import lower_file, name_clashes
from auwgent.compiler.modules import ModuleGraph, resolve_modules
from auwgent.compiler.parser import parse
from auwgent.compiler.pipeline import compile_sources
from auwgent.compiler.source import SourceFile


def _projects() -> list[Path]:
    found: list[Path] = []
    for folder in (DATA / "check", DATA / "ir", DATA / "ir" / "handmade", DATA / "parse" / "ok"):
        found += sorted(p for p in folder.iterdir() if p.suffix == ".agent" or p.is_dir())
    found += sorted(p for p in (REPO / "examples").iterdir() if p.is_dir())
    return [p for p in found if p.name != "handmade"]


def _graph(sources: dict[str, str]) -> ModuleGraph:
    modules = {path: parse(SourceFile(path, text))[0] for path, text in sorted(sources.items())}
    return resolve_modules(modules)


def _assert_same(sources: dict[str, str]) -> int:
    """Compare both walks on every file; return how many E2071 they found."""
    graph = _graph(sources)
    found = 0
    for path in sorted(graph.scopes):
        try:
            lowered = lower_file(graph, path, hashed=False)
        except Exception:  # noqa: BLE001 - lowering expects checked input; skip what it cannot take
            continue
        clashes = name_clashes(graph, path)
        if lowered is None:
            assert clashes is None, path
            continue
        assert clashes == lowered.diagnostics, path
        found += len(clashes)
    return found


def test_the_test_data_has_projects() -> None:
    assert len(_projects()) > 100


@pytest.mark.parametrize("case", _projects(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_same_diagnostics_as_lowering(case: Path) -> None:
    sources = sources_of(case) if case.is_dir() else {case.name: case.read_text(encoding="utf-8")}
    found = _assert_same(sources)
    assert found == (1 if case.name == "e2071_name_clash_in_ir" else 0)


# --------------------------------------------------------------------------------------------
# Generated clashes

MODEL = 'gemini("gemini-2.5-flash")'

#: Members of an agent or helper that mention the type ``{t}`` (one name, two declarations).
SLOTS = {
    "context": "context {{\n        c: {t}\n    }}",
    "output": "output: {t}",
    "output_union": "output: {t} | {{ a: string }} | {{ b: {t}[] }}",
    "output_object": "output: {{ o: {t}, n?: {{ deep: {t} }} }}",
    "tool": 'tool t_{k}(x: {t}, y?: string): {t}[] @desc "a tool"',
    "tools_block": "tools {{\n        tool u_{k}(x: string): {t} | string\n    }}",
    "workflow": (
        "workflow w_{k}(x: {t}): {t} {{\n"
        '        description: "a workflow"\n'
        "        tool s_{k}(y: {t}[]): {t}\n"
        "        return s_{k}([x])\n"
        "    }}"
    ),
}

INLINE_INTENT = (
    "intent: {{\n        I_{k} {{\n"
    '            description: "an intent"\n'
    "            fields {{\n                f: {t}\n            }}\n        }}\n    }}"
)


def _members(rng: random.Random, key: str, helper: bool) -> list[str]:
    chosen = [slot for slot in SLOTS if rng.random() < 0.35]
    members: list[str] = []
    for slot in chosen:
        if slot.startswith("output") and any(m.startswith("output") for m in members):
            continue
        members.append(SLOTS[slot].format(t=rng.choice(["T", "U", "string"]), k=key))
    if helper and rng.random() < 0.5:
        members.append("input: {\n        i: T\n    }")
    intent = rng.choice(
        ["", "intent: Named", INLINE_INTENT.format(t=rng.choice(["T", "U"]), k=key)]
    )
    return [*members, intent] if intent else members


def _block(kind: str, name: str, members: list[str], prompt: str, description: bool) -> str:
    lines = [f"{kind} {name} {{"]
    if description:
        lines.append('    description: "it helps"')
    lines.append(f"    default config {{\n        model: {MODEL}\n        prompt: {prompt}\n    }}")
    lines += [f"    {m}" for m in members]
    return "\n".join(lines) + "\n}\n"


def _library(rng: random.Random, path: str) -> str:
    """Declarations ``T``, ``U`` (maybe a synthesized name) and prompts, in one file."""
    other = rng.choice(["MainOutput", "MainOutput1", "HInput", "HOutput", "Extra"])
    decls = [
        "export type T {\n    a: string\n}",
        f"export type U {{\n    t: T\n    more: {other}[]\n}}",
        f"export type {other} {{\n    z: number\n}}",
        'export prompt P {\n    "Be kind."\n}',
        'export prompt Q(x: string, y?: T) {\n    "Hello {{x}}."\n}',
        'export intent Named {\n    description: "named"\n    fields {\n        n: U\n    }\n}',
    ]
    return f"// {path}\n" + "\n\n".join(decls) + "\n"


def _imports(spec: str) -> str:
    return f'import {{ T, U, P, Q, Named }} from "{spec}"\n'


def _project(seed: int) -> dict[str, str]:
    rng = random.Random(seed)
    sources = {
        "types/one.agent": _library(rng, "one"),
        "types/two.agent": _library(rng, "two"),
    }
    helper_lib = rng.choice(["one", "two"])
    main_lib = rng.choice(["one", "two"])
    nested = rng.random() < 0.4
    helper_members = _members(rng, "h", helper=True)
    if nested:
        helper_members.append("helpers {\n        Main\n    }")
    helper_prompt = rng.choice(["P", 'Q("a")', 'P + Q("b") + "x"', '"plain"'])
    sources["lib/h.agent"] = (
        _imports(f"../types/{helper_lib}")
        + (
            'import { Main } from "./deep"\n'  # a helper named like the root agent
            if nested
            else ""
        )
        + "\nexport "
        + _block("helper", "H", helper_members, helper_prompt, description=True)
    )
    if nested:
        deep_lib = rng.choice(["one", "two"])
        sources["lib/deep.agent"] = (
            _imports(f"../types/{deep_lib}")
            + "export "
            + _block("helper", "Main", _members(rng, "d", helper=True), '"deep"', description=True)
        )
    main_members = _members(rng, "m", helper=False)
    main_members.append("helpers {\n        H\n    }")
    main_prompt = rng.choice(['Q("c") + P', "P", '"plain" + { "block" }'])
    sources["main.agent"] = (
        _imports(f"./types/{main_lib}")
        + 'import { H } from "./lib/h"\n\n'
        + _block("agent", "Main", main_members, main_prompt, description=False)
    )
    return sources


@pytest.mark.parametrize("seed", range(150))
def test_generated_clashes(seed: int) -> None:
    sources = _project(seed)
    result = compile_sources(sources)
    errors = [d for d in result.errors if d.code != "E2071"]
    assert not errors, render_all(errors, color=False) + "\n\n" + "\n".join(sources.values())
    found = _assert_same(sources)
    assert found == sum(1 for d in result.diagnostics if d.code == "E2071")


def test_generated_projects_do_clash() -> None:
    counts = [_assert_same(_project(seed)) for seed in range(150)]
    assert sum(1 for count in counts if count) > 50
    assert sum(1 for count in counts if not count) > 10
