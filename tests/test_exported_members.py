import subprocess
import sys

import auwgent


def test_public_api_is_pinned() -> None:
    assert sorted(auwgent.__all__) == sorted(
        [
            "IR_VERSION",
            "Agent",
            "AuwgentError",
            "CompileError",
            "ConfigError",
            "ContextError",
            "IntentEvent",
            "JSONFileSessionStore",
            "MemorySessionStore",
            "ProviderError",
            "SQLiteSessionStore",
            "Session",
            "SessionStore",
            "SessionStoreMiddleware",
            "ToolError",
            "WorkflowError",
            "__version__",
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
