"""Whatever a user points the CLI at, the answer is a diagnostic or a usage error, never a crash."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from acceptance_lang_support import (
    MODEL,
    agent,
    assert_no_traceback,
    diagnostics,
    position_of,
    run,
    write,
)


def _workflow(expr: str, returns: str = "number") -> str:
    return agent(
        "    tool t(): { a: string }\n"
        f"    workflow w(x: number): {returns} {{\n"
        '        description: "d"\n'
        "        let o = t()\n"
        f"        return {expr}\n    }}"
    )


HOSTILE: dict[str, str | bytes] = {
    "empty": "",
    "only-comments": "// nothing\n/* still nothing */\n",
    "binary": b"\x00\x01\x02\xff\xfe agent",
    "not-utf8": "agent Mäin {}".encode("latin-1"),
    "nul-byte": "agent \x00 Main {}\n",
    "bom": "\ufeff" + agent(),
    "unterminated-comment": agent() + "/* never closed",
    "unterminated-triple": 'prompt P { """ open\n',
    "deep-parens": _workflow("(" * 3000 + "1" + ")" * 3000),
    "long-plus-chain": _workflow("1" + " + 1" * 5000),
    "long-member-chain": _workflow("o" + ".a" * 5000, "string"),
    "long-index-chain": _workflow("o" + "[0]" * 5000, "string"),
    "long-and-chain": _workflow("true" + " && true" * 5000, "boolean"),
    "deep-not": _workflow("!" * 5000 + "true", "boolean"),
    "deep-minus": _workflow("-" * 5000 + "1"),
    "deep-arrays": _workflow("[" * 3000 + "]" * 3000 + "[0]"),
    "deep-objects": _workflow("{ a: " * 3000 + "1" + " }" * 3000 + ".a"),
    "deep-ifs": agent(
        '    workflow w(): number {\n        description: "d"\n'
        + "        if (true) {\n" * 2000
        + "        return 1\n"
        + "        }\n" * 2000
        + "        return 2\n    }"
    ),
    "deep-inline-types": "type T { a: " + "{ a: " * 3000 + "string" + " }" * 3000 + " }\n",
    "long-array-type": "type T { a: string" + "[]" * 5000 + " }\n",
    "deep-template-ifs": 'prompt P { "' + "{{#if a}}" * 3000 + "x" + "{{/if}}" * 3000 + '" }\n',
    "deep-prompt-ifs": "prompt P {\n"
    + "if (ctx.a) {\n" * 2000
    + 'return "x"\n'
    + "}\n" * 2000
    + "}\n",
    "only-braces": "{" * 20000,
    "only-closers": "}" * 20000,
    "random-punctuation": "@#$%^&*()!~`" * 500,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_file_gives_diagnostics_not_a_traceback(name: str, tmp_path: Path) -> None:
    write(tmp_path, {"main.agent": HOSTILE[name]})
    result = run("check", "main.agent", cwd=tmp_path)
    assert_no_traceback(result)
    assert result.returncode in (0, 1), result.stderr
    if result.returncode == 1:
        assert diagnostics(result.stderr), result.stderr


def test_generate_survives_every_hostile_file_at_once(tmp_path: Path) -> None:
    # Each in its own folder (one agent per file), all in one project: one generate run.
    write(tmp_path, {f"{name}/main.agent": text for name, text in HOSTILE.items()})
    result = run("generate", ".", cwd=tmp_path)
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr
    assert "outputs left unchanged" in result.stdout
    assert not (tmp_path / "generated").exists()
    assert {d.path.split("/")[0] for d in diagnostics(result.stderr) if d.severity == "error"}


def test_deep_nesting_is_reported_where_it_happens(tmp_path: Path) -> None:
    source = _workflow("1" + " + 1" * 5000)
    write(tmp_path, {"main.agent": source})
    result = run("check", ".", cwd=tmp_path)
    [diag] = [d for d in diagnostics(result.stderr) if d.code == "E0109"]
    assert diag.path == "main.agent"
    assert diag.line == position_of(source, "return 1 + 1")[0]


