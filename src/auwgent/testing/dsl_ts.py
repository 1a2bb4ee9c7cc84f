"""``auwgent test --runtime ts``: the ``test`` blocks run on the TypeScript runtime.

The Python CLI compiles the project and selects the tests as for the Python runtime; then it
starts ``node <package>/dist/test-runner.js OUTPUT`` with one JSON job on stdin (the project's
source root, the test specs, and each tested agent's IR with the JSON pointers of its
whole-number floats, which the IR hash needs). The runner (``ts/src/testing.ts``) runs every
test as :mod:`auwgent.testing.dsl` does, on the TypeScript ``ScriptedModel`` or ``Cassette``,
compares the intents with ``expect`` itself, and writes the outcomes to OUTPUT; they are then
reported exactly as the Python runner's.

Which TypeScript runtime: the folder named by ``AUWGENT_TS_RUNTIME`` when it is set (a built
copy of the ``auwgent`` npm package, such as a checkout's ``ts/``), else the project's own
``node_modules/auwgent``, looked for in the project's folder and every folder above it (as
Node resolves a package). Without Node.js or the package, :class:`TsRuntimeError` says what to
install.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from auwgent.codegen.typescript import whole_floats

__all__ = ["ENV", "RUNNER", "TsRuntimeError", "find_runtime", "run_tests_ts"]

#: The environment variable naming the TypeScript runtime's folder.
ENV = "AUWGENT_TS_RUNTIME"
#: The runner's file inside the npm package.
RUNNER = Path("dist") / "test-runner.js"
_INSTALL = "npm install auwgent"


class TsRuntimeError(Exception):
    """The TypeScript runtime cannot be started: Node.js or the package is missing, or the
    runner failed; the message says what to do."""


def _package(folder: Path, where: str) -> Path:
    """The runner of the npm package in ``folder``; ``where`` says how the folder was found."""
    manifest = folder / "package.json"
    try:
        name = json.loads(manifest.read_text(encoding="utf-8")).get("name")
    except (OSError, ValueError, AttributeError):
        name = None
    if name != "auwgent":
        raise TsRuntimeError(
            f"{where} is {folder}, which is not the auwgent npm package "
            f"(no package.json named 'auwgent' there)"
        )
    runner = folder / RUNNER
    if not runner.is_file():
        raise TsRuntimeError(
            f"{where} is {folder}, which has no {RUNNER.as_posix()}: the package is not built "
            f"(run `npm run build` there) or older than `auwgent test --runtime ts` "
            f"(run `{_INSTALL}@latest`)"
        )
    return runner


def find_runtime(project_root: Path, env: Mapping[str, str] | None = None) -> Path:
    """The TypeScript test runner to start for the project in ``project_root`` (Node.js
    first: without it no runner can start)."""
    _node()
    env = os.environ if env is None else env
    given = env.get(ENV, "").strip()
    if given:
        folder = Path(given).expanduser().resolve()
        if not folder.is_dir():
            raise TsRuntimeError(f"{ENV} is {given}, which is not a folder")
        return _package(folder, ENV)
    start = project_root.resolve()
    for folder in (start, *start.parents):
        candidate = folder / "node_modules" / "auwgent"
        if candidate.is_dir():
            return _package(candidate, "the project's TypeScript runtime")
    raise TsRuntimeError(
        f"--runtime ts: the auwgent npm package is not installed for this project (no "
        f"node_modules/auwgent in {start} or a folder above it); run `{_INSTALL}` in the "
        f"project, or set {ENV} to the folder of a built copy of the package"
    )


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        raise TsRuntimeError(
            "--runtime ts needs Node.js 18 or later, and there is no `node` on PATH; "
            "install Node.js (https://nodejs.org) and run the command again"
        )
    return node


def _job(
    specs: Sequence[Mapping[str, Any]], docs: Mapping[str, Mapping[str, Any]], root: Path
) -> str:
    tested = {spec["agent"] for spec in specs}
    documents = {
        name: {"ir": doc, "floats": whole_floats(doc, "")}
        for name, doc in docs.items()
        if name in tested
    }
    return json.dumps({"root": str(root), "specs": list(specs), "documents": documents})


def run_tests_ts(
    specs: Sequence[Mapping[str, Any]],
    docs: Mapping[str, Mapping[str, Any]],
    root: Path,
    runner: Path,
) -> list[dict[str, Any]]:
    """Run the specs on the TypeScript runtime whose test runner is ``runner``; the outcomes
    as it wrote them (``name``, ``file``, ``line``, ``problems``, ``intents``, ``seconds``)."""
    node = _node()
    with tempfile.TemporaryDirectory(prefix="auwgent-test-") as folder:
        output = Path(folder) / "outcomes.json"
        try:
            done = subprocess.run(
                [node, str(runner), str(output)],
                input=_job(specs, docs, root),
                capture_output=True,
                text=True,
                encoding="utf-8",
                cwd=root,
                check=False,
            )
        except OSError as exc:
            raise TsRuntimeError(f"--runtime ts: node could not be started: {exc}") from exc
        if done.returncode != 0:
            said = done.stderr.strip() or f"exit code {done.returncode}, nothing on stderr"
            raise TsRuntimeError(f"the TypeScript test runner ({runner}) failed:\n{said}")
        if not output.is_file():
            raise TsRuntimeError(
                f"the TypeScript test runner ({runner}) ended without writing its outcomes"
            )
        try:
            outcomes = json.loads(output.read_text(encoding="utf-8"))["outcomes"]
        except (ValueError, KeyError, TypeError) as exc:
            raise TsRuntimeError(
                f"the TypeScript test runner ({runner}) wrote no readable outcomes: {exc}"
            ) from exc
    if not isinstance(outcomes, list):
        raise TsRuntimeError(f"the TypeScript test runner ({runner}) wrote no list of outcomes")
    for i, item in enumerate(outcomes):
        problem = _malformed(item)
        if problem:
            raise TsRuntimeError(
                f"the TypeScript test runner ({runner}) wrote a malformed outcome #{i + 1}: "
                f"{problem}"
            )
    return outcomes


_OUTCOME: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "file": str,
    "line": int,
    "problems": list,
    "intents": list,
    "seconds": (int, float),
}


def _malformed(item: Any) -> str | None:
    """What is wrong with one outcome the runner wrote (``None``: nothing)."""
    if not isinstance(item, dict):
        return "not an object"
    for key, kind in _OUTCOME.items():
        if key not in item:
            return f"no {key!r}"
        if not isinstance(item[key], kind):
            return f"{key!r} is a {type(item[key]).__name__}"
    if not all(isinstance(i, list) and len(i) == 3 for i in item["intents"]):
        return "an intent that is not [name, value, agent]"
    return None
