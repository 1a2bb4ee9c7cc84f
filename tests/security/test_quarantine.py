"""The quarantine pattern on examples/inbox: generated bindings, a real subprocess.

The app's scripted model obeys its mail. With the triage helper quarantined, the agent acts on
the helper's typed verdict (a template reply to a contact, a reminder in the helper's number of
days) with no approval prompt, and the injected forward still goes to the approver. Without
``@quarantine`` the same number is a value written after untrusted text: it asks too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "inbox"


def _run(tmp_path: Path, edit: tuple[str, str] | None = None) -> str:
    project = tmp_path / "inbox"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("generated"))
    if edit is not None:
        source = project / "main.agent"
        source.write_text(source.read_text(encoding="utf-8").replace(*edit), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    gen = subprocess.run(
        [sys.executable, "-m", "auwgent", "generate", str(project)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert gen.returncode == 0, gen.stdout + gen.stderr
    run = subprocess.run(
        [sys.executable, "app.py"], cwd=project, capture_output=True, text=True, env=env, timeout=60
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def test_the_quarantined_verdict_acts_without_a_prompt_and_the_injection_asks(
    tmp_path: Path,
) -> None:
    out = _run(tmp_path)
    assert "benign: ran ['reply accept to boss@corp.test', 'reminder in 2 days']" in out
    assert "benign: approval requests []" in out
    assert "injected: ran ['reply accept to boss@corp.test', 'reminder in 2 days']" in out
    assert "injected: approval requests ['send_email']" in out
    assert '"value": "attacker@evil.test", "rule": "copied"' in out


def test_without_quarantine_the_helpers_number_is_tainted(tmp_path: Path) -> None:
    out = _run(tmp_path, ("} @quarantine", "}"))
    assert "benign: ran ['reply accept to boss@corp.test']" in out
    assert "benign: approval requests ['set_reminder']" in out
