"""The pipeline's public API: compile_project / compile_sources and CompileResult."""

from __future__ import annotations

from pathlib import Path

from check_support import DATA, assert_valid_ir

from auwgent import _version
from auwgent.compiler.pipeline import compile_project, compile_sources

MODELS = 'export model M {\n    provider: gemini("gemini-2.5-flash")\n}\n'
MAIN = (
    'import { M } from "./lib/models"\n\n'
    'agent Main {\n    default config {\n        model: M\n        prompt: "Hi."\n    }\n}\n'
)


def _write(root: Path, files: dict[str, str]) -> list[Path]:
    paths = []
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def test_compile_project_reads_files_and_resolves_sub_folders(tmp_path: Path) -> None:
    files = _write(tmp_path, {"lib/models.agent": MODELS, "main.agent": MAIN})
    result = compile_project(files, tmp_path)
    assert result.ok and result.diagnostics == ()
    assert (result.files, result.agents) == (2, 1)
    assert list(result.documents) == ["main.agent"]  # the library file yields no document
    doc = result.documents["main.agent"]
    assert_valid_ir(doc)
    assert doc["source"] == "main.agent" and doc["root"] == "Main"
    assert doc["ir_version"] == _version.IR_VERSION
    assert doc["compiler_version"] == _version.__version__
    assert doc["agents"]["Main"]["configs"]["default"]["model"]["name"] == "M"


def test_compile_project_and_compile_sources_agree(tmp_path: Path) -> None:
    files = _write(tmp_path, {"lib/models.agent": MODELS, "main.agent": MAIN})
    from_disk = compile_project(files, tmp_path).documents
    in_memory = compile_sources({"main.agent": MAIN, "lib/models.agent": MODELS}).documents
    assert from_disk == in_memory


def test_unhashed_documents_differ_only_by_the_empty_hash(tmp_path: Path) -> None:
    files = _write(tmp_path, {"lib/models.agent": MODELS, "main.agent": MAIN})
    hashed = compile_project(files, tmp_path).documents["main.agent"]
    bare = compile_project(files, tmp_path, hashed=False).documents["main.agent"]
    assert hashed["hash"].startswith("sha256:") and bare["hash"] == ""
    assert {**hashed, "hash": ""} == bare


def test_garbage_collector_setting_survives_a_compile(tmp_path: Path) -> None:
    import gc

    files = _write(tmp_path, {"lib/models.agent": MODELS, "main.agent": MAIN})
    assert gc.isenabled()
    compile_project(files, tmp_path)
    assert gc.isenabled()
    gc.disable()
    try:
        compile_project(files, tmp_path)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_compile_leaves_no_reference_cycles(tmp_path: Path) -> None:
    # With the collector paused during a compile, a cycle would keep every syntax tree alive
    # until the next full collection; all of it must go as soon as the result is dropped.
    import gc

    files = _write(tmp_path, {"lib/models.agent": MODELS, "main.agent": MAIN})
    compile_project(files, tmp_path)
    gc.collect()
    gc.disable()
    try:
        compile_project(files, tmp_path)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        leaked = [o for o in gc.garbage if type(o).__module__.startswith("auwgent.compiler")]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert leaked == []


def test_display_names_files_in_diagnostics_but_not_in_the_ir(tmp_path: Path) -> None:
    broken = MAIN.replace("model: M", "model: N")
    files = _write(tmp_path, {"lib/models.agent": MODELS, "main.agent": broken})
    result = compile_project(files, tmp_path, display=lambda p: f"shown/{p.name}")
    assert not result.ok
    assert {d.source.path for d in result.errors} == {"shown/main.agent"}
    assert result.documents == {}


def test_unreadable_file_is_a_diagnostic_not_an_exception(tmp_path: Path) -> None:
    bad = tmp_path / "bad.agent"
    bad.write_bytes(b"agent \xff\xfe {")
    missing = tmp_path / "missing.agent"
    result = compile_project([bad, missing], tmp_path)
    assert not result.ok
    messages = [d.message for d in result.errors]
    assert any("bad.agent" in m and "UTF-8" in m for m in messages)
    assert any("missing.agent" in m for m in messages)
    assert {d.code for d in result.errors} == {"E0000"}


