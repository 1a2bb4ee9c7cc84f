"""``auwgent eval`` on the offline model: arguments, exit codes, repeats, custom scorers,
the progress line, and the JSON path subset the ``json`` scorer reads."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from auwgent.evals.jsonpath import PathError, matches, select

PROJECT = Path(__file__).resolve().parents[1] / "data" / "evals" / "check" / "project"
CASE = '  - input: "Where is order 5?"\n    context: {user_id: u1, is_admin: false}\n'


def eval_cli(project: Path, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "auwgent", "eval", *args],
        cwd=project,
        capture_output=kwargs.pop("capture", True),
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
        **kwargs,
    )


def scratch(tmp_path: Path, dataset: str, files: dict[str, str] | None = None) -> Path:
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    (project / "evals").mkdir()
    (project / "evals" / "orders.yaml").write_text(dataset, encoding="utf-8")
    for name, text in (files or {}).items():
        (project / "evals" / name).write_text(text, encoding="utf-8")
    return project


def test_offline_run_scores_what_the_offline_model_does(tmp_path: Path) -> None:
    # The offline model calls each tool once, then answers quoting the input.
    project = scratch(
        tmp_path,
        "agent: Main\ncases:\n"
        + CASE
        + "    id: quoted\n    expect:\n"
        + "      contains: Where is order 5?\n"
        + "      calls: {calls: [get_order, cancel_order], order: set}\n"
        + CASE
        + "    id: wrong\n    expect: {not_called: [cancel_order], regex: '^Refund'}\n"
        + CASE
        + "    id: order\n    expect: {calls: [cancel_order, get_order]}\n",
    )
    result = eval_cli(project, "--json", "r.json")
    assert result.returncode == 1
    assert result.stdout.splitlines()[0] == (
        "FAIL orders/wrong: not_called: a forbidden call was made; regex: a pattern did not match"
    )
    assert result.stdout.splitlines()[1] == (
        "FAIL orders/order: calls: the calls do not match (sequence)"
    )
    assert result.stdout.splitlines()[-1] == "1 passed, 2 failed"
    report = json.loads((project / "r.json").read_text("utf-8"))
    assert [c["passed"] for c in report["cases"]] == [True, False, False]
    assert report["cases"][2]["scores"]["calls"]["score"] == 0.5  # one of two in order
    assert report["scorers"]["contains"]["pass_rate"] == 1.0
    assert report["scorers"]["regex"]["mean_score"] == 0.0


def test_repeat_reports_the_variance_of_a_case(tmp_path: Path) -> None:
    scorer = (
        "RUNS = []\n\ndef flaky(case, run):\n    RUNS.append(1)\n"
        "    return {'score': len(RUNS) % 2, 'passed': True}\n"
    )
    dataset = "agent: Main\nscorers: {flaky: flaky_scorer:flaky}\ncases:\n" + CASE
    project = scratch(tmp_path, dataset + "    id: f\n    expect: {custom: flaky}\n",
                      {"flaky_scorer.py": scorer})  # fmt: skip
    result = eval_cli(project, "--repeat", "3", "--concurrency", "1", "--json", "r.json")
    assert result.returncode == 0, result.stdout + result.stderr
    score = json.loads((project / "r.json").read_text("utf-8"))["cases"][0]["scores"]
    assert score["custom:flaky"]["runs"] == [1.0, 0.0, 1.0]
    assert "variance orders/f custom:flaky: mean 0.667, stdev 0.471, runs [1.0, 0.0, 1.0]" in (
        result.stdout
    )


def test_scorers_option_registers_a_function_by_its_name(tmp_path: Path) -> None:
    project = scratch(
        tmp_path, "agent: Main\ncases:\n" + CASE + "    expect: {custom: [has_order]}\n"
    )
    (project / "extra.py").write_text(
        "def has_order(case, run):\n    return 'order' in run['text']\n", encoding="utf-8"
    )
    assert eval_cli(project).returncode == 1  # unknown to the dataset: no case ran
    result = eval_cli(project, "--scorers", "extra:has_order")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "custom:has_order" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--repeat", "0"], "expected a whole number of at least 1, got '0'"),
        (["--record", "--replay"], "not allowed with argument"),
        (["evals/none.yaml"], "evals/none.yaml: no dataset there"),
        (["--baseline", "missing.json"], "--baseline missing.json: cannot read it"),
        (["--scorers", "nowhere:fn"], "custom scorer 'nowhere:fn': cannot import 'nowhere'"),
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    project = scratch(tmp_path, "agent: Main\ncases:\n" + CASE)
    result = eval_cli(project, *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_baseline_that_is_not_an_eval_result_is_refused(tmp_path: Path) -> None:
    project = scratch(tmp_path, "agent: Main\ncases:\n" + CASE)
    (project / "b.json").write_text('{"cases": []}', encoding="utf-8")
    result = eval_cli(project, "--baseline", "b.json")
    assert result.returncode == 2
    assert "not an `auwgent eval --json` result (version 1)" in result.stderr


def test_dataset_errors_stop_the_run_with_their_diagnostics(tmp_path: Path) -> None:
    project = scratch(tmp_path, "agent: Main\ncases:\n" + CASE + "    config: nope\n")
    result = eval_cli(project)
    assert result.returncode == 1
    assert "error[E2203]: agent `Main` has no config `nope`" in result.stderr
    assert "no case ran" in result.stderr


def test_progress_line_on_a_terminal(tmp_path: Path) -> None:
    project = scratch(tmp_path, "agent: Main\ncases:\n" + CASE + CASE.replace("5", "6"))
    main, child = pty.openpty()
    try:
        result = eval_cli(project, capture=False, stdout=subprocess.PIPE, stderr=child)
        os.close(child)
        child = -1
        shown = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(main)
        if child >= 0:
            os.close(child)
    assert result.returncode == 0
    assert b"[1/2] orders/case-" in shown and b"[2/2] orders/case-" in shown


def test_json_path_subset() -> None:
    value = {"people": [{"name": "Ama", "age": 30}, {"name": "Kofi", "age": 17}], "a b": 1}
    assert select(value, "$.people[*].name") == ["Ama", "Kofi"]
    assert select(value, "$.people[-1].age") == [17]
    assert select(value, '$["a b"]') == [1]
    assert select(value, "$.people[5].name") == []
    assert matches({"$gt": 16, "$type": "number"}, select(value, "$.people[*].age"))
    assert not matches({"$ge": 18}, select(value, "$.people[*].age"))
    assert matches({"$exists": False}, select(value, "$.missing"))
    assert not matches("Ama", [])  # nothing selected: a literal fails
    assert matches({"name": "Ama"}, select(value, "$.people[0]"))  # objects by subset
    with pytest.raises(PathError, match="starts with `\\$`"):
        select(value, "people")
    with pytest.raises(PathError, match="unknown operator '\\$like'"):
        matches({"$like": "A%"}, ["Ama"])


def test_a_date_in_a_dataset_stays_text(tmp_path: Path) -> None:
    project = scratch(
        tmp_path,
        "agent: Main\ncases:\n  - input: 2024-05-01\n    context: {user_id: u1, is_admin: false}\n"
        "    expect: {contains: 2024-05-01}\n",
    )
    result = eval_cli(project)
    assert result.returncode == 0, result.stdout + result.stderr


PARTS_CASE = (
    "  - id: photo\n    context: {user_id: u1, is_admin: false}\n"
    "    input:\n"
    "      - {type: text, text: 'Where is order 5?'}\n"
    "      - {type: image, url: 'https://example.com/label.png', media_type: image/png}\n"
)


def test_a_case_input_may_be_a_list_of_parts(tmp_path: Path) -> None:
    dataset = "agent: Main\ncases:\n" + PARTS_CASE + "    expect: {contains: 'Where is order 5?'}\n"
    project = scratch(tmp_path, dataset)
    result = eval_cli(project, "--json", "r.json")
    assert result.returncode == 0, result.stdout + result.stderr
    (case,) = json.loads((project / "r.json").read_text("utf-8"))["cases"]
    assert case["input"][1] == {
        "type": "image", "url": "https://example.com/label.png", "media_type": "image/png"
    }  # fmt: skip


def test_a_bad_part_is_a_located_dataset_error(tmp_path: Path) -> None:
    bad = PARTS_CASE.replace("media_type: image/png", "media_type: image/tiff")
    project = scratch(tmp_path, "agent: Main\ncases:\n" + bad)
    result = eval_cli(project)
    assert result.returncode == 1  # dataset errors: no case ran
    assert "evals/orders.yaml:" in result.stderr + result.stdout
    assert (
        "part 2" in result.stderr + result.stdout and "image/tiff" in result.stderr + result.stdout
    )
