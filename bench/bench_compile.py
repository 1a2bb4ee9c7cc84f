"""Benchmark the front end: lexing + parsing throughput, and ``auwgent check`` wall time.

Run: ``python bench/bench_compile.py [--files N] [--runs N]``. It writes a generated project of
at least 10,000 lines across many files into a temporary folder, then prints:

- lexing + parsing throughput in lines per second (in process, median of several passes);
- the median wall time of ``python -m auwgent check`` on the project, process start included
  (target: well under 0.5 s), as it runs by default (one process per usable CPU for a project
  this size) and with ``-j 1`` (one process), in interleaved runs.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
try:
    import auwgent
except ImportError:  # run from a checkout without installing: use its sources
    sys.path.insert(0, str(SRC))
    import auwgent

from auwgent.compiler.parser import parse  # noqa: E402
from auwgent.compiler.source import SourceFile  # noqa: E402

TARGET_SECONDS = 0.5


def agent_file(index: int) -> str:
    """One self-contained, valid agent file of about 120 lines."""
    name = f"Agent{index}"
    parts = [
        f"// Generated agent {index} for the compile benchmark.",
        f"model Model{index} {{",
        '    provider: gemini("gemini-2.5-flash", {',
        "        temperature: 0.7",
        "        top_k: 40",
        "    })",
        "}",
        "",
        f"type Record{index} {{",
        '    id: string @desc "the record id"',
        "    score: number",
        '    level: "low" | "medium" | "high"',
        "    tags?: string[]",
        "}",
        "",
        f"prompt Persona{index}(name: string, is_vip: boolean) {{",
        '    """',
        "    You are speaking with {{name}}.",
        "",
        "    {{#if is_vip == true}}",
        "        Offer premium support.",
        "    {{else}}",
        "        Apply standard support guidelines.",
        "    {{/if}}",
        "",
        "    Output format: {{@schema(output)}}",
        '    """',
        "",
        "    Example {",
        '        user: "Hello"',
        '        assistant: "Hi! How can I help?"',
        "    }",
        "}",
        "",
        f"agent {name} {{",
        "    default config {",
        f"        model: Model{index}",
        f'        prompt: Persona{index}(ctx.name, ctx.is_vip) + "Be concise." + {{',
        '            "Always answer in English."',
        "        }",
        "    }",
        "",
        "    config Strict {",
        f"        model: Model{index}",
        '        prompt: "You are a strict validator."',
        "    }",
        "",
        "    context {",
        "        name: string",
        "        is_vip: boolean",
        "        limit: number",
        "    }",
        "",
        f"    output: Record{index}",
        "",
    ]
    for tool in range(6):
        parts += [
            f"    tool lookup_{tool}(query: string, count: number): string",
            f'        @desc "Looks up records, variant {tool}"',
        ]
        # At most five examples per agent reach the model; stay within that (no warnings).
        if tool < 3:
            parts.append(f'        @example(query = "q{tool}", count = {tool + 1})')
        parts.append("")
    for flow in range(3):
        parts += [
            f"    workflow process_{flow}(value: number, label: string): string {{",
            f'        description: "Processes a value, variant {flow}"',
            "",
            "        tool store(key: string, amount: number): string",
            "",
            "        let threshold = ctx.limit * 2 + 1",
            "        let found = lookup_0(label, 3)",
            '        if (value > threshold && found != "") {',
            "            let saved = store(label, value % 7)",
            '            return "stored " + saved',
            "        } else if (value == 0) {",
            '            return "nothing to do"',
            "        }",
            '        return "below threshold"',
            '    } @example(value = 5, label = "x")' if flow < 2 else "    }",
            "",
        ]
    parts += ["}", ""]
    return "\n".join(parts)


