"""Benchmark how the compiler scales: time and memory against the size of hostile inputs.

Run: ``python bench/bench_compiler_scaling.py [--max-kb N] [--steps N] [--shape NAME]``. For
each input shape below it writes one ``.agent`` text of several sizes (10 KB up to 1 MB by
default), compiles each in a fresh subprocess as ``auwgent generate`` does (parse, modules,
checker, lowering to IR, the Python bindings when there is no error, every diagnostic
rendered), and prints per size the time and the peak memory (the child's max RSS, and its
growth during the compile against the input size), then the fitted log-log slope of time
against size: 1.0 is linear, 2.0 quadratic. The aim is 1.0 +/- 0.2 for every shape.

Shapes: the ones that were super-linear or crashed before (an error on every line inside an
agent, did-you-mean over many similar names, a union of many string literals, `if` blocks
nested past the depth limit, NUL bytes), a valid file of ordinary declarations, one long
line of garbage, and two project shapes (misspelt imports of a file with thousands of
exports; thousands of small files, each with a missing import and an unknown type).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

_HEAD = (
    "agent Main {\n"
    "    default config {\n"
    '        model: gemini("gemini-2.5-flash")\n'
    '        prompt: "You help."\n'
    "    }\n"
)


def _repeat(head: str, unit: Callable[[int], str], tail: str, size: int) -> str:
    """``head`` + ``unit(0)`` + ``unit(1)`` + ... + ``tail``, about ``size`` characters."""
    parts, total, index = [head], len(head) + len(tail), 0
    while total < size:
        piece = unit(index)
        parts.append(piece)
        total += len(piece)
        index += 1
    parts.append(tail)
    return "".join(parts)


def tool_paren(size: int) -> str:
    """``"    tool (: \\n" * n`` inside an agent: one parse error and one recovery per line."""
    return _repeat("agent Main {\n", lambda i: "    tool (: \n", "}\n", size)


def did_you_mean(size: int) -> str:
    """Thousands of types, each naming a misspelling of its own name (did-you-mean each)."""
    return _repeat("", lambda i: f"type Tname{i:07d} {{ a: Uname{i:07d} }}\n", "", size)


def literal_union(size: int) -> str:
    """One field whose type is a union of many string literals (valid)."""
    head = "type Choice {\n    pick: "
    tail = f'"last"\n}}\n{_HEAD}    output: Choice\n}}\n'
    return _repeat(head, lambda i: f'"v{i}" | ', tail, size)


def nested_if(size: int) -> str:
    """``if`` blocks nested far past the depth limit (E0109, then recovery)."""
    head = f'{_HEAD}    workflow w(x: number): number {{\n        description: "d"\n'
    depth = max(1, size // 36)
    opening = "        if (x == 1) {\n" * depth
    return head + opening + "        return x\n" + "        }\n" * depth + "    }\n}\n"


def nul_bytes(size: int) -> str:
    """NUL bytes only: one run of stray characters."""
    return "\0" * size


def long_line(size: int) -> str:
    """One line of tokens that are wrong inside an agent, then an unclosed string."""
    return _repeat("agent Main { ", lambda i: f"x{i} ( ] : ", ' "open\n}\n', size)


def valid(size: int) -> str:
    """A valid file of ordinary declarations: types, prompts, tools and workflows."""
    types = lambda i: (  # noqa: E731 - a table of generators reads best as lambdas
        f"export type Record{i} {{\n"
        f'    id: string @desc "the record id"\n'
        f"    score: number\n"
        f'    level?: "low" | "high"\n'
        f"    owner: {{ name: string, active: boolean }}\n"
        f"}}\n"
        f"export prompt Persona{i}(name: string) {{\n"
        f'    """\n    You are assistant {i}, speaking with {{{{name}}}}.\n    """\n'
        f"}}\n"
    )
    head = _repeat("", types, "", size // 2)
    count = head.count("type Record")
    tools = lambda i: (  # noqa: E731
        f'    tool fetch_{i}(zone: string, limit: number): Record{i % count}[] @desc "Fetch"\n'
        f"    workflow run_{i}(zone: string): string {{\n"
        f'        description: "Runs batch {i}"\n'
        f"        let items = fetch_{i}(zone, 3)\n"
        f"        if (items.length == 0) {{\n"
        f'            return "none in " + zone\n'
        f"        }}\n"
        f'        return "stored " + items.length\n'
        f"    }}\n"
    )
    return _repeat(head + _HEAD, tools, "}\n", size)


def bad_imports(size: int) -> dict[str, str]:
    """Two files: one exports thousands of names, the other imports misspellings of them."""
    exports = _repeat("", lambda i: f"export type Tname{i:07d} {{ a: string }}\n", "", size // 2)
    count = exports.count("export")
    names = ", ".join(f"Uname{i:07d}" for i in range(count))
    return {"lib.agent": exports, "main.agent": f'import {{ {names} }} from "./lib"\n'}


def many_files(size: int) -> dict[str, str]:
    """Many small files, each importing a file that does not exist and naming an unknown type
    (each searches the project's file names and exports)."""
    unit = 'import {{ X }} from "./gone{0}"\ntype T{0} {{ a: Nope{0} }}\n'
    count = max(1, size // len(unit.format(0)))
    return {f"f{i}.agent": unit.format(i) for i in range(count)}


SHAPES: dict[str, Callable[[int], str | dict[str, str]]] = {
    "tool_paren": tool_paren,
    "did_you_mean": did_you_mean,
    "literal_union": literal_union,
    "nested_if": nested_if,
    "nul_bytes": nul_bytes,
    "long_line": long_line,
    "valid": valid,
    "bad_imports": bad_imports,
    "many_files": many_files,
}

# Run in the child: make the text, then time what `auwgent generate` does with it.
_CHILD = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[3])
import bench_compiler_scaling as bench
from auwgent.compiler.diagnostics import render_all
from auwgent.compiler.pipeline import compile_sources
from auwgent.generate import _plan

made = bench.SHAPES[sys.argv[1]](int(sys.argv[2]))
files = {"main.agent": made} if isinstance(made, str) else made
compile_sources({"main.agent": bench.valid(2000)})  # lazy imports, first calls
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
result = compile_sources(files)
rendered = render_all(result.diagnostics, color=False)
plan = _plan(result.documents) if result.ok else None
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({
    "size": sum(map(len, files.values())), "seconds": seconds, "peak_kb": peak, "before_kb": before,
    "diagnostics": len(result.diagnostics), "rendered": len(rendered),
    "files": len(plan.files) if plan else 0,
}))
"""


def measure(shape: str, size: int) -> dict[str, float]:
    """Compile ``shape`` at ``size`` in a fresh interpreter; what the child printed."""
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, shape, str(size), str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(SRC)},
    )
    if out.returncode != 0:
        raise SystemExit(f"{shape} at {size} bytes failed:\n{out.stderr}")
    result: dict[str, float] = json.loads(out.stdout)
    return result


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of log(time) against log(size)."""
    xs = [math.log(size) for size, _ in points]
    ys = [math.log(max(seconds, 1e-6)) for _, seconds in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    num = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    den = sum((x - mx) ** 2 for x in xs)
    return num / den if den else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-kb", type=int, default=10, help="smallest input (KB)")
    parser.add_argument("--max-kb", type=int, default=1000, help="largest input (KB)")
    parser.add_argument("--steps", type=int, default=4, help="sizes per shape (log-spaced)")
    parser.add_argument("--shape", choices=sorted(SHAPES), action="append", help="only these")
    args = parser.parse_args()
    steps = max(2, args.steps)
    ratio = (args.max_kb / args.min_kb) ** (1 / (steps - 1))
    sizes = [round(args.min_kb * ratio**step * 1000) for step in range(steps)]
    worst = 0.0
    print(
        f"{'shape':<14} {'size':>9} {'time':>9} {'peak RSS':>9} {'growth':>9} {'x input':>8} "
        f"{'diags':>6} {'output':>8}"
    )
    for shape in args.shape or SHAPES:
        points = []
        for size in sizes:
            row = measure(shape, size)
            points.append((row["size"], row["seconds"]))
            growth = max(0.0, row["peak_kb"] - row["before_kb"]) * 1024
            print(
                f"{shape:<14} {row['size'] / 1000:>7.0f}KB {row['seconds']:>8.3f}s "
                f"{row['peak_kb'] / 1024:>7.0f}MB {growth / 2**20:>7.0f}MB "
                f"{growth / row['size']:>7.0f}x {row['diagnostics']:>6.0f} "
                f"{row['rendered'] / 1000:>6.0f}KB"
            )
        fitted = slope(points)
        # Between the two largest sizes: fixed costs (a process's first compile, the
        # did-you-mean budget) flatten the fit over the small ones.
        top = slope(points[-2:])
        worst = max(worst, fitted, top)
        verdict = "ok" if max(fitted, top) <= 1.2 else "SUPER-LINEAR"
        print(f"{shape:<14} slope {fitted:.2f}, {top:.2f} between the two largest ({verdict})\n")
    print(f"worst slope: {worst:.2f} (aim: 1.0 +/- 0.2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
