"""Benchmark the whole compiler pipeline: parse, modules, checker and lowering to IR.

Run: ``python bench/bench_check.py [--agents N] [--runs N]``. It writes a generated multi-file
project (shared models, types and prompts; helpers in a sub-folder; agents with tools, typed
workflows and composed prompts) of at least 10,000 lines into a temporary folder, checks
that it compiles without errors, then prints:

- full-pipeline throughput in lines per second (in process, median of several passes), with
  the time split between parsing and the rest (modules + checker + lowering);
- the median wall time of ``python -m auwgent check`` on the project, process start included.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_compile import check_wall_time

from auwgent.compiler.parser import parse
from auwgent.compiler.pipeline import compile_project
from auwgent.compiler.source import SourceFile

MIN_LINES = 10_000


def library_files(kinds: int) -> dict[str, str]:
    """Shared declarations every agent imports."""
    models = "\n".join(
        f'export model Model{i} {{\n    provider: gemini("gemini-2.5-flash", {{ temperature: 0.{i} }})\n}}\n'
        for i in range(kinds)
    )
    types = "\n".join(
        f"export type Record{i} {{\n"
        f'    id: string @desc "the record id"\n'
        f"    score: number\n"
        f"    tags: string[]\n"
        f'    level?: "low" | "high"\n'
        f"    owner: {{ name: string, active: boolean }}\n"
        f"}}\n"
        for i in range(kinds)
    )
    prompts = "\n".join(
        f"export prompt Persona{i}(name: string, is_vip: boolean) {{\n"
        f'    """\n'
        f"    You are assistant {i}, speaking with {{{{name}}}}.\n"
        f"    {{{{#if is_vip == true}}}}\n"
        f"        Offer premium support.\n"
        f"    {{{{else}}}}\n"
        f"        Apply standard guidelines.\n"
        f"    {{{{/if}}}}\n"
        f'    """\n'
        f"    Example {{\n"
        f'        user: "Hello"\n'
        f'        assistant: "Hi! How can I help?"\n'
        f"    }}\n"
        f"}}\n"
        for i in range(kinds)
    )
    return {
        "shared/models.agent": models,
        "shared/types.agent": types,
        "shared/prompts.agent": prompts,
    }


def helper_file(index: int, kinds: int) -> str:
    """A helper (in ``agents/helpers/``) with a tool and a workflow, importing shared types."""
    k = index % kinds
    return f"""import {{ Model{k} }} from "../../shared/models"
import {{ Record{k} }} from "../../shared/types"

export helper Helper{index} {{
    description: "Analyses records for group {index}"

    default config {{
        model: Model{k}
        prompt: "You analyse records."
    }}

    input: {{
        request: string @desc "what to analyse"
    }}

    output: Record{k}

    tool load_record(id: string): Record{k} @desc "Loads a record" @example(id = "r1")

    workflow summarise(id: string): string {{
        description: "Summarises one record"
        let record = load_record(id)
        if (record.score > 10 && record.owner.active) {{
            return record.id + " is strong"
        }}
        return record.id + " is weak"
    }}
}}
"""


