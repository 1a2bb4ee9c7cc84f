"""``auwgent generate`` from the outside: the files it writes and the module a user imports."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from acceptance_lang_support import agent, assert_no_traceback, run, write

# One program using every construct DECISIONS lists for the language and prompts.
EVERYTHING = {
    "auwgent.yml": 'source: "src"\noutput: "generated"\ntargets:\n  - py\n',
    "src/lib/shared.agent": (
        "/* a library: every exportable kind */\n"
        'export model Groq { provider: custom("my-groq-api", "https://api.groq.com/openai/v1",'
        ' "llama-3.3-70b-versatile") }\n'
        "export prompt Greeting(name: string) { 'Hello {{name}}' }\n"
        'export type Item {\n    id: string @desc "the id"\n    qty?: number\n}\n'
        'export intent Planning {\n    description: "plan"\n    fields { steps: string[] }\n}\n'
        "export helper Summarizer {\n    default config {\n"
        '        description: "Summarises text"\n        model: Groq\n'
        '        prompt: "Summarise."\n    }\n    input: Text\n    output: Text\n}\n'
        'export helper Analyst {\n    description: "Analyses"\n    default config {\n'
        '        model: Groq\n        prompt: "Analyse."\n    }\n'
        '    input: { request: string @desc "what to analyse" }\n'
        "    output: { summary: string }\n}\n"
    ),
    "src/lib/deeper/box.agent": 'import { Item } from "../shared.agent"\nexport type Box { items: Item[] }\n',
    "src/my-agent.agent": textwrap.dedent(
        """\
        // line comment
        import { Groq, Greeting, Item, Planning, Summarizer, Analyst } from "./lib/shared"
        import { Box } from "./lib/deeper/box.agent"
        model G { provider: gemini("gemini-2.5-flash", { temperature: 0.2 }) }
        intent Dialogue {
            description: "dialogue"
            fields { tone: "warm" | "dry" }
        }
        prompt Sys {
            \"\"\"
            You are helpful.
              Indented.
            \"\"\"
            Example {
                user: "hi"
                assistant: 'hello'
            }
            example {
                user: "bye"
                assistant: "ciao"
            }
            if (ctx.vip) { return "VIP {{ctx.name}}" } else { return "regular" }
        }
        agent Main {
            default config {
                model: G
                prompt: Sys + Greeting(ctx.name) + { "Answer as {{@schema(output)}}" }
            }
            config Strict {
                model: Groq
                prompt: "strict {{#if ctx.vip}}vip{{else}}not vip{{/if}}"
            }
            context {
                name: string
                vip: boolean
            }
            input: Text
            output: { box: Box, level: "low" | "high", n?: number }
            intent: Planning + Dialogue
            tool a(x: string, y: number): string @example(y = 1, x = "a") @desc "A" @example(x = "b", y = 2)
            tools {
                b(): Item @desc "B"
                c(flag: boolean): Item[]
            }
            workflow w(city: string, days: number): string {
                description: "wf"
                tools { secret(q: string): string }
                let r = a(city, days)
                if (days > 3 && r != "") {
                    return r + secret(city)
                } else if (days == 0) {
                    return "none"
                }
                let xs = c(true)
                return xs[0].id
            } @example(city = "Accra", days = 2)
            helpers {
                Summarizer with tools { a b } handoff user then continue
                Analyst with all tools
            }
        }
        """
    ),
    "src/sub-dir/2nd.agent": agent(
        '    intent: {\n        Note {\n            description: "n"\n'
        "            fields { note: string }\n        }\n    }"
    ),
}


def test_everything_generates_with_the_documented_layout(tmp_path: Path) -> None:
    write(tmp_path, EVERYTHING)
    result = run("generate", cwd=tmp_path)
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert re.fullmatch(r"generated 4 files \(2 agents\) in \d+ ms\n", result.stdout)
    out = tmp_path / "generated"
    produced = sorted(
        p.relative_to(out).as_posix()
        for p in out.rglob("*")
        if p.is_file() and p.name not in ("__init__.py", ".auwgent-manifest.json")
    )
    assert produced == [
        "my-agent.agent.json",
        "my_agent_types.py",
        "sub_dir/2nd.agent.json",
        "sub_dir/_2nd_types.py",
    ]
    assert not list(out.rglob("shared*")) and not list(out.rglob("box*"))  # libraries
    doc = json.loads((out / "my-agent.agent.json").read_text(encoding="utf-8"))
    assert doc["ir_version"] and doc["compiler_version"]
    check = run("check", cwd=tmp_path)
    assert check.returncode == 0 and check.stdout.startswith("checked 4 files (2 agents)")


def test_generated_module_exposes_the_manuals_names(tmp_path: Path) -> None:
    write(tmp_path, EVERYTHING)
    assert run("generate", cwd=tmp_path).returncode == 0
    script = textwrap.dedent(
        """\
        import typing
        from generated.my_agent_types import (
            auwgent, AuwgentBaseIntentHandler, AuwgentBasePartialIntentHandler, AuwgentTools,
            AuwgentMiddleware, AuwgentConfig, AuwgentApiKeys, AuwgentContext,
        )
        from generated.sub_dir._2nd_types import AuwgentApiKeys as Keys2
        print(sorted(typing.get_type_hints(AuwgentApiKeys)))
        print(sorted(typing.get_type_hints(Keys2)))
        print(sorted(typing.get_type_hints(AuwgentContext)))
        print(sorted(n for n in vars(AuwgentTools) if not n.startswith("_")))
        print(callable(auwgent))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    keys, keys2, context, tools, factory = result.stdout.splitlines()
    assert keys == "['geminiApiKey', 'myGroqApiApiKey']"  # only providers in use; no openai
    assert keys2 == "['geminiApiKey']"
    assert context == "['name', 'vip']"
    assert tools == "['a', 'b', 'c', 'secret']"
    assert factory == "True"