def make_project(root: Path, files: int) -> int:
    """Write ``files`` agent files plus an ``auwgent.yml``; return the total line count."""
    (root / "auwgent.yml").write_text(
        'source: "src"\noutput: "generated"\ntargets:\n  - py\n', encoding="utf-8"
    )
    lines = 0
    for index in range(files):
        folder = root / "src" / f"group{index % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        text = agent_file(index)
        (folder / f"agent_{index}.agent").write_text(text, encoding="utf-8")
        lines += text.count("\n")
    return lines


def parse_throughput(root: Path, passes: int) -> tuple[float, float, float]:
    """Median wall and CPU seconds for lexing + parsing every file, and lines per wall second."""
    sources = [
        SourceFile(str(p), p.read_text(encoding="utf-8")) for p in sorted(root.rglob("*.agent"))
    ]
    lines = sum(s.text.count("\n") for s in sources)
    walls, cpus = [], []
    for _ in range(passes):
        started, cpu = time.perf_counter(), time.process_time()
        for source in sources:
            _, diagnostics = parse(source)
            if diagnostics:
                raise SystemExit(f"benchmark input has errors: {diagnostics[0].message}")
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    wall = statistics.median(walls)
    return wall, statistics.median(cpus), lines / wall


def byte_compile_package() -> None:
    """Write the package's bytecode, as ``pip install`` does.

    Without it (a fresh checkout, or ``PYTHONDONTWRITEBYTECODE`` set, as in some containers)
    every run would compile all of Auwgent's modules from source again, which measures
    Python's compiler rather than ours.
    """
    package = Path(auwgent.__file__).parent
    compileall.compile_dir(str(package), quiet=1)


#: The command lines timed side by side: the default, and one process only.
VARIANTS = {"default": [], "-j 1": ["-j", "1"]}


def check_wall_time(root: Path, runs: int) -> dict[str, tuple[float, float]]:
    """Per variant, median wall and CPU seconds of ``python -m auwgent check`` on ``root``.

    Process start is included. The variants run interleaved, so a change in the machine's
    load touches them alike. The CPU time (user + system time of the command and its
    workers) is what the wall time would be on one idle core; on a busy machine wall times
    vary a lot, and a split over several processes only helps when a core is free.
    """
    byte_compile_package()
    walls: dict[str, list[float]] = {name: [] for name in VARIANTS}
    cpus: dict[str, list[float]] = {name: [] for name in VARIANTS}
    pythonpath = os.environ.get("PYTHONPATH", "")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), pythonpath]))}
    for _ in range(runs):
        for name, options in VARIANTS.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            result = subprocess.run(
                [sys.executable, "-m", "auwgent", "check", *options, str(root)],
                capture_output=True,
                text=True,
                check=False,
                env=env,
            )
            walls[name].append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            if result.returncode != 0:
                raise SystemExit(f"auwgent check failed:\n{result.stderr[:2000]}")
    return {
        name: (statistics.median(walls[name]), statistics.median(cpus[name])) for name in VARIANTS
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--files", type=int, default=80, help="agent files to generate (125 lines each)"
    )
    parser.add_argument("--runs", type=int, default=5, help="check runs to time")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="auwgent-bench-") as tmp:
        root = Path(tmp)
        lines = make_project(root, args.files)
        seconds, cpu, rate = parse_throughput(root, passes=3)
        print(f"project: {args.files} files, {lines} lines")
        print(
            f"lex+parse: {seconds * 1000:.0f} ms wall ({cpu * 1000:.0f} ms cpu), {rate:,.0f} lines/s"
        )
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        print(f"auwgent check, medians of {args.runs} interleaved runs, {cpus} usable CPUs:")
        for name, (wall, check_cpu) in check_wall_time(root, args.runs).items():
            verdict = "ok" if wall < TARGET_SECONDS else "SLOW"
            print(
                f"  {name:8} {wall * 1000:4.0f} ms wall ({check_cpu * 1000:.0f} ms cpu) "
                f"(target < {TARGET_SECONDS * 1000:.0f} ms): {verdict}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