def agent_file(index: int, kinds: int) -> str:
    """One agent of about 100 lines (in ``agents/``) using shared declarations and a helper."""
    k = index % kinds
    tools = "\n".join(
        f"    tool fetch_{t}(zone: string, limit: number): Record{k}[]\n"
        f'        @desc "Fetches records of kind {t}"\n'
        f'        @example(zone = "west", limit = {t + 1})'
        for t in range(6)
    )
    workflows = "\n\n".join(
        f"""    workflow process_{w}(zone: string, limit: number): string {{
        description: "Processes batch {w}"
        tool store_{w}(items: Record{k}[], note?: string): boolean

        let items = fetch_{w % 6}(zone, limit)
        let total = 0
        if (items.length == 0) {{
            return "nothing in " + zone
        }} else if (limit > 100) {{
            total = limit * 2 - 1
        }} else {{
            total = items[0].score + limit % 7
        }}
        let ok = store_{w}(items, "batch")
        if (!ok || !ctx.is_admin) {{
            return "failed after " + total
        }}
        return "stored " + items.length + " for " + ctx.name
    }}"""
        for w in range(3)
    )
    return f"""import {{ Model{k} }} from "../shared/models"
import {{ Persona{k} }} from "../shared/prompts"
import {{ Record{k} }} from "../shared/types"
import {{ Helper{index} }} from "./helpers/helper{index}"

agent Agent{index} {{
    default config {{
        model: Model{k}
        prompt: Persona{k}(ctx.name, ctx.is_vip) + "Be brief." + {{
            "Answer in English."
        }}
        maxToolLoops: 8
    }}

    context {{
        name: string
        is_vip: boolean
        is_admin: boolean
    }}

{tools}

{workflows}

    helpers {{
        Helper{index} with tools {{ fetch_0, fetch_1 }} handoff user then continue
    }}
}}
"""


def write_project(root: Path, agents: int) -> int:
    """Write the project under ``root``; return its line count."""
    kinds = 8
    files = library_files(kinds)
    for i in range(agents):
        files[f"agents/agent{i}.agent"] = agent_file(i, kinds)
        files[f"agents/helpers/helper{i}.agent"] = helper_file(i, kinds)
    lines = 0
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        lines += text.count("\n")
    (root / "auwgent.yml").write_text('source: "."\noutput: "generated"\n', encoding="utf-8")
    return lines


def _median_time(
    fn: Callable[[], object], runs: int, clock: Callable[[], float] = time.perf_counter
) -> float:
    times = []
    for _ in range(runs):
        started = clock()
        fn()
        times.append(clock() - started)
    return statistics.median(times)


def _collector_paused(fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` run with the cyclic garbage collector paused, as compile_project runs (so that
    parse time and total time are measured alike)."""

    def run() -> object:
        gc.disable()
        try:
            return fn()
        finally:
            gc.enable()

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=80, help="agent files (each with a helper)")
    parser.add_argument("--runs", type=int, default=5, help="passes per measurement")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        lines = write_project(root, args.agents)
        files = sorted(root.rglob("*.agent"))
        result = compile_project(files, root)
        if not result.ok or len(result.documents) != args.agents:
            from auwgent.compiler.diagnostics import render_all

            print(render_all(result.errors[:5], color=False))
            print("the generated project does not compile cleanly")
            return 1
        if lines < MIN_LINES:
            print(f"only {lines} lines; raise --agents")
            return 1
        texts = [SourceFile(p.as_posix(), p.read_text(encoding="utf-8")) for p in files]
        parse_s = _median_time(_collector_paused(lambda: [parse(t) for t in texts]), args.runs)
        total_s = _median_time(lambda: compile_project(files, root), args.runs)
        # CPU time as well: on a shared machine wall time mostly measures the neighbours.
        cpu_s = _median_time(lambda: compile_project(files, root), args.runs, time.process_time)
        # The default (split over the usable CPUs) and one process, interleaved, as
        # bench_compile times them (bytecode written first, as `pip install` does).
        cli_times = check_wall_time(root, args.runs)
    print(f"project: {len(files)} files, {lines} lines, {args.agents} agents")
    print(
        f"full pipeline: {lines / total_s:,.0f} lines/s ({total_s * 1000:.0f} ms per pass; "
        f"parse {parse_s * 1000:.0f} ms, modules+check+lower {(total_s - parse_s) * 1000:.0f} ms)"
    )
    print(f"full pipeline CPU time: {cpu_s * 1000:.0f} ms per pass ({lines / cpu_s:,.0f} lines/s)")
    for name, (wall, cpu) in cli_times.items():
        print(
            f"auwgent check {name} (subprocess, median of {args.runs}): {wall * 1000:.0f} ms "
            f"wall ({cpu * 1000:.0f} ms cpu)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
