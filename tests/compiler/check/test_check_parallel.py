"""Compiling in several processes gives exactly the result of one process.

The parallel path (``compiler/parallel.py``) is only taken for large projects; these tests
lower the size threshold so that the checker's golden cases and the example projects go
through it, and spy on the merge to know which path produced each result.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from check_support import DATA, REPO, sources_of

from auwgent.compiler import parallel
from auwgent.compiler.diagnostics import render_all
from auwgent.compiler.pipeline import CompileResult, compile_sources
from auwgent.compiler.source import SourceFile

CASES = DATA / "check"


def case_sources(path: Path, prefix: str) -> dict[str, str]:
    """A golden case (one file or a folder) as files below ``prefix/``."""
    if path.is_dir():
        return {f"{prefix}/{name}": text for name, text in sources_of(path).items()}
    return {f"{prefix}/main.agent": path.read_text(encoding="utf-8")}


def clean_filler() -> dict[str, str]:
    """Every example project, each in its own folder: several clean shares' worth."""
    files: dict[str, str] = {}
    for example in sorted((REPO / "examples").iterdir()):
        src = example / "src" if (example / "src").is_dir() else example
        files.update({f"ex_{example.name}/{k}": v for k, v in sources_of(src).items()})
    return files


def cases(prefix: str) -> list[Path]:
    return sorted(p for p in CASES.iterdir() if p.suffix != ".txt" and p.name.startswith(prefix))


#: Set in the fresh process a test is moved to (below): no thread of another test is there.
ALONE = "AUWGENT_PARALLEL_TEST_ALONE"


@pytest.fixture
def merges(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[list[bool]]:
    """Force the parallel path; record, per compile, whether the merged result was used.

    The parallel path forks only from a process with one thread. A thread another test left
    behind (a session fixture's server, in whatever order the tests ran) would keep it
    serial, so then the test runs again, alone, in a fresh pytest process, which must pass.
    """
    monkeypatch.setattr(parallel, "MIN_PARALLEL_CHARS", 0)
    used: list[bool] = []
    merge = parallel._merge

    def spy(outcomes: list[parallel.Outcome | None]) -> parallel.Outcome | None:
        merged = merge(outcomes)
        used.append(merged is not None)
        return merged

    monkeypatch.setattr(parallel, "_merge", spy)
    # Request threads of earlier tests' fake servers wait on keep-alive connections until
    # their unreferenced clients are collected: collect them, and give the threads a moment.
    # Once that wait was in vain, this process's tests go to the fresh process at once.
    gc.collect()
    deadline = time.monotonic() + (0 if _alone else 5)
    while threading.active_count() > 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    if threading.active_count() > 1 and not os.environ.get(ALONE):
        _check_alone(request.node.nodeid)
        pytest.skip("other tests' threads are alive here: passed alone in a fresh process")
    assert threading.active_count() == 1, "a thread left by another test keeps this serial"
    yield used


#: This file's outcomes in a fresh process (``-rA`` lines), made once when first needed.
_alone: list[str] = []


def _check_alone(nodeid: str) -> None:
    """``nodeid`` passed when this whole file ran in a fresh pytest process (run once)."""
    if not _alone:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", __file__, "-q", "-rA", "-p", "no:randomly",
             "-p", "no:cacheprovider", "-p", "no:xdist"],
            cwd=REPO, env={**os.environ, ALONE: "1"}, capture_output=True, text=True,
            timeout=900, check=False,
        )  # fmt: skip
        _alone.append(done.stdout + done.stderr)
    name = nodeid.split("::", 1)[1]
    assert any(
        line.startswith("PASSED ") and line.split(" ", 1)[1].endswith("::" + name)
        for line in _alone[0].splitlines()
    ), _alone[0]


def same(a: CompileResult, b: CompileResult) -> None:
    assert render_all(a.diagnostics, color=False) == render_all(b.diagnostics, color=False)
    assert a.documents == b.documents
    assert (a.files, a.agents, a.ok) == (b.files, b.agents, b.ok)


def test_clean_and_warning_cases_are_merged_exactly(merges: list[bool]) -> None:
    files = clean_filler()
    for case in cases("ok_") + cases("w"):
        files.update(case_sources(case, case.name.removesuffix(".agent")))
    serial = compile_sources(files)
    assert serial.ok and serial.warnings, "the project should have warnings and no error"
    for jobs in (2, 3, 5):
        same(compile_sources(files, jobs=jobs), serial)
    assert merges == [True, True, True]


@pytest.mark.slow
@pytest.mark.parametrize("case", cases("e"), ids=lambda p: p.name)
def test_an_error_anywhere_means_one_compile(case: Path, merges: list[bool]) -> None:
    # Whatever the error, some share finds one, so the merged result is never used: the
    # output is that of one process, and the help of an unknown name can name any file.
    files = {**clean_filler(), **case_sources(case, "case")}
    serial = compile_sources(files)
    assert not serial.ok
    same(compile_sources(files, jobs=2), serial)
    assert merges == [False]


def test_imports_and_custom_providers_stay_together() -> None:
    lib = 'export type T { a: string }\nexport model M { provider: gemini("x") }\n'
    user = 'import { T, M } from "../lib/shared"\n'
    custom = 'model C {{ provider: custom("groq", "{url}", "m") }}\n'
    files = {
        "lib/shared.agent": lib,
        "a/one.agent": user,
        "b/two.agent": user,
        "c/x.agent": custom.format(url="https://a.example/v1"),
        "d/y.agent": custom.format(url="https://b.example/v1"),
        **{f"e/{i}.agent": f"type E{i} {{ a: string }}\n" for i in range(6)},
    }
    shares = parallel.plan([(p, SourceFile(p, t)) for p, t in sorted(files.items())], 2)
    assert len(shares) == 2
    owners = [own for own, _ in shares]
    assert sorted(p for own in owners for p in own) == sorted(files)  # each file once
    for own, compiled in shares:
        assert own <= compiled
        if own & {"a/one.agent", "b/two.agent"}:
            assert "lib/shared.agent" in compiled
    assert any({"c/x.agent", "d/y.agent"} <= own for own in owners)


