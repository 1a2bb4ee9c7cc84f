"""Benchmark the language server: time from a change notification to its diagnostics.

Run: ``python bench/bench_lsp.py [--files N] [--runs N]``. It writes the compile benchmark's
generated project (at least 10,000 lines in 80 files, see bench_compile.py), starts
``auwgent lsp`` as a subprocess and drives it over stdio with pygls's language client, as an
editor does, with its default settings. With one file open, it sends ``--runs`` whole-text
changes of each kind below and times each from the moment the notification is written until
the diagnostics of that file arrive:

- a clean edit (a comment line) after a quiet spell: the server checks at once, and only
  the edited file (and what it imports) again;
- an edit that introduces an error (an unknown type), and the edit that fixes it;
- a burst of five edits 20 ms apart, timed from the last one: the server waits until no edit
  has come for its debounce time (50 ms) and checks once.

The baseline, measured in the same run, is a whole-project check in process (parse, modules,
checker, no IR), what a server without incremental checking would do on every edit; it also
shows the modules and checker alone, from syntax trees already parsed. It
prints the medians and their ratio to the baseline; the target is under 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "src"))

from bench_compile import make_project  # noqa: E402
from lsprotocol import types as t  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

from auwgent.compiler.checker import check  # noqa: E402
from auwgent.compiler.modules import resolve_modules  # noqa: E402
from auwgent.compiler.parser import parse  # noqa: E402
from auwgent.compiler.pipeline import compile_project  # noqa: E402
from auwgent.compiler.source import SourceFile  # noqa: E402
from auwgent.project import load_project  # noqa: E402

TARGET_MS = 100.0


class Client(LanguageClient):
    def __init__(self) -> None:
        super().__init__("auwgent-bench", "1")
        self.arrived: dict[str, asyncio.Event] = {}
        self.latest: dict[str, list[t.Diagnostic]] = {}
        self.log: list[str] = []

        @self.feature(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _published(params: t.PublishDiagnosticsParams) -> None:
            self.latest[params.uri] = list(params.diagnostics)
            self.arrived.setdefault(params.uri, asyncio.Event()).set()

        @self.feature(t.WINDOW_LOG_MESSAGE)
        def _logged(params: t.LogMessageParams) -> None:
            self.log.append(params.message)

    async def timed_change(self, uri: str, text: str, version: int) -> float:
        """Milliseconds from sending the change to the diagnostics of ``uri``."""
        event = self.arrived.setdefault(uri, asyncio.Event())
        event.clear()
        started = time.perf_counter()
        self.text_document_did_change(
            t.DidChangeTextDocumentParams(
                text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[t.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        await asyncio.wait_for(event.wait(), 60)
        return (time.perf_counter() - started) * 1000


def baselines_ms(root: Path, runs: int) -> tuple[float, float]:
    """Median ms of a whole-project check read from disk, and from syntax trees kept."""
    project = load_project(root)
    cold, warm = [], []
    sources = {
        f.relative_to(project.source_root).as_posix(): f.read_text(encoding="utf-8")
        for f in project.files
    }
    modules = {path: parse(SourceFile(path, text))[0] for path, text in sources.items()}
    for _ in range(runs):
        started = time.perf_counter()
        compile_project(project.files, project.source_root, documents=False, jobs=1)
        cold.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        check(resolve_modules(modules))
        warm.append((time.perf_counter() - started) * 1000)
    return statistics.median(cold), statistics.median(warm)


async def measure(root: Path, runs: int) -> dict[str, float]:
    client = Client()
    await client.start_io(sys.executable, "-m", "auwgent", "lsp")
    await client.initialize_async(
        t.InitializeParams(capabilities=t.ClientCapabilities(), root_uri=root.as_uri())
    )
    client.initialized(t.InitializedParams())
    path = next(iter(sorted((root / "src").rglob("*.agent"))))
    text = path.read_text(encoding="utf-8")
    uri = path.as_uri()
    client.arrived[uri] = asyncio.Event()
    client.text_document_did_open(
        t.DidOpenTextDocumentParams(
            text_document=t.TextDocumentItem(uri=uri, language_id="auwgent", version=1, text=text)
        )
    )
    await asyncio.wait_for(client.arrived[uri].wait(), 120)
    broken = text.replace("score: number", "score: numbr", 1)
    names = ("clean edit", "edit with an error", "fixing edit", "burst of 5, from the last")
    times: dict[str, list[float]] = {name: [] for name in names}
    version = 1

    async def change(name: str, new_text: str, codes: list[str]) -> None:
        nonlocal version
        await asyncio.sleep(0.2)  # a quiet spell before the edit
        version += 1
        times[name].append(await client.timed_change(uri, new_text, version))
        if [d.code for d in client.latest[uri]] != codes:
            raise SystemExit(f"{name}: unexpected diagnostics {client.latest[uri]}")

    for run in range(runs):
        await change("clean edit", f"{text}// {run}\n", [])
        await change("edit with an error", broken, ["E2010"])
        await change("fixing edit", text, [])
        await asyncio.sleep(0.2)
        for key in range(4):
            version += 1
            client.text_document_did_change(
                t.DidChangeTextDocumentParams(
                    text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[
                        t.TextDocumentContentChangeWholeDocument(text=text + "/" * key)
                    ],
                )
            )
            await asyncio.sleep(0.02)
        version += 1
        last = await client.timed_change(uri, f"{text}// burst {run}\n", version)
        times["burst of 5, from the last"].append(last)
    print(f"  server log, last checks: {'; '.join(client.log[-3:])}")
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=80, help="agent files to generate")
    parser.add_argument("--runs", type=int, default=11, help="changes of each kind to time")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="auwgent-bench-lsp-") as tmp:
        root = Path(tmp)
        lines = make_project(root, args.files)
        print(f"project: {args.files} files, {lines} lines")
        base, warm = baselines_ms(root, 5)
        print(
            f"baseline: whole-project check in process, median {base:.1f} ms "
            f"({warm:.1f} ms of it modules and checker, from kept syntax trees)"
        )
        print(f"change -> diagnostics, medians of {args.runs}:")
        for name, value in asyncio.run(measure(root, args.runs)).items():
            verdict = "ok" if value < TARGET_MS else "SLOW"
            print(
                f"  {name:26} {value:6.1f} ms  ({value / base:.2f}x baseline; "
                f"target < {TARGET_MS:.0f} ms): {verdict}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