def test_long_but_reasonable_chains_are_fine(tmp_path: Path) -> None:
    write(tmp_path, {"main.agent": _workflow("x" + " + 1" * 150)})
    result = run("generate", ".", cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def test_a_huge_file_is_checked(tmp_path: Path) -> None:
    types = "".join(f"export type T{i} {{ a: string, b: number[] }}\n" for i in range(20000))
    write(tmp_path, {"lib.agent": types, "main.agent": agent()})
    result = run("check", ".", cwd=tmp_path)
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("checked 2 files (1 agent)")


def test_directory_named_like_an_agent_file_is_skipped(tmp_path: Path) -> None:
    write(tmp_path, {"main.agent": agent()})
    (tmp_path / "x.agent").mkdir()
    (tmp_path / "x.agent" / "inner.txt").write_text("not a source", encoding="utf-8")
    for command in ("check", "generate"):
        result = run(command, ".", cwd=tmp_path)
        assert_no_traceback(result)
        assert result.returncode == 0, result.stderr
    result = run("check", "x.agent", cwd=tmp_path)
    assert_no_traceback(result)
    assert result.returncode == 2 and "x.agent" in result.stderr


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads anything")
def test_unreadable_file_is_a_diagnostic(tmp_path: Path) -> None:
    write(tmp_path, {"main.agent": agent(), "locked.agent": MODEL})
    (tmp_path / "locked.agent").chmod(0)
    try:
        result = run("check", ".", cwd=tmp_path)
    finally:
        (tmp_path / "locked.agent").chmod(0o644)
    assert_no_traceback(result)
    assert result.returncode == 1
    assert "locked.agent" in result.stderr


def test_not_utf8_names_the_file(tmp_path: Path) -> None:
    write(tmp_path, {"bad.agent": b"type T { a: string } \xff\n", "main.agent": agent()})
    result = run("check", ".", cwd=tmp_path)
    assert_no_traceback(result)
    assert result.returncode == 1
    [diag] = diagnostics(result.stderr)
    assert diag.path == "bad.agent" and "UTF-8" in diag.message


@pytest.mark.parametrize(
    ("yml", "says"),
    [
        ("source: [\n", "invalid YAML"),
        ("- a\n- b\n", "expected a mapping"),
        ("source: 5\n", "source: expected a path string, got the number 5"),
        ("source: missing.agent\n", "missing.agent"),
        ("output: [1]\n", "output: expected a path string"),
        ("targets: [rs]\n", 'targets[0]: expected one of "py", "ts", got "rs"'),
        ("targets: []\n", "targets: expected a list such as [py], got an empty list"),
        ("targets: 3\n", "targets: expected a list"),
        ("sourc: main.agent\n", "did you mean `source`?"),
        (b"source: \xff\n", "auwgent.yml"),
        ("\t\tsource: :\n", "auwgent.yml"),
        (
            "source: main.agent\noutput: a\nsource: other.agent\n",
            "auwgent.yml:3:1: invalid YAML: `source` is given twice",
        ),
        ("source: !!python/object/apply:os.system [echo]\n", "invalid YAML"),
    ],
    ids=[
        "unclosed",
        "list",
        "number",
        "missing-source",
        "list-output",
        "unknown-target",
        "empty-targets",
        "number-targets",
        "misspelt-key",
        "not-utf8",
        "tabs",
        "key-twice",
        "python-tag",
    ],
)
def test_broken_project_file_is_a_usage_error(yml: str | bytes, says: str, tmp_path: Path) -> None:
    write(tmp_path, {"auwgent.yml": yml, "main.agent": agent()})
    for command in ("check", "generate"):
        result = run(command, cwd=tmp_path)
        assert_no_traceback(result)
        assert result.returncode == 2, result.stderr
        assert says in result.stderr
        assert "auwgent.yml" in result.stderr
    assert not (tmp_path / "generated").exists()


def test_empty_project_file_means_defaults(tmp_path: Path) -> None:
    write(tmp_path, {"auwgent.yml": "", "main.agent": agent()})
    result = run("generate", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "generated" / "main_types.py").is_file()


@pytest.mark.parametrize(
    "args",
    [
        ("check", "missing-folder"),
        ("generate", "missing.agent"),
        ("check", "--no-such-flag"),
        ("check", "a", "b"),
        ("frobnicate",),
        (),
    ],
)
def test_usage_errors_exit_2(args: tuple[str, ...], tmp_path: Path) -> None:
    result = run(*args, cwd=tmp_path)
    assert_no_traceback(result)
    assert result.returncode == 2
    assert result.stderr.strip()


def test_a_file_that_is_not_an_agent_file(tmp_path: Path) -> None:
    write(tmp_path, {"notes.txt": "hello"})
    result = run("check", "notes.txt", cwd=tmp_path)
    assert_no_traceback(result)
    assert result.returncode == 2


@pytest.mark.skipif(os.name != "posix", reason="symbolic links")
def test_broken_and_looping_symlinks_are_diagnostics(tmp_path: Path) -> None:
    write(tmp_path, {"main.agent": agent()})
    (tmp_path / "broken.agent").symlink_to(tmp_path / "nowhere.agent")
    (tmp_path / "loop.agent").symlink_to(tmp_path / "loop.agent")
    for command in ("check", "generate"):
        result = run(command, ".", cwd=tmp_path)
        assert_no_traceback(result)
        assert result.returncode == 1, result.stderr
        found = {d.path: d for d in diagnostics(result.stderr)}
        assert found["broken.agent"].code == "E0000"
        assert found["loop.agent"].code == "E0000"


@pytest.mark.skipif(sys.platform != "linux", reason="file names as raw bytes")
def test_a_file_name_that_is_not_utf8_is_a_diagnostic(tmp_path: Path) -> None:
    write(tmp_path, {"main.agent": agent()})
    with open(os.path.join(os.fsencode(tmp_path), b"\xff.agent"), "w", encoding="utf-8") as f:
        f.write("type T { a: string }\n")
    for command in ("check", "generate"):
        result = run(command, ".", cwd=tmp_path)
        assert_no_traceback(result)
        assert result.returncode == 1, result.stderr
        [diag] = diagnostics(result.stderr)
        assert diag.code == "E0000" and "UTF-8" in diag.message