def _construct(
    tmp_path: Path, config: str, env: dict[str, str], module: str = "my_agent_types"
) -> subprocess.CompletedProcess[str]:
    script = (
        f"from generated.{module} import auwgent\n"
        "try:\n"
        f"    auwgent({config})\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
        "else:\n"
        "    print('ok')\n"
    )
    clean = {
        k: v
        for k, v in __import__("os").environ.items()
        if not k.endswith("_API_KEY") and not k.endswith("_BASE_URL")
    }
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, **env},
    )


def test_construction_errors_name_what_is_wrong(tmp_path: Path) -> None:
    write(tmp_path, EVERYTHING)
    assert run("generate", cwd=tmp_path).returncode == 0
    keys = '"apiKeys": {"geminiApiKey": "k", "myGroqApiApiKey": "k"}'
    good = _construct(tmp_path, "{" + keys + ', "context": {"name": "Ada", "vip": True}}', {})
    assert good.stdout.strip() == "ok", good.stderr
    wrong = _construct(tmp_path, "{" + keys + ', "context": {"name": 3, "vip": True}}', {})
    assert "context.name" in wrong.stdout and "string" in wrong.stdout and "3" in wrong.stdout
    missing = _construct(tmp_path, '{"apiKeys": {"geminiApiKey": "k"}}', {})
    assert "myGroqApiApiKey" in missing.stdout and "MY_GROQ_API_API_KEY" in missing.stdout
    from_env = _construct(
        tmp_path, '{"apiKeys": {"geminiApiKey": "k"}}', {"MY_GROQ_API_API_KEY": "k"}
    )
    assert from_env.stdout.strip() == "ok", from_env.stdout + from_env.stderr
    gemini = _construct(tmp_path, '{"apiKeys": {"myGroqApiApiKey": "k"}}', {})
    assert "geminiApiKey" in gemini.stdout and "GEMINI_API_KEY" in gemini.stdout
    not_a_string = _construct(
        tmp_path, '{"apiKeys": {"geminiApiKey": 5, "myGroqApiApiKey": "k"}}', {}
    )
    assert "apiKeys.geminiApiKey" in not_a_string.stdout
    assert "string" in not_a_string.stdout and "missing" not in not_a_string.stdout


