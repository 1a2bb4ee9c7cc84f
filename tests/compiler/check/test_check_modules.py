"""The module graph on random projects: cycles are found exactly when they exist."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from auwgent.compiler.pipeline import compile_sources


def _has_cycle(edges: dict[int, set[int]]) -> bool:
    state: dict[int, int] = {}

    def visit(node: int) -> bool:
        state[node] = 1
        for target in edges[node]:
            if state.get(target) == 1 or (target not in state and visit(target)):
                return True
        state[node] = 2
        return False

    return any(node not in state and visit(node) for node in edges)


def _project(edges: dict[int, set[int]]) -> dict[str, str]:
    """File i exports type T<i>; it imports T<j> from each file j it points to, and uses it."""
    files = {}
    for i, targets in edges.items():
        folder = "sub/" if i % 2 else ""
        lines = []
        for j in sorted(targets):
            spec = ("../" if folder else "./") + ("sub/" if j % 2 else "") + f"f{j}"
            lines.append(f'import {{ T{j} }} from "{spec}"')
        fields = "".join(f"    f{j}: T{j}\n" for j in sorted(targets)) or "    x: string\n"
        lines.append(f"export type T{i} {{\n{fields}}}")
        files[f"{folder}f{i}.agent"] = "\n".join(lines) + "\n"
    return files


GRAPHS = st.integers(min_value=1, max_value=6).flatmap(
    lambda n: st.fixed_dictionaries(
        {i: st.sets(st.integers(min_value=0, max_value=n - 1), max_size=3) for i in range(n)}
    )
)


@settings(max_examples=60, deadline=None)
@given(GRAPHS)
def test_cycles_are_reported_exactly_when_the_imports_have_one(edges: dict[int, set[int]]) -> None:
    result = compile_sources(_project(edges))
    codes = {d.code for d in result.diagnostics}
    assert ("E1004" in codes) == _has_cycle(edges)
    assert codes <= {"E1004", "W2001"}, [d.message for d in result.diagnostics]
