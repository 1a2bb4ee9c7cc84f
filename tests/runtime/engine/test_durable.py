"""``"durable": "dbos"`` in the runtime config: a run's model requests and tool calls are DBOS
steps. Outside a DBOS workflow the run refuses to start anything; inside one (DBOS on a
SQLite system database, in real processes) a process that dies mid-run is recovered by the
next one without re-sending a completed model request or re-running a completed tool call.
Without the key, nothing of DBOS is imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from auwgent.errors import ConfigError
from auwgent.testing import ScriptedModel

from .irkit import agent, document, field, make_agent, text, tool

DOC = document(agent(tools=[tool("record", field("n"))]))


async def test_a_durable_run_outside_a_dbos_workflow_sends_nothing() -> None:
    model = ScriptedModel([text("never sent")])
    bot = make_agent(DOC, model, durable="dbos", tools={"record": lambda n: n})
    session = await bot.run("hello")
    turn = session["turns"][-1]
    assert turn["status"] == "error"
    assert "inside a DBOS workflow" in str(turn["error"])
    assert model.requests == []


def test_durable_names_its_engine() -> None:
    with pytest.raises(ConfigError, match=r"durable: expected 'dbos'.*'temporal'"):
        make_agent(DOC, ScriptedModel([]), durable="temporal")


def test_a_plain_run_imports_nothing_of_dbos() -> None:
    code = textwrap.dedent(
        f"""
        import asyncio, sys
        sys.path.insert(0, {str(Path(__file__).parents[2])!r})
        from runtime.engine.irkit import agent, document, make_agent, text
        from auwgent.testing import ScriptedModel
        bot = make_agent(document(agent()), ScriptedModel([text("hi")]))
        asyncio.run(bot.run("hello"))
        print(sorted(m for m in sys.modules if m.split(".")[0] == "dbos"
                     or m.startswith("auwgent.runtime.durable")))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# A DBOS application (SQLite system database) whose workflow runs the agent. The tool
# records each attempt and its idempotency key in a file; on the first attempt of call 1
# the process dies (os._exit) after the side effect, before the step's result is saved.
APP = """
import asyncio, json, os, sys
sys.path.insert(0, {tests!r})
from dbos import DBOS, SetWorkflowID
from runtime.engine.irkit import agent, block, document, field, make_agent, text, tool
from auwgent.testing import ScriptedModel

HERE = {here!r}
script = [block("tool_call", "record", f"n: {{i}}") for i in range(3)] + [text("done")]
model = ScriptedModel(script[int(os.environ["SKIP"]):])

def record(n, idempotency_key=None):
    with open(os.path.join(HERE, "attempts.txt"), "a") as log:
        log.write(json.dumps([n, idempotency_key]) + "\\n")
    if n == "1" and not os.path.exists(os.path.join(HERE, "died")):
        open(os.path.join(HERE, "died"), "w").close()
        os._exit(9)
    return "ok " + n

bot = make_agent(document(agent(tools=[tool("record", field("n"))])), model,
                 durable="dbos", tools={{"record": record}})

@DBOS.workflow()
async def answer(question):
    session = await bot.run(question)
    return session["turns"][-1]["status"]

DBOS(config={{"name": "durable-test", "system_database_url": "sqlite:///" + HERE + "/sys.db",
             "executor_id": "local", "application_version": "1"}})
DBOS.launch()

async def main():
    if os.environ["SKIP"] == "0":
        with SetWorkflowID("run-1"):
            await answer("go")
    else:  # recovery of run-1 started at launch
        print(await (await DBOS.retrieve_workflow_async("run-1")).get_result())
        with open(os.path.join(HERE, "requests.txt"), "w") as out:
            out.write(str(len(model.requests)))

asyncio.run(main())
"""


@pytest.mark.slow
def test_a_process_that_dies_mid_run_is_recovered_from_its_last_step(tmp_path: Path) -> None:
    tests = str(Path(__file__).parents[2])
    (tmp_path / "app.py").write_text(APP.format(tests=tests, here=str(tmp_path)))
    env = {**os.environ, "SKIP": "0"}
    first = subprocess.run([sys.executable, "app.py"], cwd=tmp_path, env=env, capture_output=True)
    assert first.returncode == 9, first.stderr.decode()
    # The second process's model knows only the answers after the checkpointed requests:
    # the first two requests (call 0, call 1) completed, so they are replayed, not re-sent.
    env["SKIP"] = "2"
    second = subprocess.run([sys.executable, "app.py"], cwd=tmp_path, env=env, capture_output=True)
    assert second.returncode == 0, second.stderr.decode()
    assert second.stdout.decode().split()[-1] == "complete"
    attempts = [json.loads(line) for line in (tmp_path / "attempts.txt").read_text().splitlines()]
    assert [n for n, _ in attempts] == ["0", "1", "1", "2"]  # call 1 again: it was cut
    keys = [key for _, key in attempts]
    assert keys[1] == keys[2] and len(set(keys)) == 3
    assert (tmp_path / "requests.txt").read_text() == "2"  # calls 2 and the answer