def test_warnings_do_not_stop_documents() -> None:
    source = "type Unused {\n    a: string\n}\n\n" + MAIN.split("\n\n", 1)[1].replace(
        "model: M", 'model: gemini("gemini-2.5-flash")'
    )
    result = compile_sources({"main.agent": source})
    assert result.ok
    assert [d.code for d in result.warnings] == ["W2002"]
    assert "main.agent" in result.documents


def test_errors_anywhere_mean_no_documents() -> None:
    result = compile_sources({"main.agent": MAIN, "lib/models.agent": MODELS + "type X {\n"})
    assert not result.ok
    assert result.documents == {}
    assert result.errors


def test_paths_are_normalised() -> None:
    result = compile_sources({"./main.agent": MAIN, "lib\\models.agent": MODELS})
    assert result.ok, result.diagnostics
    assert list(result.documents) == ["main.agent"]


def test_empty_project() -> None:
    result = compile_sources({})
    assert result.ok and result.documents == {} and (result.files, result.agents) == (0, 0)


def test_library_with_only_a_helper_yields_no_document() -> None:
    helper = (
        'export helper H {\n    description: "Helps"\n    default config {\n'
        '        model: gemini("gemini-2.5-flash")\n        prompt: "Hi."\n    }\n}\n'
    )
    result = compile_sources({"h.agent": helper})
    assert result.ok and result.documents == {} and result.agents == 0


def test_a_file_with_syntax_errors_gets_no_follow_on_checker_errors() -> None:
    broken = "agent Main {\n  toool x(): string\n"
    other = "type T {\n    a: Nope\n}\n"
    result = compile_sources({"bad.agent": broken, "other.agent": other})
    codes_by_file = {(d.source.path, d.code[:2]) for d in result.errors}
    assert ("bad.agent", "E0") in codes_by_file
    assert not any(path == "bad.agent" and code == "E2" for path, code in codes_by_file)
    assert ("other.agent", "E2") in codes_by_file  # the healthy file is still checked


def test_raise_for_errors_carries_the_rendered_errors() -> None:
    import pytest

    from auwgent.errors import CompileError

    compile_sources({"main.agent": MAIN, "lib/models.agent": MODELS}).raise_for_errors()
    broken = compile_sources({"main.agent": MAIN.replace("model: M", "model: N")})
    with pytest.raises(CompileError) as caught:
        broken.raise_for_errors()
    text = str(caught.value)
    assert text.startswith("2 errors in the .agent sources:")
    assert "error[E2011]: unknown model `N`" in text and " --> main.agent:" in text


def test_diagnostics_only_builds_no_ir_and_reports_the_same(tmp_path: Path) -> None:
    # E2071 is the lowering's own check (two different types named `Report` in one IR).
    case = DATA / "check" / "e2071_name_clash_in_ir"
    sources = {p.relative_to(case).as_posix(): p.read_text() for p in case.rglob("*.agent")}
    extra = MAIN.replace("Main", "Other") + "type Unused { a: string }\n"
    files = _write(tmp_path, {**sources, "lib/models.agent": MODELS, "other.agent": extra})
    full = compile_project(files, tmp_path)
    bare = compile_project(files, tmp_path, documents=False)
    assert [d.code for d in full.diagnostics] == ["E2071", "W2002"]
    assert bare.diagnostics == full.diagnostics and bare.documents == {}
    assert (bare.files, bare.agents) == (full.files, full.agents) == (4, 2)
    clean = [f for f in files if "helpers" not in f.parts and f.name != "main.agent"]
    assert compile_project(clean, tmp_path, documents=False).diagnostics == (
        compile_project(clean, tmp_path).diagnostics
    )
