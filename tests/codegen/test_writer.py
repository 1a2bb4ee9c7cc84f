from __future__ import annotations

from auwgent.codegen.writer import CodeWriter


def test_fill_indent_and_write_build_lines() -> None:
    w = CodeWriter()
    w.fill("class A:")
    with w.indent():
        w.fill("x: int")
        w.write("  # trailing")
        w.fill()
        w.fill("y: str")
    w.fill("done = True")
    assert w.getvalue() == "class A:\n    x: int  # trailing\n\n    y: str\ndone = True\n"


def test_blank_counts_existing_empty_lines_and_skips_the_top() -> None:
    w = CodeWriter()
    w.blank(2)
    w.fill("a")
    w.blank()
    w.blank(2)
    w.fill("b")
    w.blank(3)
    assert w.getvalue() == "a\n\n\nb\n"


def test_lines_keeps_relative_indentation() -> None:
    w = CodeWriter()
    with w.indent():
        w.lines('"""Doc\n\n  indented\n"""')
    assert w.getvalue() == '    """Doc\n\n      indented\n    """\n'


def test_indent_is_restored_after_an_exception() -> None:
    w = CodeWriter()
    try:
        with w.indent():
            raise ValueError
    except ValueError:
        pass
    w.fill("top")
    assert w.getvalue() == "top\n"


def test_fill_wrapped_keeps_short_lists_on_one_line_and_splits_long_ones() -> None:
    w = CodeWriter()
    w.fill_wrapped("x = f(", ["a", "b"], ")")
    w.fill_wrapped("y = g(", [f"argument_{i}" for i in range(12)], ")", limit=40)
    w.fill_wrapped("z = h(", [], ")", limit=3)
    lines = w.getvalue().splitlines()
    assert lines[0] == "x = f(a, b)"
    assert lines[1] == "y = g("
    assert lines[2] == "    argument_0,"
    assert lines[-2] == ")"
    assert lines[-1] == "z = h()"


def test_fill_wrapped_can_hug_the_items_on_one_line_of_their_own() -> None:
    w = CodeWriter()
    w.fill_wrapped("def f(", ["self", "a: int", "b: str"], ") -> None:", limit=26, hug=True)
    w.fill_wrapped("def g(", [f"argument_{i}" for i in range(6)], "):", limit=30, hug=True)
    lines = w.getvalue().splitlines()
    assert lines[:3] == ["def f(", "    self, a: int, b: str", ") -> None:"]
    assert lines[3:5] == ["def g(", "    argument_0,"]  # too long to hug: one per line
    assert lines[-1] == "):"


def test_fill_packed_fills_each_line_up_to_the_limit() -> None:
    w = CodeWriter()
    w.fill_packed("__all__ = [", [f'"n{i}"' for i in range(10)], "]", limit=24)
    assert w.getvalue().splitlines() == [
        "__all__ = [",
        '    "n0", "n1", "n2",',
        '    "n3", "n4", "n5",',
        '    "n6", "n7", "n8",',
        '    "n9",',
        "]",
    ]
