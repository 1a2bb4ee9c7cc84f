"""Taint annotations in the compiler: what they lower to, and E2130-E2133 for their misuse
(docs/security.md, docs/checker.md)."""

from __future__ import annotations

from typing import Any

import pytest
from check_support import assert_valid_ir

from auwgent.compiler.pipeline import compile_sources

MODEL = 'model: openai("gpt-4o")'
TRIAGE = """
helper Triage {
    description: "Classifies"
    default config { MODEL prompt: "c" }
    input: { email: string }
    output: { kind: "a" | "b", urgent: boolean, n: number, note: string }
} @quarantine
""".replace("MODEL", MODEL)
GOOD = (
    """
mcp Open { url: "https://open.test/mcp" }
mcp Files { command: "files" } @trusted
"""
    + TRIAGE
    + """
agent Main {
    default config { MODEL prompt: "h" taint: { sensitive: "refuse" } }
    tool read(): string @untrusted
    tool search(q: string): string @mcp(Open)
    tool list(): string @mcp(Files)
    tool send(to: string): string @sensitive
    tool wipe(): string @sensitive(policy = "allow") @approval
    helpers { Triage }
}
""".replace("MODEL", MODEL)
)


def _compile(source: str) -> Any:
    return compile_sources({"main.agent": source})


def _codes(source: str) -> list[tuple[str, str, int]]:
    result = _compile(source)
    return [
        (d.code, d.message, d.source.line_col(d.span.start)[0])
        for d in result.diagnostics
        if d.code.startswith("E")
    ]


def test_the_annotations_lower_to_the_ir() -> None:
    result = _compile(GOOD)
    assert result.ok, [d.message for d in result.diagnostics]
    doc = result.documents["main.agent"]
    assert_valid_ir(doc)
    main = doc["agents"]["Main"]
    tools = {t["name"]: t for t in main["tools"]}
    assert tools["read"]["untrusted"] is True
    assert tools["search"]["untrusted"] is True  # an mcp server is untrusted by default
    assert "untrusted" not in tools["list"]  # ... unless @trusted
    assert tools["send"]["sensitive"] == {"policy": None}
    assert tools["wipe"]["sensitive"] == {"policy": "allow"} and "approval" in tools["wipe"]
    assert main["configs"]["default"]["taint"] == {"sensitive": "refuse"}
    assert doc["agents"]["Triage"]["quarantine"] is True
    assert "quarantine" not in main


def test_without_annotations_the_ir_is_unchanged() -> None:
    plain = (
        f'agent Main {{ default config {{ {MODEL} prompt: "h" }} tool send(to: string): string }}'
    )
    doc = _compile(plain).documents["main.agent"]
    tool = doc["agents"]["Main"]["tools"][0]
    assert set(tool) == {"name", "description", "params", "returns", "examples"}
    assert "taint" not in doc["agents"]["Main"]["configs"]["default"]


def _agent(body: str, config: str = "") -> str:
    return (
        TRIAGE
        + f"""
agent Main {{
    default config {{ {MODEL} prompt: "h" {config} }}
    {body}
}}
"""
    )


@pytest.mark.parametrize(
    ("source", "code", "words"),
    [
        (_agent("tool a(): string @trusted"), "E2130", "`@trusted` does not apply to a tool"),
        (_agent("tool a(): string @quarantine"), "E2130", "`@quarantine` does not apply"),
        (_agent("tool a(x: string @untrusted): string"), "E2130", "parameter"),
        (_agent("context { x: string @sensitive }"), "E2130", "context field"),
        (_agent("helpers { Triage @untrusted }"), "E2130", "helper's line"),
        (
            _agent('workflow w(): string { description: "d" return "x" } @sensitive'),
            "E2130",
            "workflow",
        ),
        (f'mcp S {{ url: "https://s.test" }} @untrusted\n{_agent("")}', "E2130", "an `mcp` server"),
        (
            f'agent Main {{ default config {{ {MODEL} prompt: "h" }} }} @quarantine',
            "E2130",
            "agent `Main`",
        ),
        (_agent("tool a(): string @untrusted @untrusted"), "E2132", "more than one `@untrusted`"),
        (
            _agent('tool a(): string @sensitive @sensitive(policy = "allow")'),
            "E2132",
            "more than one `@sensitive`",
        ),
        (_agent("helpers { Triage handoff user }"), "E2132", "handed the conversation"),
        (_agent("helpers { Triage with all tools }"), "E2131", "cannot be granted tools"),
        (_agent('tool a(): string @sensitive(policy = "ask")'), "E2133", "must be one of"),
        (_agent("tool a(): string @sensitive(mode = 1)"), "E2133", "no argument `mode`"),
        (_agent("", 'taint: { sensitive: "maybe" }'), "E2133", "`taint.sensitive` must be"),
        (_agent("", 'taint: { sinks: "refuse" }'), "E2133", "unknown `taint` field `sinks`"),
        (_agent("", 'taint: "refuse"'), "E2133", "`taint` must be an object"),
    ],
)
def test_misuse_is_reported(source: str, code: str, words: str) -> None:
    found = [(c, m) for c, m, _ in _codes(source)]
    assert any(c == code and words in m for c, m in found), found


@pytest.mark.parametrize(
    ("member", "line"),
    [
        ("tool t(): string", 5),
        ('workflow w(): string { description: "d" return "x" }', 5),
        ("helpers { Other }", 5),
    ],
)
def test_a_quarantine_helper_with_something_to_act_with_is_e2131(member: str, line: int) -> None:
    source = f"""
helper Q {{
    description: "q"
    default config {{ {MODEL} prompt: "q" }}
    {member}
    output: {{ ok: boolean }}
}} @quarantine
helper Other {{ description: "o" default config {{ {MODEL} prompt: "o" }} }}
agent Main {{ default config {{ {MODEL} prompt: "h" }} helpers {{ Q }} }}
"""
    assert ("E2131", line) in [(c, ln) for c, _, ln in _codes(source)]


def test_a_quarantine_helper_in_code_mode_or_without_a_typed_output_is_reported() -> None:
    source = f"""
helper Q {{
    description: "q"
    default config {{ {MODEL} prompt: "q" codeMode: true }}
}} @quarantine
agent Main {{ default config {{ {MODEL} prompt: "h" }} helpers {{ Q }} }}
"""
    codes = [c for c, _, _ in _codes(source)]
    assert "E2131" in codes and "E2132" in codes
