"""``auwgent test --runtime ts``: the same test blocks on the TypeScript runtime.

Every project here runs through the real CLI twice, ``--runtime python`` and ``--runtime ts``
(the repository's ``ts/`` build, through ``AUWGENT_TS_RUNTIME`` or a project's
``node_modules/auwgent``), and both must pass, fail and report identically: the report of
``tests/data/test_blocks`` is ``expected.txt`` for both, byte for byte but the timing line.
Then how the runtime is found, and what the command says without Node.js or the package.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TS = REPO / "ts"
BLOCKS = REPO / "tests" / "data" / "test_blocks"
WEATHER = REPO / "examples" / "weather"
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.skipif(NODE is None, reason="needs Node.js"),
    pytest.mark.xdist_group("ts_runtime"),  # one build of the TypeScript runtime
]


def _stale(folder: Path) -> bool:
    """Whether ``folder/dist`` lacks the runner or is older than a source under ``ts/src``."""
    runner = folder / "dist" / "test-runner.js"
    if not runner.is_file():
        return True
    built = runner.stat().st_mtime
    return any(source.stat().st_mtime > built for source in (TS / "src").rglob("*.ts"))


@pytest.fixture(scope="session")
def ts_runtime(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's TypeScript runtime, built: ``ts/`` itself when its ``dist`` is up to
    date, else a fresh ``tsc`` build of ``ts/src`` beside a copy of its package.json."""
    if not _stale(TS):
        return TS
    tsc = TS / "node_modules" / ".bin" / "tsc"
    if not tsc.exists():
        pytest.skip("ts/node_modules is not installed (cd ts && npm ci)")
    package = tmp_path_factory.mktemp("ts") / "auwgent"
    package.mkdir()
    shutil.copy(TS / "package.json", package / "package.json")
    (package / "node_modules").symlink_to(TS / "node_modules")
    done = subprocess.run(
        [str(tsc), "-p", str(TS / "tsconfig.json"), "--outDir", str(package / "dist")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return package


def auwgent(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != "AUWGENT_TS_RUNTIME"}
    return subprocess.run(
        [sys.executable, "-m", "auwgent", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        env={**clean, **(env or {})},
    )


def both(
    ts_runtime: Path, *args: str, cwd: Path
) -> Iterator[tuple[str, subprocess.CompletedProcess[str]]]:
    """The command on each runtime, in turn."""
    yield "python", auwgent("test", *args, "--runtime", "python", cwd=cwd)
    env = {"AUWGENT_TS_RUNTIME": str(ts_runtime)}
    yield "ts", auwgent("test", *args, "--runtime", "ts", cwd=cwd, env=env)


def _report(done: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    """The report without its last line (it holds the time), and that line's counts."""
    body, _, last = done.stdout.rstrip("\n").rpartition("\n")
    return body + "\n", last.split(" in ")[0]


@pytest.fixture
def weather(tmp_path: Path) -> Path:
    project = tmp_path / "weather"
    shutil.copytree(WEATHER, project, ignore=shutil.ignore_patterns("generated"))
    return project


def test_the_examples_tests_pass_on_both_runtimes(ts_runtime: Path) -> None:
    reports = {}
    for runtime, done in both(ts_runtime, "examples/weather", cwd=REPO):
        assert done.returncode == 0, runtime + done.stdout + done.stderr
        reports[runtime] = _report(done)
    assert reports["ts"] == reports["python"]
    assert reports["ts"][1] == "3 passed, 0 failed"
    assert reports["ts"][0].count("PASS examples/weather/main.agent:") == 3


def test_every_shape_of_test_reports_the_same(ts_runtime: Path) -> None:
    expected = (BLOCKS / "expected.txt").read_text(encoding="utf-8")
    for runtime, done in both(ts_runtime, ".", cwd=BLOCKS):
        assert done.returncode == 1, runtime + done.stdout + done.stderr
        assert _report(done) == (expected, "6 passed, 3 failed"), runtime
        assert done.stderr == "", runtime


def test_the_junit_reports_are_the_same(ts_runtime: Path, tmp_path: Path) -> None:
    suites = {}
    for runtime in ("python", "ts"):
        junit = tmp_path / f"{runtime}.xml"
        done = auwgent(
            *("test", ".", "--runtime", runtime, "--junit", str(junit)),
            cwd=BLOCKS,
            env={"AUWGENT_TS_RUNTIME": str(ts_runtime)},
        )
        assert done.returncode == 1, runtime + done.stdout + done.stderr
        suites[runtime] = _untimed(ET.parse(junit).getroot())
    assert suites["ts"] == suites["python"]
    assert (suites["ts"][0]["tests"], suites["ts"][0]["failures"]) == ("9", "3")
    failures = {row.get("name"): row["failure"] for row in suites["ts"][1:]}
    assert failures["an unscripted call is an error"] is None
    assert 'output {"age": 36, "name": "Zo\\u00eb"}' in str(failures["the wrong structured output"])


def _untimed(suite: ET.Element) -> list[dict[str, str | None]]:
    """The JUnit report's attributes and failure texts, without the times."""
    rows: list[dict[str, str | None]] = [{k: v for k, v in suite.attrib.items() if k != "time"}]
    for case in suite.iter("testcase"):
        failure = case.find("failure")
        row = {k: v for k, v in case.attrib.items() if k != "time"}
        row["failure"] = None if failure is None else f"{failure.get('message')}|{failure.text}"
        rows.append(row)
    return rows


def test_k_selects_the_same_tests(ts_runtime: Path) -> None:
    reports = {}
    for runtime, done in both(ts_runtime, ".", "-k", "NATIVELY", cwd=BLOCKS):
        assert done.returncode == 1, runtime + done.stdout + done.stderr
        reports[runtime] = _report(done)
    assert reports["ts"] == reports["python"]
    assert reports["ts"][1] == "1 passed, 1 failed"
    assert "PASS main.agent:60 natively, the same" in reports["ts"][0]


def test_a_cassette_recorded_in_python_replays_on_typescript(
    ts_runtime: Path, tmp_path: Path
) -> None:
    from auwgent.testing import FakeOpenAIServer, text

    (tmp_path / "main.agent").write_text(
        "agent Main {\n"
        '    default config { model: openai("gpt-4o") prompt: "Be brief." }\n'
        "}\n\n"
        'test "replays" {\n'
        "    agent: Main\n"
        '    input: "Hello"\n'
        '    cassette: "cassettes/hello.json"\n'
        '    expect { text contains "Hi there" }\n'
        "}\n\n"
        'test "misses" {\n'
        "    agent: Main\n"
        '    input: "Goodbye"\n'
        '    cassette: "cassettes/hello.json"\n'
        '    expect { text contains "Hi there" }\n'
        "}\n\n"
        'test "has no file" {\n'
        "    agent: Main\n"
        '    input: "Hello"\n'
        '    cassette: "cassettes/never.json"\n'
        '    expect { text contains "Hi there" }\n'
        "}\n",
        encoding="utf-8",
    )
    record = (
        "import asyncio, sys\n"
        "from auwgent.compiler.pipeline import compile_sources\n"
        "from auwgent.runtime.agent import agent_from_ir\n"
        "from auwgent.testing import Cassette\n"
        "doc = compile_sources({'main.agent': open('main.agent').read()}).documents['main.agent']\n"
        "agent = agent_from_ir(doc, {'apiKeys': {'openaiApiKey': 'sk-real-key-123'},\n"
        "    'baseUrls': {'openai': sys.argv[1]},\n"
        "    'httpClient': Cassette('cassettes/hello.json', 'record')})\n"
        "asyncio.run(agent.run('Hello'))\n"
    )
    with FakeOpenAIServer([text("[response_text]\nHi there!\n[/response_text]")]) as server:
        done = subprocess.run(
            [sys.executable, "-c", record, server.base_url],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
    reports = {}
    for runtime, done in both(ts_runtime, ".", cwd=tmp_path):
        assert done.returncode == 1, runtime + done.stdout + done.stderr
        reports[runtime] = _report(done)
    out = reports["ts"][0]
    assert "PASS main.agent:5 replays" in out
    assert "FAIL main.agent:12 misses" in out
    assert "has no recorded answer for POST /v1/chat/completions" in out
    assert '+        "content": "Goodbye",' in out
    never = tmp_path / "cassettes" / "never.json"
    assert "FAIL main.agent:19 has no file" in out
    assert f"  expected: cassette {never} does not exist: record it first (mode='record')" in out
    assert reports["ts"] == reports["python"]
    assert reports["ts"][1] == "1 passed, 2 failed"


# -- finding the TypeScript runtime ---------------------------------------------------------


def test_the_projects_own_node_modules_is_used(ts_runtime: Path, weather: Path) -> None:
    (weather / "node_modules").mkdir()
    (weather / "node_modules" / "auwgent").symlink_to(ts_runtime, target_is_directory=True)
    done = auwgent("test", ".", "--runtime", "ts", cwd=weather.parent)
    assert done.returncode == 2  # the parent folder holds no node_modules
    assert "no node_modules/auwgent in" in done.stderr
    done = auwgent("test", "weather", "--runtime", "ts", cwd=weather.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _report(done)[1] == "3 passed, 0 failed"


def test_without_the_package_it_says_what_to_install(tmp_path: Path, weather: Path) -> None:
    done = auwgent("test", ".", "--runtime", "ts", cwd=weather)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("error: --runtime ts: the auwgent npm package is not installed")
    assert "run `npm install auwgent` in the project" in done.stderr
    assert "AUWGENT_TS_RUNTIME" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_wrong_runtime_folder_is_named(tmp_path: Path, weather: Path) -> None:
    cases = {
        str(tmp_path / "nowhere"): "which is not a folder",
        str(tmp_path): "which is not the auwgent npm package",
    }
    unbuilt = tmp_path / "unbuilt"
    unbuilt.mkdir()
    (unbuilt / "package.json").write_text(json.dumps({"name": "auwgent"}), encoding="utf-8")
    cases[str(unbuilt)] = "which has no dist/test-runner.js: the package is not built"
    for folder, said in cases.items():
        done = auwgent(
            "test", ".", "--runtime", "ts", cwd=weather, env={"AUWGENT_TS_RUNTIME": folder}
        )
        assert done.returncode == 2, folder
        assert done.stderr.startswith(f"error: AUWGENT_TS_RUNTIME is {folder}, "), done.stderr
        assert said in done.stderr
        assert "Traceback" not in done.stderr


def test_without_node_it_says_so(ts_runtime: Path, tmp_path: Path, weather: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    done = auwgent(
        "test",
        ".",
        "--runtime",
        "ts",
        cwd=weather,
        env={"AUWGENT_TS_RUNTIME": str(ts_runtime), "PATH": str(empty)},
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == (
        "error: --runtime ts needs Node.js 18 or later, and there is no `node` on PATH; "
        "install Node.js (https://nodejs.org) and run the command again\n"
    )


def test_the_runner_refuses_a_broken_job(ts_runtime: Path, tmp_path: Path) -> None:
    assert NODE is not None
    runner = ts_runtime / "dist" / "test-runner.js"
    for job, said in [
        ("not json", "the job on stdin is not JSON"),
        ("[]", "the job on stdin is not a JSON object"),
        ('{"root": ".", "documents": {}}', "the job has no `specs` (a list)"),
    ]:
        done = subprocess.run(
            [NODE, str(runner), str(tmp_path / "out.json")],
            input=job,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2
        assert done.stderr.startswith(f"auwgent test-runner: {said}")
        assert not (tmp_path / "out.json").exists()


def test_the_environment_variable_wins_over_node_modules(
    ts_runtime: Path, tmp_path: Path, weather: Path
) -> None:
    (weather / "node_modules").mkdir()
    (weather / "node_modules" / "auwgent").symlink_to(ts_runtime, target_is_directory=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"AUWGENT_TS_RUNTIME": str(elsewhere)}
    done = auwgent("test", ".", "--runtime", "ts", cwd=weather, env=env)
    assert done.returncode == 2
    assert f"AUWGENT_TS_RUNTIME is {elsewhere}, which is not the auwgent npm package" in (
        done.stderr
    )


def _package(folder: Path, runner: str) -> Path:
    """A package folder named auwgent whose test runner is the script ``runner``."""
    (folder / "dist").mkdir(parents=True)
    (folder / "package.json").write_text(json.dumps({"name": "auwgent"}), encoding="utf-8")
    (folder / "dist" / "test-runner.js").write_text(runner, encoding="utf-8")
    return folder


def test_a_runner_that_fails_is_reported_not_taken_for_results(
    tmp_path: Path, weather: Path
) -> None:
    cases = {
        "crashes": (
            "process.stderr.write('boom\\n'); process.exit(1);",
            "the TypeScript test runner ({runner}) failed:\nboom\n",
        ),
        "writes nothing": (
            "",
            "the TypeScript test runner ({runner}) ended without writing its outcomes\n",
        ),
        "writes no outcomes": (
            "require('node:fs').writeFileSync(process.argv[2], '{\"runtime\": \"0\"}');",
            "the TypeScript test runner ({runner}) wrote no readable outcomes: 'outcomes'\n",
        ),
        "writes a wrong outcome": (
            "require('node:fs').writeFileSync(process.argv[2], "
            '\'{"outcomes": [{"name": "x"}]}\');',
            "the TypeScript test runner ({runner}) wrote a malformed outcome #1: no 'file'\n",
        ),
    }
    for i, (case, (script, said)) in enumerate(cases.items()):
        package = _package(tmp_path / f"p{i}", script)
        env = {"AUWGENT_TS_RUNTIME": str(package)}
        done = auwgent("test", ".", "--runtime", "ts", cwd=weather, env=env)
        runner = package / "dist" / "test-runner.js"
        assert done.returncode == 1, case
        assert done.stdout == "", case
        assert done.stderr.endswith(said.format(runner=runner)), (case, done.stderr)
        assert "Traceback" not in done.stderr, case


def test_the_runners_own_failure_is_one_line(ts_runtime: Path, tmp_path: Path) -> None:
    assert NODE is not None
    runner = ts_runtime / "dist" / "test-runner.js"
    out = tmp_path / "no such folder" / "out.json"
    done = subprocess.run(
        [NODE, str(runner), str(out)],
        input='{"root": ".", "specs": [], "documents": {}}',
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("auwgent test-runner: Error: ENOENT: no such file or directory")
    assert done.stderr.count("\n") == 1  # no stack
