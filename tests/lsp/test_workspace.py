"""The incremental check: after an edit only the affected files are checked again, and the
diagnostics are always those of a whole-project check."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from auwgent.compiler.pipeline import compile_sources
from auwgent.lsp.workspace import ProjectState, Workspace

LIB = "export type Row {\n    id: string\n}\n"


def _agent(name: str, imports: bool) -> str:
    head = 'import { Row } from "./lib"\n\n' if imports else ""
    output = "Row" if imports else "Text"
    return (
        f'{head}agent {name} {{\n    default config {{\n        model: gemini("m")\n'
        f'        prompt: "Hi."\n    }}\n    output: {output}\n}}\n'
    )


def _project(tmp_path: Path) -> ProjectState:
    (tmp_path / "auwgent.yml").write_text("source: .\n")
    (tmp_path / "lib.agent").write_text(LIB)
    (tmp_path / "a.agent").write_text(_agent("A", True))
    (tmp_path / "b.agent").write_text(_agent("B", True))
    (tmp_path / "c.agent").write_text(_agent("C", False))
    project, rel = Workspace().project_for(tmp_path / "a.agent")
    assert rel == "a.agent"
    return project


def _expected(project: ProjectState) -> dict[str, list[str]]:
    result = compile_sources(dict(project.texts))
    found: dict[str, list[str]] = {path: [] for path in project.texts}
    for diag in result.diagnostics:
        found[diag.source.path].append(f"{diag.location()} {diag.code} {diag.message}")
    return found


def _shown(project: ProjectState) -> dict[str, list[str]]:
    return {
        path: [f"{d.location()} {d.code} {d.message}" for d in project.diagnostics.get(path, [])]
        for path in project.texts
    }


def test_only_the_affected_files_are_checked_again(tmp_path: Path) -> None:
    project = _project(tmp_path)
    assert set(project.check()) == {"a.agent", "b.agent", "c.agent", "lib.agent"}
    assert project.last_checked == {"a.agent", "b.agent", "c.agent", "lib.agent"}

    project.update("c.agent", _agent("C", False) + "// edited\n")
    assert set(project.check()) == {"c.agent"}
    assert project.last_checked == {"c.agent"}

    project.update("a.agent", _agent("A", True) + "// edited\n")
    assert set(project.check()) == {"a.agent"}
    assert project.last_checked == {"a.agent", "lib.agent"}  # with what it imports

    project.update("lib.agent", LIB + "// edited\n")
    assert set(project.check()) == {"lib.agent"}  # the others' diagnostics did not change
    assert project.last_checked == {"lib.agent", "a.agent", "b.agent"}  # and its importers
    assert project.check() == {}  # nothing changed: nothing to do
    assert _shown(project) == _expected(project)


def test_errors_are_those_of_a_whole_check(tmp_path: Path) -> None:
    project = _project(tmp_path)
    project.check()
    project.update("lib.agent", LIB.replace("Row", "Rows"))
    changed = project.check()
    assert project.last_checked == {"lib.agent", "a.agent", "b.agent"}
    assert [d.code for d in changed["a.agent"]] == ["E1003"]
    assert _shown(project) == _expected(project)
    project.update("c.agent", _agent("C", False).replace("Text", "Nope"))
    project.check()
    assert _shown(project) == _expected(project)
    project.update("lib.agent", LIB)
    project.update("c.agent", _agent("C", False))
    changed = project.check()
    assert all(diags == [] for diags in changed.values())
    assert _shown(project) == _expected(project)

    # Closing an unsaved buffer goes back to the text on disk.
    project.update("c.agent", "agent {")
    assert project.check()["c.agent"]
    project.update("c.agent", None)
    assert project.check()["c.agent"] == []


def test_random_edits_always_give_the_whole_check(tmp_path: Path) -> None:
    """Edits of every kind, one after the other (breaking and fixing imports, exports,
    syntax): after each, every file's diagnostics are exactly a whole-project check's."""
    project = _project(tmp_path)
    project.check()
    rng = random.Random(7)
    texts = dict(project.texts)
    edits = [
        lambda s: s.replace("export type", "type"),
        lambda s: s.replace("Row", "Rows"),
        lambda s: s.replace("Text", "Nope"),
        lambda s: s.replace("{", "", 1),
        lambda s: s.replace('"./lib"', '"./lob"'),
        lambda s: s + "\ntype Spare {\n    x: string\n}\n",
        lambda s: s.replace('gemini("m")', 'custom("p", "http://127.0.0.1:1", "m")'),
        lambda s: s,
    ]
    for _ in range(60):
        path = rng.choice(sorted(texts))
        text = rng.choice(edits)(texts[path] if rng.random() < 0.5 else project.texts[path])
        project.update(path, text)
        project.check()
        assert _shown(project) == _expected(project)


def test_random_line_edits_in_a_real_project(tmp_path: Path) -> None:
    """The manual's multi-file example, with lines deleted, doubled or restored at random."""
    root = tmp_path / "multi_file"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "multi_file", root)
    source = next(root.rglob("main.agent"))
    project, _ = Workspace().project_for(source)
    project.check()
    original = dict(project.texts)
    rng = random.Random(11)
    for _ in range(40):
        path = rng.choice(sorted(original))
        lines = project.texts[path].split("\n")
        at = rng.randrange(len(lines))
        choice = rng.random()
        if choice < 0.4:
            del lines[at]
        elif choice < 0.7:
            lines.insert(at, lines[at])
        else:
            lines = original[path].split("\n")
        project.update(path, "\n".join(lines))
        project.check()
        assert _shown(project) == _expected(project)


def test_forget_checks_everything_again(tmp_path: Path) -> None:
    project = _project(tmp_path)
    project.check()
    project.forget()
    assert set(project.check()) == set(project.texts)
    assert project.last_checked == set(project.texts)
    assert _shown(project) == _expected(project)
