"""Every mistake the issues and DECISIONS list, as ``auwgent check`` reports it to a user.

Each case writes a small project, runs the real CLI and asserts: exit code 1, no traceback, a
diagnostic with the documented stable code at the exact ``path:line:col`` of the mistake, the
source line and a caret under it, and a message that says what is wrong (with a did-you-mean
where a name is unknown).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from acceptance_lang_support import (
    MODEL,
    Rendered,
    agent,
    assert_no_traceback,
    diagnostics,
    position_of,
    run,
    write,
)


@dataclass(frozen=True)
class Case:
    """A project with one mistake: where it is and what the report must say."""

    id: str
    files: dict[str, str]
    code: str
    needle: str  # text the caret must start at (first occurrence in `in_file`)
    says: tuple[str, ...] = ()  # fragments the diagnostic (message, notes, help) contains
    in_file: str = "main.agent"
    alone: bool = False  # needs a project of its own (it looks at the other files)


def main(source: str) -> dict[str, str]:
    return {"main.agent": source}


HELPER_OK = (
    'helper Sum {\n    description: "Summarises"\n    default config {\n'
    '        model: G\n        prompt: "Sum."\n    }\n    input: Text\n    output: Text\n}\n'
)

CASES = [
    # ---- unknown names -----------------------------------------------------------------
    Case(
        "unknown-model",
        main(
            agent(config='model: Gmodel\n        prompt: "p"').replace("model G ", "model Gmodel2 ")
        ),
        "E2011",
        "Gmodel\n",
        ("unknown model `Gmodel`", "did you mean `Gmodel2`?"),
    ),
    Case(
        "unknown-type",
        main("type Person { name: string }\n" + agent("    output: Persn")),
        "E2010",
        "Persn",
        ("unknown type `Persn`", "did you mean `Person`?"),
    ),
    Case(
        "unknown-field-type",
        main(
            "type Person { name: string }\ntype Team { lead: Persom }\n" + agent("    output: Team")
        ),
        "E2010",
        "Persom",
        ("`Persom`", "did you mean `Person`?"),
    ),
    *[
        Case(
            f"builtin-type-{written}",
            main(agent(f"    output: {{ a: {written} }}")),
            "E2010",
            f"{written} }}",
            (f"unknown type `{written}`", f"did you mean `{meant}`?"),
        )
        for written, meant in [
            ("String", "string"),
            ("int", "number"),
            ("bool", "boolean"),
            ("Strng", "string"),
        ]
    ],
    Case(
        "unknown-prompt",
        main('prompt Welcome { "Hi" }\n' + agent(config="model: G\n        prompt: Welcom")),
        "E2012",
        "Welcom\n",
        ("unknown prompt `Welcom`", "did you mean `Welcome`?"),
    ),
    Case(
        "unknown-helper",
        main(HELPER_OK + agent("    helpers {\n        Summ\n    }")),
        "E2013",
        "Summ\n",
        ("unknown helper `Summ`", "did you mean `Sum`?"),
    ),
    Case(
        "unknown-intent",
        main(
            'intent Planning {\n    description: "plan"\n    fields { step: string }\n}\n'
            + agent("    intent: Planing")
        ),
        "E2014",
        "Planing",
        ("unknown intent `Planing`", "did you mean `Planning`?"),
    ),
    Case(
        "unknown-granted-tool",
        main(
            HELPER_OK
            + agent(
                "    tool lookup(q: string): string\n"
                "    helpers {\n        Sum with tools { lokup }\n    }"
            )
        ),
        "E2015",
        "lokup",
        ("`lokup`", "did you mean `lookup`?"),
    ),
    Case(
        "granted-tool-of-another-agent",
        main(
            HELPER_OK.replace("    output: Text\n", "    output: Text\n    tool own(): string\n")
            + agent(
                "    tool lookup(q: string): string\n    helpers {\n        Sum with tools { own }\n    }"
            )
        ),
        "E2015",
        "own }",
        ("`own`",),
    ),
    Case(
        "unknown-embedding-model",
        main(agent(config='model: G\n        prompt: "p"\n        embedding: Gg')),
        "E2011",
        "Gg",
        ("unknown model `Gg`", "did you mean `G`?"),
    ),
    # ---- declarations ------------------------------------------------------------------
    Case(
        "duplicate-type",
        main("type P { a: string }\ntype P { b: string }\n" + agent("    output: P")),
        "E2001",
        "P { b",
        ("`P`",),
    ),
    Case(
        "duplicate-tool",
        main(agent("    tool t(): string\n    tool t(): number")),
        "E2001",
        "t(): number",
        ("`t`",),
    ),
    Case(
        "two-agents",
        main(
            agent()
            + 'agent Other {\n    default config {\n        model: G\n        prompt: "p"\n    }\n}\n'
        ),
        "E2002",
        "Other",
        ("agent",),
    ),
    Case(
        "missing-default-config",
        main(MODEL + "agent Main {\n    tool t(): string\n}\n"),
        "E2020",
        "Main",
        ("default config",),
    ),
    Case(
        "config-without-model",
        main(agent(config='prompt: "p"')),
        "E2021",
        "default config",
        ("`model`",),
    ),
    Case(
        "config-without-prompt",
        main(agent(config="model: G")),
        "E2021",
        "default config",
        ("`prompt`",),
    ),
    Case(
        "named-config-without-prompt",
        main(agent("    config Strict {\n        model: G\n    }")),
        "E2021",
        "Strict",
        ("prompt",),
    ),
    Case(
        "helper-without-description",
        main(
            HELPER_OK.replace('    description: "Summarises"\n', "") + agent("    helpers { Sum }")
        ),
        "E2022",
        "Sum {",
        ("description",),
    ),
    Case(
        "helper-described-twice",
        main(
            HELPER_OK.replace('prompt: "Sum."', 'prompt: "Sum."\n        description: "again"')
            + agent("    helpers { Sum }")
        ),
        "E2023",
        'description: "again"',
        ("description",),
    ),
    Case(
        "workflow-without-description",
        main(agent('    workflow w(): string {\n        return "x"\n    }')),
        "E2025",
        "w()",
        ("description",),
    ),
    # ---- modules -------------------------------------------------------------------------
    Case(
        "export-tool",
        main(MODEL + "export tool t(): string\n" + agent()),
        "E1005",
        "export",
        ("tool",),
    ),
    Case(
        "export-workflow",
        main(
            MODEL
            + agent(
                '    export workflow w(): string {\n        description: "d"\n        return "x"\n    }'
            )
        ),
        "E1005",
        "export",
        ("workflow",),
    ),
    Case(
        "import-missing-file",
        {
            "main.agent": 'import { Shared } from "./lib/modles"\n'
            + agent(config='model: Shared\n        prompt: "p"'),
            "lib/models.agent": 'export model Shared { provider: gemini("m") }\n',
        },
        "E1001",
        '"./lib/modles"',
        ("./lib/modles", 'did you mean "./lib/models"?'),
    ),
    Case(
        "import-wrong-folder",
        {
            "agents/main.agent": 'import { Shared } from "./models"\n'
            + agent(config='model: Shared\n        prompt: "p"'),
            "shared/models.agent": 'export model Shared { provider: gemini("m") }\n',
        },
        "E1001",
        '"./models"',
        ('did you mean "../shared/models"?',),
        in_file="agents/main.agent",
        alone=True,
    ),
    Case(
        "import-suffix-typo",
        {
            "main.agent": 'import { Shared } from "./models.agnet"\n'
            + agent(config='model: Shared\n        prompt: "p"'),
            "models.agent": 'export model Shared { provider: gemini("m") }\n',
        },
        "E1001",
        '"./models.agnet"',
        ('did you mean "./models"?',),
    ),
    Case(
        "import-not-relative",
        {
            "agents/main.agent": 'import { Shared } from "shared/models"\n'
            + agent(config='model: Shared\n        prompt: "p"'),
            "shared/models.agent": 'export model Shared { provider: gemini("m") }\n',
        },
        "E1001",
        '"shared/models"',
        ('"../shared/models"',),
        in_file="agents/main.agent",
        alone=True,
    ),
    Case(
        "import-not-exported",
        {
            "main.agent": 'import { Shared } from "./models"\n'
            + agent(config='model: Shared\n        prompt: "p"'),
            "models.agent": 'model Shared { provider: gemini("m") }\n',
        },
        "E1002",
        "Shared }",
        ("`Shared`", "export"),
    ),
    Case(
        "import-no-such-name",
        {
            "main.agent": 'import { Shred } from "./models"\n'
            + agent(config='model: Shred\n        prompt: "p"'),
            "models.agent": 'export model Shared { provider: gemini("m") }\n',
        },
        "E1003",
        "Shred }",
        ("`Shred`", "did you mean `Shared`?"),
    ),
    Case(
        "duplicate-import",
        {
            "main.agent": 'import { Shared } from "./models"\nimport { Shared } from "./models.agent"\n'
            + agent(config='model: Shared\n        prompt: "p"'),
            "models.agent": 'export model Shared { provider: gemini("m") }\n',
        },
        "E1006",
        'Shared } from "./models.agent"',
        ("`Shared`",),
    ),
    # ---- prompts -------------------------------------------------------------------------
    Case(
        "prompt-arity",
        main(
            'prompt Greet(name: string, vip: boolean) { "Hi {{name}}" }\n'
            + agent(
                "    context { name: string }", config="model: G\n        prompt: Greet(ctx.name)"
            )
        ),
        "E2040",
        "Greet(ctx",
        ("Greet",),
    ),
    Case(
        "prompt-argument-type",
        main(
            'prompt Greet(name: string, vip: boolean) { "Hi {{name}}" }\n'
            + agent(
                "    context {\n        name: string\n        vip: boolean\n    }",
                config="model: G\n        prompt: Greet(ctx.vip, ctx.name)",
            )
        ),
        "E2041",
        "ctx.vip,",
        ("string", "boolean"),
    ),
    Case(
        "template-name-not-param",
        main(
            'prompt Greet(name: string) { "Hi {{nme}}" }\n'
            + agent(config='model: G\n        prompt: Greet("a")')
        ),
        "E2042",
        "nme",
        ("`nme`", "did you mean `name`?"),
    ),
    Case(
        "ctx-field-not-declared",
        main(
            agent(
                "    context { name: string }", config='model: G\n        prompt: "Hi {{ctx.nam}}"'
            )
        ),
        "E2043",
        "nam}}",
        ("`ctx.nam`", "did you mean `name`?"),
    ),
    Case(
        "schema-context-without-context",
        main(agent(config='model: G\n        prompt: "{{@schema(context)}}"')),
        "E2044",
        "{{@schema(context)}}",
        ("context",),
    ),
    # ---- workflows -----------------------------------------------------------------------
    *[
        Case(
            f"workflow-{name}",
            main(
                agent(
                    "    tool lookup(q: string, n: number): string\n"
                    "    tool person(): { name: string, age: number }\n"
                    "    workflow w(city: string, days: number): string {\n"
                    '        description: "d"\n' + body + "\n    }"
                )
            ),
            code,
            needle,
            says,
        )
        for name, body, code, needle, says in [
            (
                "unknown-variable",
                "        return cty",
                "E2050",
                "cty",
                ("`cty`", "did you mean `city`?"),
            ),
            (
                "let-redeclared",
                '        let a = "x"\n        let a = "y"\n        return a',
                "E2051",
                'a = "y"',
                ("`a`",),
            ),
            (
                "let-redeclares-param",
                '        let city = "x"\n        return city',
                "E2051",
                "city = ",
                ("`city`",),
            ),
            (
                "assign-undeclared",
                '        b = "x"\n        return city',
                "E2052",
                "b = ",
                ("`b`",),
            ),
            (
                "unknown-tool",
                "        return lokup(city, days)",
                "E2053",
                "lokup",
                ("`lokup`", "did you mean `lookup`?"),
            ),
            ("arity", "        return lookup(city)", "E2054", "lookup(city)", ("lookup",)),
            (
                "argument-type",
                "        return lookup(days, city)",
                "E2055",
                "days, city",
                ("string", "number"),
            ),
            (
                "unknown-member",
                "        let p = person()\n        return p.nmae",
                "E2056",
                "nmae",
                ("`nmae`", "did you mean `name`?"),
            ),
            (
                "condition-not-boolean",
                '        if (city) {\n            return "a"\n        }\n        return "b"',
                "E2058",
                "city)",
                ("boolean",),
            ),
            (
                "operator-types",
                "        let x = days - city\n        return city",
                "E2059",
                "- city",
                ("-",),
            ),
            ("return-type", "        return days", "E2060", "days\n", ("string", "number")),
            (
                "missing-return",
                '        if (days > 1) {\n            return "a"\n        }',
                "E2061",
                "w(",
                ("return",),
            ),
        ]
    ],
    Case(
        "workflow-calls-tool-scoped-to-another-workflow",
        main(
            agent(
                '    workflow a(): string {\n        description: "a"\n'
                "        tools { secret(): string }\n        return secret()\n    }\n"
                '    workflow b(): string {\n        description: "b"\n        return secret()\n    }'
            )
        ),
        "E2053",
        "secret()\n    }\n}",
        ("`secret`",),
    ),
    # ---- annotations ---------------------------------------------------------------------
    Case(
        "example-unknown-argument",
        main(agent('    tool f(city: string): string @example(cty = "Accra")')),
        "E2030",
        "cty",
        ("`cty`",),
    ),
    Case(
        "example-wrong-literal-type",
        main(agent('    tool f(days: number): string @example(days = "three")')),
        "E2031",
        '"three"',
        ("number",),
    ),
    Case(
        "example-after-workflow-wrong-type",
        main(
            agent(
                '    workflow w(days: number): string {\n        description: "d"\n        return "x"\n    } @example(days = true)'
            )
        ),
        "E2031",
        "true)",
        ("number",),
    ),
]


@pytest.fixture(scope="module")
def all_cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, list[Rendered]]:
    """Every case in its own folder of one project, checked by ONE run of the CLI.

    Imports are relative and each file has its own top level, so the cases cannot see each
    other; one process instead of one per case keeps this file fast.
    """
    root = tmp_path_factory.mktemp("mistakes")
    for case in CASES:
        if not case.alone:
            write(root / case.id, case.files)
    result = run("check", ".", cwd=root)
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr + result.stdout
    return result.stdout, result.stderr, diagnostics(result.stderr)


def _run_alone(case: Case) -> subprocess.CompletedProcess[str]:
    """Run a case that must not share its project, in a folder of its own."""
    with tempfile.TemporaryDirectory() as folder:
        write(Path(folder), case.files)
        result = run("check", ".", cwd=Path(folder))
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr + result.stdout
    return result


def test_every_case_is_in_the_summary(all_cases: tuple[str, str, list[Rendered]]) -> None:
    stdout, _, found = all_cases
    errors = sum(1 for d in found if d.severity == "error")
    assert f" {errors} errors" in stdout


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_mistake_is_reported_at_its_place(
    case: Case, all_cases: tuple[str, str, list[Rendered]]
) -> None:
    _, stderr, rendered = all_cases
    path = f"{case.id}/{case.in_file}"
    if case.alone:
        alone = _run_alone(case)
        stderr, rendered, path = alone.stderr, diagnostics(alone.stderr), case.in_file
    found = [d for d in rendered if d.code == case.code and d.path == path]
    assert found, f"no {case.code} in {path}:\n{stderr}"
    line, col = position_of(case.files[case.in_file], case.needle)
    at = [d for d in found if (d.line, d.col) == (line, col)]
    assert at, f"{case.code} not at {path}:{line}:{col}:\n" + "\n".join(d.text for d in found)
    diag = at[0]
    assert diag.severity == "error"
    expected_line = case.files[case.in_file].splitlines()[line - 1]
    assert diag.source_line == expected_line
    assert diag.caret_col == col and diag.carets >= 1
    for fragment in case.says:
        assert fragment in diag.text, f"{fragment!r} missing from:\n{diag.text}"


def test_one_mistake_alone_exits_1(tmp_path: Path) -> None:
    write(tmp_path, main(agent("    output: Persn")))
    result = run("check", "main.agent", cwd=tmp_path)
    assert_no_traceback(result)
    assert result.returncode == 1
    assert re.fullmatch(r"checked 1 file \(1 agent\) in \d+ ms: 1 error\n", result.stdout)


def test_tool_without_return_type_is_an_error(tmp_path: Path) -> None:
    source = agent('    tool f(city: string) @desc "d"')
    write(tmp_path, main(source))
    result = run("check", ".", cwd=tmp_path)
    assert_no_traceback(result)
    assert result.returncode == 1
    [diag, *_] = diagnostics(result.stderr)
    assert diag.line == position_of(source, "@desc")[0]
    assert "return type" in diag.text


def test_import_cycle_shows_the_cycle(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "a.agent": 'import { B } from "./sub/b"\nexport type A { b: B }\n',
            "sub/b.agent": 'import { A } from "../a"\nexport type B { a: A }\n',
        },
    )
    result = run("check", ".", cwd=tmp_path)
    assert_no_traceback(result)
    assert result.returncode == 1
    cycles = [d for d in diagnostics(result.stderr) if d.code == "E1004"]
    assert cycles, result.stderr
    assert any(
        "a.agent -> sub/b.agent -> a.agent" in d.text
        or "sub/b.agent -> a.agent -> sub/b.agent" in d.text
        for d in cycles
    ), result.stderr
    assert all(d.source_line.startswith("import") for d in cycles)


def test_every_error_is_reported_not_only_the_first(tmp_path: Path) -> None:
    source = "type Person { name: string }\n" + agent(
        "    output: Persn\n    helpers { Nobody }", config='model: Gx\n        prompt: "p"'
    )
    write(tmp_path, main(source))
    result = run("check", "main.agent", cwd=tmp_path)
    assert_no_traceback(result)
    codes = {d.code for d in diagnostics(result.stderr)}
    assert {"E2010", "E2011", "E2013"} <= codes, result.stderr


# ---- warnings: reported, exit code 0 ------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "code", "says"),
    [
        (
            {
                "main.agent": 'import { Other } from "./lib"\n' + agent(),
                "lib.agent": 'export model Other { provider: openai("gpt-4o") }\n',
            },
            "W2001",
            "`Other`",
        ),
        ({"main.agent": "type Unused { a: string }\n" + agent()}, "W2002", "`Unused`"),
        (
            {
                "main.agent": agent(
                    "\n".join(
                        f'    tool t{i}(x: string): string @example(x = "a") @example(x = "b")'
                        for i in range(3)
                    )
                )
            },
            "W2003",
            "t2",
        ),
    ],
    ids=["unused-import", "unused-declaration", "more-than-five-examples"],
)
def test_warnings_do_not_fail(files: dict[str, str], code: str, says: str, tmp_path: Path) -> None:
    write(tmp_path, files)
    result = run("check", ".", cwd=tmp_path)
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr
    found = [d for d in diagnostics(result.stderr) if d.code == code]
    assert found and found[0].severity == "warning", result.stderr
    assert says in found[0].text
    assert "1 warning" in result.stdout
