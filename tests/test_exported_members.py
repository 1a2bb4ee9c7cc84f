import subprocess
import sys
from pathlib import Path

import auwgent


def test_public_api_is_pinned() -> None:
    assert sorted(auwgent.__all__) == sorted(
        [
            "IR_VERSION",
            "Agent",
            "ApprovalError",
            "AuwgentError",
            "CompileError",
            "ConfigError",
            "ConflictError",
            "ContextError",
            "InputError",
            "IntentEvent",
            "JSONFileSessionStore",
            "MemorySessionStore",
            "Part",
            "ProviderError",
            "SQLiteSessionStore",
            "Session",
            "SessionStore",
            "SessionStoreMiddleware",
            "ToolError",
            "WorkflowError",
            "__version__",
            "auwgent",
            "file",
            "image",
            "inline_tool",
            "text",
            "tool_parts",
        ]
    )
    for name in auwgent.__all__:
        assert getattr(auwgent, name) is not None


def test_unknown_attribute_is_an_attribute_error() -> None:
    try:
        auwgent.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_importing_the_package_does_not_load_the_runtime() -> None:
    code = "import sys, auwgent; print('auwgent.runtime.agent' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _project(tmp_path: Path, *agents: str) -> Path:
    (tmp_path / "auwgent.yml").write_text('source: "src"\noutput: "generated"\ntargets: [py]\n')
    (tmp_path / "src").mkdir()
    for name in agents:
        (tmp_path / "src" / f"{name.lower()}.agent").write_text(
            f'agent {name} {{\n    default config {{\n        model: openai("gpt-4o")\n'
            '        prompt: "Be brief."\n    }\n}\n'
        )
    gen = subprocess.run(
        [sys.executable, "-m", "auwgent", "generate", str(tmp_path)], capture_output=True, text=True
    )
    assert gen.returncode == 0, gen.stdout + gen.stderr
    return tmp_path


_APP = """
import asyncio
from auwgent import auwgent

agent = auwgent({"provider": "offline"})
session = asyncio.run(agent.run("hello"))
print(type(agent).__module__, session["turns"][-1]["input"]["text"])
"""


def test_package_factory_finds_the_projects_only_agent(tmp_path: Path) -> None:
    project = _project(tmp_path, "Main")
    (project / "sub").mkdir()
    out = subprocess.run(
        [sys.executable, "-c", _APP], cwd=project / "sub", capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "hello"


def test_package_factory_with_several_agents_names_the_modules(tmp_path: Path) -> None:
    project = _project(tmp_path, "Main", "Other")
    out = subprocess.run([sys.executable, "-c", _APP], cwd=project, capture_output=True, text=True)
    assert out.returncode == 1
    assert "holds 2 generated agent modules (main_types.py, other_types.py)" in out.stderr
    assert "from generated.main_types import auwgent" in out.stderr