def test_two_urls_for_one_custom_id_in_unrelated_files(merges: list[bool]) -> None:
    custom = 'export model C{n} {{ provider: custom("groq", "{url}", "m") }}\n'
    files = {
        **clean_filler(),
        "x/a.agent": custom.format(n=1, url="https://a.example/v1"),
        "y/b.agent": custom.format(n=2, url="https://b.example/v1"),
    }
    serial = compile_sources(files)
    assert [d.code for d in serial.errors] == ["E2076"]
    same(compile_sources(files, jobs=2), serial)
    assert merges == [False]


def test_a_failed_worker_means_one_compile(
    monkeypatch: pytest.MonkeyPatch, merges: list[bool]
) -> None:
    parent = os.getpid()
    split = parallel.compile_split

    def failing(files: parallel.Files, jobs: int, compile_one: parallel.CompileSet) -> object:
        def in_child_fails(part: parallel.Files, owned: frozenset[str]) -> parallel.Outcome:
            if os.getpid() != parent:
                raise RuntimeError("a worker fails")
            return compile_one(part, owned)

        return split(files, jobs, in_child_fails)

    monkeypatch.setattr("auwgent.compiler.pipeline.compile_split", failing)
    files = clean_filler()
    same(compile_sources(files, jobs=2), compile_sources(files))
    assert merges == [False]


def test_other_threads_keep_it_in_one_process(merges: list[bool]) -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        files = clean_filler()
        same(compile_sources(files, jobs=2), compile_sources(files))
    finally:
        stop.set()
        thread.join()
    assert merges == []  # never split: a fork would copy only this thread


def test_small_projects_stay_in_one_process() -> None:
    files = clean_filler()
    assert sum(map(len, files.values())) < parallel.MIN_PARALLEL_CHARS
    listed = [(p, SourceFile(p, t)) for p, t in sorted(files.items())]
    assert parallel.compile_split(listed, 2, lambda f, o: pytest.fail("compiled")) is None


# -- the command line ---------------------------------------------------------------------

AGENT = """\
model M{i} {{ provider: gemini("gemini-2.5-flash") }}
type R{i} {{ id: string @desc "the id"  score: number }}
prompt P{i}(name: string) {{
    \"\"\"
    You help {{{{name}}}}.
    \"\"\"
}}
agent A{i} {{
    default config {{
        model: M{i}
        prompt: P{i}(ctx.name) + "Be brief."
    }}
    context {{ name: string }}
    output: R{i}
{tools}
}}
"""


def big_project(root: Path, *, broken: bool) -> None:
    tools = "\n".join(
        f'    tool t{k}(q: string, n: number): string @desc "tool {k}"' for k in range(40)
    )
    for i in range(30):
        text = AGENT.format(i=i, tools=tools)
        if i == 13:
            text += "type Lonely13 { a: string }\n"  # W2002: declared but never used
        if broken and i == 19:
            text = text.replace("score: number", "score: numbr")
        path = root / "src" / f"g{i % 3}" / f"a{i}.agent"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "auwgent.yml").write_text('source: "src"\n', encoding="utf-8")


def run_check(root: Path, *args: str, command: str = "check") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "auwgent", command, *args, "."],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("broken", [False, True], ids=["warnings", "errors"])
def test_check_prints_the_same_with_any_jobs(tmp_path: Path, broken: bool) -> None:
    big_project(tmp_path, broken=broken)
    text = sum(len(p.read_text()) for p in tmp_path.rglob("*.agent"))
    assert text > parallel.MIN_PARALLEL_CHARS  # big enough to be split
    runs = [run_check(tmp_path, "-j", "1"), run_check(tmp_path, "-j", "2"), run_check(tmp_path)]
    timing = re.compile(r" in \d+ ms")
    first = runs[0]
    assert first.returncode == (1 if broken else 0), first.stderr
    assert "W2002" in first.stderr and ("E2010" in first.stderr) == broken
    for other in runs[1:]:
        assert other.returncode == first.returncode
        assert other.stderr == first.stderr
        assert timing.sub("", other.stdout) == timing.sub("", first.stdout)


def test_generate_writes_the_same_files_with_any_jobs(tmp_path: Path) -> None:
    big_project(tmp_path, broken=False)
    outputs = []
    for jobs in ("1", "2"):
        result = run_check(tmp_path, "-j", jobs, command="generate")
        assert result.returncode == 0, result.stderr
        generated = tmp_path / "generated"
        outputs.append({p: p.read_bytes() for p in sorted(generated.rglob("*")) if p.is_file()})
        shutil.rmtree(generated)
    assert len(outputs[0]) > 30 and outputs[0] == outputs[1]


@pytest.mark.parametrize("command", ["check", "generate"])
@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_jobs_must_be_a_positive_number(tmp_path: Path, value: str, command: str) -> None:
    result = run_check(tmp_path, "--jobs", value, command=command)
    assert result.returncode == 2
    assert "--jobs" in result.stderr and "at least 1" in result.stderr
    assert "Traceback" not in result.stderr


def test_default_jobs_is_one_per_usable_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)
    assert parallel.default_jobs() == 3
