"""``auwgent test``: test blocks in .agent files, run through the real CLI.

Passing and failing tests (exit codes, the expected-and-actual report, the JUnit file), ``-k``,
test blocks with compile errors, a cassette-backed test, and the rule that tests add nothing
to the compiled output.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
WEATHER = REPO / "examples" / "weather"

FAILING = """
test "a failing test" {
    agent: Main
    context: { is_admin: true }
    input: "Delete record 7"
    model {
        call delete_record(id = 7)
        say "Done."
    }
    tools { delete_from_db: "deleted 7" }
    expect {
        not called delete_from_db
        text contains "Gone"
    }
}

test "admins delete" {
    agent: Main
    context: { is_admin: true }
    input: "Delete record 7"
    model {
        call delete_record(id = 7)
        say "Record 7 deleted."
    }
    tools { delete_from_db: "deleted 7" }
    expect {
        called delete_from_db(id = 7)
        text contains "deleted"
    }
}

test "an unexpected error fails the test" {
    agent: Main
    context: { is_admin: false }
    input: "Weather?"
    model {
        call get_humidity(location = "Accra")
    }
    expect {
        called get_humidity
    }
}
"""


def auwgent(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "auwgent", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def weather(tmp_path: Path) -> Path:
    project = tmp_path / "weather"
    shutil.copytree(WEATHER, project, ignore=shutil.ignore_patterns("generated"))
    return project


def test_the_examples_tests_pass() -> None:
    done = auwgent("test", "examples/weather")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "PASS examples/weather/main.agent:" in lines[0]
    assert lines[-1].startswith("3 passed, 0 failed in ")


def test_a_failing_test_shows_expected_and_actual(weather: Path) -> None:
    with (weather / "main.agent").open("a", encoding="utf-8") as file:
        file.write(FAILING)
    junit = weather / "report.xml"
    done = auwgent("test", ".", "--junit", str(junit), cwd=weather)
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "FAIL main.agent:" in out and "a failing test" in out
    assert "  expected: not called delete_from_db" in out
    assert '  expected: text contains "Gone"' in out
    assert '    tool_call {"args": {"id": 7}, "type": "delete_from_db"}  (Main)' in out
    assert '    response_text {"text": "Done."}  (Main)' in out
    assert "PASS main.agent:" in out and "admins delete" in out
    assert "expected: no error, but the run reported:" in out
    assert out.splitlines()[-1].startswith("4 passed, 2 failed in ")

    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuite"
    assert (suite.get("tests"), suite.get("failures")) == ("6", "2")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert cases["a failing test"].find("failure") is not None
    assert "not called delete_from_db" in cases["a failing test"].find("failure").get("message")
    assert cases["admins delete"].find("failure") is None


def test_k_selects_tests(weather: Path) -> None:
    with (weather / "main.agent").open("a", encoding="utf-8") as file:
        file.write(FAILING)
    done = auwgent("test", ".", "-k", "ADMINS", cwd=weather)
    assert done.returncode == 0, done.stdout
    assert done.stdout.count("PASS ") == 2  # "only admins delete records" and "admins delete"


def test_test_blocks_are_checked(weather: Path) -> None:
    with (weather / "main.agent").open("a", encoding="utf-8") as file:
        file.write(
            'test "typo" {\n    agent: Main\n    input: "hi"\n    model { say "hi" }\n'
            "    expect { called get_wether }\n}\n"
        )
    for command in ("test", "check"):
        done = auwgent(command, ".", cwd=weather)
        assert done.returncode == 1
        assert "error[E2102]: the tested agent has no tool, workflow or helper `get_wether`" in (
            done.stderr
        )
        assert "did you mean `get_weather`?" in done.stderr


def test_tests_add_nothing_to_the_compiled_output(weather: Path) -> None:
    done = auwgent("generate", ".", cwd=weather)
    assert done.returncode == 0, done.stderr
    with_tests = (weather / "generated" / "main.agent.json").read_text(encoding="utf-8")
    source = (weather / "main.agent").read_text(encoding="utf-8")
    (weather / "main.agent").write_text(source.split("// Tests:")[0], encoding="utf-8")
    done = auwgent("generate", ".", cwd=weather)
    assert done.returncode == 0, done.stderr
    assert (weather / "generated" / "main.agent.json").read_text(encoding="utf-8") == with_tests


def test_a_test_can_replay_a_cassette(tmp_path: Path) -> None:
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
        "}\n",
        encoding="utf-8",
    )
    record = (
        "import asyncio, sys\n"
        "from auwgent.compiler.pipeline import compile_sources\n"
        "from auwgent.runtime.agent import create_agent\n"
        "from auwgent.testing import Cassette\n"
        "doc = compile_sources({'main.agent': open('main.agent').read()}).documents['main.agent']\n"
        "agent = create_agent(doc, {'apiKeys': {'openaiApiKey': 'sk-real-key-123'},\n"
        "    'baseUrls': {'openai': sys.argv[1]},\n"
        "    'httpClient': Cassette('cassettes/hello.json', 'record')},\n"
        "    ir_hash=doc['hash'], compiler_version=doc['compiler_version'],\n"
        "    ir_version=doc['ir_version'])\n"
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
        base_url = server.base_url
    cassette = json.loads((tmp_path / "cassettes" / "hello.json").read_text(encoding="utf-8"))
    # The test runner replays whatever base URL the project uses: only the path is matched.
    assert cassette["interactions"][0]["request"]["path"] == "/v1/chat/completions"
    assert base_url
    done = auwgent("test", ".", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS main.agent:5 replays" in done.stdout
