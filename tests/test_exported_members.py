import auwgent


def test_public_api_is_pinned() -> None:
    assert sorted(auwgent.__all__) == sorted(
        [
            "IR_VERSION",
            "AuwgentError",
            "CompileError",
            "ConfigError",
            "ContextError",
            "ProviderError",
            "ToolError",
            "WorkflowError",
            "__version__",
        ]
    )
    for name in auwgent.__all__:
        assert hasattr(auwgent, name)