def test_stale_outputs_are_removed_and_errors_change_nothing(tmp_path: Path) -> None:
    write(tmp_path, {"a.agent": agent(), "b.agent": agent()})
    assert run("generate", ".", cwd=tmp_path).returncode == 0
    out = tmp_path / "generated"
    assert (out / "b_types.py").is_file()
    (tmp_path / "b.agent").unlink()
    assert run("generate", ".", cwd=tmp_path).returncode == 0
    assert not (out / "b_types.py").exists() and not (out / "b.agent.json").exists()
    before = (out / "a_types.py").read_bytes()
    (tmp_path / "a.agent").write_text(agent("    output: Nope"), encoding="utf-8")
    result = run("generate", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert "outputs left unchanged" in result.stdout
    assert (out / "a_types.py").read_bytes() == before


def test_ts_target(tmp_path: Path) -> None:
    write(tmp_path, {"auwgent.yml": "targets: [ts]\n", "main.agent": agent()})
    result = run("generate", cwd=tmp_path)
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr
    generated = tmp_path / "generated"
    assert (generated / "main.agent.types.ts").is_file()
    assert not (generated / "main_types.py").exists()
    (tmp_path / "auwgent.yml").write_text("targets: [ts, py]\n", encoding="utf-8")
    result = run("generate", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (generated / "main_types.py").is_file()
    assert (generated / "main.agent.types.ts").is_file()


def test_summary_counts_warnings_like_check(tmp_path: Path) -> None:
    write(tmp_path, {"main.agent": "type Unused { a: string }\n" + agent()})
    generated = run("generate", ".", cwd=tmp_path)
    assert generated.returncode == 0 and "W2002" in generated.stderr
    assert re.fullmatch(r"generated 2 files \(1 agent\) in \d+ ms: 1 warning\n", generated.stdout)
    checked = run("check", ".", cwd=tmp_path)
    assert re.fullmatch(r"checked 1 file \(1 agent\) in \d+ ms: 1 warning\n", checked.stdout)
    (tmp_path / "main.agent").write_text(
        "type Unused { a: string }\n" + agent("    output: Nope"), encoding="utf-8"
    )
    failed = run("generate", ".", cwd=tmp_path)
    assert failed.returncode == 1
    assert failed.stdout.endswith(": 1 error, 1 warning, outputs left unchanged\n")


def _wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def _save_until(path: Path, text: str, condition: Callable[[], bool]) -> bool:
    """Write ``text`` to ``path`` and wait for ``condition``, saving again every few seconds
    (a save made while the watcher was still starting up is not seen)."""
    for _ in range(5):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if _wait_for(condition, timeout=4.0):
            return True
    return False


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT")
def test_watch_regenerates_survives_errors_and_stops_quietly(tmp_path: Path) -> None:
    write(tmp_path, {"auwgent.yml": 'source: "src"\n', "src/main.agent": agent()})
    source = tmp_path / "src" / "main.agent"
    module = tmp_path / "generated" / "main_types.py"
    other = tmp_path / "generated" / "sub" / "other_types.py"
    errors: list[str] = []
    with subprocess.Popen(
        [sys.executable, "-m", "auwgent", "generate", "--watch"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    ) as proc:
        assert proc.stderr is not None
        reader = threading.Thread(target=lambda: errors.extend(proc.stderr or ()), daemon=True)
        reader.start()
        try:
            assert _wait_for(module.is_file)
            added = agent("    tool added(q: string): string")
            assert _save_until(source, added, lambda: "def added" in module.read_text("utf-8"))
            # A syntax error is shown and watching goes on; nothing is written meanwhile.
            assert _save_until(source, "agent {\n", lambda: any("E0100" in e for e in errors))
            write(tmp_path, {"src/sub/other.agent": agent()})
            time.sleep(1.0)
            assert not other.exists()
            again = agent("    tool again(q: string): string")
            assert _save_until(source, again, lambda: "def again" in module.read_text("utf-8"))
            assert _wait_for(other.is_file)  # written in the same cycle, file by file
        finally:
            proc.send_signal(signal.SIGINT)
            stdout, _ = proc.communicate(timeout=20)
            reader.join(timeout=5)
    stderr = "".join(errors)
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert stdout.rstrip().endswith("stopped watching")


def test_one_source_file_importing_from_a_parent_folder(tmp_path: Path) -> None:
    files = {
        "shared/models.agent": 'export model M { provider: gemini("gemini-2.5-flash") }\n',
        "app/main.agent": 'import { M } from "../shared/models"\n'
        + agent(config='model: M\n        prompt: "p"').split("\n", 1)[1],
    }
    write(tmp_path, files)
    assert run("generate", "app/main.agent", cwd=tmp_path).returncode == 0
    assert (tmp_path / "app" / "generated" / "main_types.py").is_file()
    write(tmp_path, {"auwgent.yml": 'source: "app/main.agent"\noutput: "out"\n'})
    assert run("generate", cwd=tmp_path).returncode == 0
    assert (tmp_path / "out" / "main_types.py").is_file()
    assert not (tmp_path / "out" / "app").exists()


def test_a_wrong_nested_context_value_names_the_inner_key(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "main.agent": agent(
                '    context {\n        prefs: { lang: string, level: "low" | "high" }\n'
                "        tags: string[]\n    }"
            )
        },
    )
    assert run("generate", ".", cwd=tmp_path).returncode == 0
    keys = '"apiKeys": {"geminiApiKey": "k"}'
    level = _construct(
        tmp_path,
        "{" + keys + ', "context": {"prefs": {"lang": "en", "level": "mid"}, "tags": []}}',
        {},
        module="main_types",
    )
    assert 'context.prefs.level: expected "low" | "high", got string "mid"' in level.stdout
    tags = _construct(
        tmp_path,
        "{" + keys + ', "context": {"prefs": {"lang": "en", "level": "low"}, "tags": [1]}}',
        {},
        module="main_types",
    )
    assert "context.tags[0]" in tags.stdout, tags.stdout
