"""The ``auwgent`` command.

Each subcommand is one ``_add_<name>`` function that registers its parser and a ``run``
callback; ``COMMANDS`` lists them, so a new command is one function and one line. A command's
implementation is imported by its callback, when the command runs: the one place the code
imports below the top of a module on purpose, so that ``auwgent check`` pays for the compiler
only, not for serve, the runtime, evals or MCP (``bench/bench_check.py`` measures it).

Exit codes (:mod:`auwgent.console`): 0 success (warnings allowed), 1 the sources have errors,
2 the command could not run as asked, 3 a bug in Auwgent itself (one line, never a traceback).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from auwgent._records import record_fields
from auwgent._version import __version__
from auwgent.compiler import render_all, use_color
from auwgent.console import (
    EXIT_ERRORS,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    check_project,
    summary,
)
from auwgent.errors import ConfigError
from auwgent.evals.files import dataset_files
from auwgent.project import load_project


def run_check(path: Path, *, out: TextIO, err: TextIO, jobs: int | None = None) -> int:
    """``auwgent check PATH``: print diagnostics and a summary; return the exit code."""
    started = time.perf_counter()
    # The compiler pauses the cyclic garbage collector while it runs (see pipeline._compile);
    # pausing it here already covers loading the project and the compiler's own imports,
    # whose many new objects would otherwise set off a few collections too.
    collecting = gc.isenabled()
    gc.disable()
    try:
        try:
            project = load_project(path)
        except ConfigError as exc:
            print(f"error: {exc}", file=err)
            return EXIT_USAGE
        if dataset_files(project.evals):  # they are checked against the IR: build it
            from auwgent.evals.check import check_with_datasets

            report = check_with_datasets(project, jobs=jobs)
        else:
            report = check_project(project, jobs=jobs)
    finally:
        if collecting:
            gc.enable()
    if report.diagnostics:
        print(render_all(report.diagnostics, color=use_color(err)), file=err)
        print(file=err)
    print(summary(report, (time.perf_counter() - started) * 1000), file=out)
    return EXIT_OK if report.ok else EXIT_ERRORS


# --------------------------------------------------------------------------------------------
# Subcommands

Runner = Callable[["argparse.Namespace", TextIO, TextIO], int]


def _add_check(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "check",
        help="check .agent sources for errors without writing anything",
        description="Check a project, a folder of .agent files, or one .agent file.",
    )
    _add_path(parser)
    _add_jobs(parser)
    parser.add_argument(
        "--mcp",
        action="store_true",
        help="also connect to the MCP servers and report @mcp tools that no longer match them",
    )
    _add_mcp_config(parser)

    def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        if args.mcp:
            from auwgent.mcp.importer import run_check_mcp

            return run_check_mcp(args.path, out=out, err=err, mcp_config=args.mcp_config)
        if args.mcp_config is not None:
            print("error: --mcp-config goes with --mcp (plain check starts no server)", file=err)
            return EXIT_USAGE
        return run_check(args.path, out=out, err=err, jobs=args.jobs)

    parser.set_defaults(run=run)


def _add_generate(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "generate",
        help="compile .agent sources to IR and typed bindings",
        description="Compile a project and write its generated files.",
    )
    _add_path(parser)
    parser.add_argument(
        "--watch", action="store_true", help="regenerate whenever a source file changes"
    )
    _add_jobs(parser)

    def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        from auwgent import generate

        if args.watch:
            return generate.watch(args.path, out=out, err=err, jobs=args.jobs)
        return generate.run_generate(args.path, out=out, err=err, jobs=args.jobs)

    parser.set_defaults(run=run)


def _add_test(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "test",
        help="run the test blocks of .agent files",
        description="Compile a project and run its `test` blocks on the scripted model "
        "(or their cassettes). Exit 0 when every test passes, 1 when one fails or the "
        "sources have errors.",
    )
    _add_path(parser)
    parser.add_argument(
        "-k",
        dest="pattern",
        metavar="PATTERN",
        help="run only the tests whose name contains PATTERN (case-insensitive)",
    )
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write a JUnit XML report")
    parser.add_argument(
        "--runtime",
        choices=("python", "ts"),
        default="python",
        help="the runtime the tests run on: python (default) or ts, the TypeScript runtime "
        "(the folder in AUWGENT_TS_RUNTIME, else the project's node_modules/auwgent)",
    )

    def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        from auwgent.testing.dsl import run_command

        return run_command(
            args.path, args.pattern, args.junit, out=out, err=err, runtime=args.runtime
        )

    parser.set_defaults(run=run)


def _add_eval(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "eval",
        help="run eval datasets and score them (auwgent eval --help)",
        description="Run the cases of eval datasets (default: the project's `evals`) on the "
        "offline model or through cassettes, score them, and compare with a baseline. Exit 0 "
        "when every case passes and nothing regressed, 1 otherwise, 2 on a usage error.",
    )
    parser.add_argument("datasets", nargs="*", type=Path, metavar="DATASET")
    parser.add_argument("--project", type=Path, default=Path("."), metavar="PATH")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--record", action="store_const", const="record", dest="mode")
    modes.add_argument("--replay", action="store_const", const="replay", dest="mode")
    parser.add_argument("--concurrency", type=_positive, default=4, metavar="N")
    parser.add_argument("--repeat", type=_positive, default=1, metavar="N")
    for name in ("json", "junit", "html", "baseline"):
        parser.add_argument(f"--{name}", type=Path, metavar="FILE")
    parser.add_argument("--tolerance", type=float, default=0.0, metavar="X")
    parser.add_argument("--scorers", action="append", default=[], metavar="MODULE:FUNCTION")

    def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        from auwgent.evals.command import EvalArgs, run_eval

        asked = {k: v for k, v in vars(args).items() if k in record_fields(EvalArgs)}
        return run_eval(EvalArgs(**{**asked, "mode": args.mode or "offline"}), out=out, err=err)

    parser.set_defaults(run=run)


def _positive(text: str) -> int:
    value = int(text) if text.isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _add_serve(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "serve",
        help="serve the project's agents over HTTP (needs auwgent[serve])",
        description="Serve every agent of a project over HTTP: runs stream their intents as "
        "Server-Sent Events, conversations live in a shared store. `auwgent serve --help` "
        "lists the options; the endpoints are described at /openapi.json once it runs.",
    )
    _add_path(parser)
    parser.add_argument(
        "--app",
        required=True,
        metavar="MODULE:ATTR",
        help="a function called with an agent's name that returns its runtime config",
    )
    parser.add_argument("--host", default="127.0.0.1", help="where to listen (default 127.0.0.1)")
    parser.add_argument("--port", type=_positive_int, default=8000, help="default 8000")
    parser.add_argument(
        "--token", help="the bearer token requests must carry (or AUWGENT_SERVE_TOKEN)"
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a web page origin allowed to call the server (repeatable; default: none)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="a Host name the server answers besides its bound address (repeatable)",
    )
    parser.add_argument(
        "--store",
        metavar="URL",
        help="where conversations live: sqlite:///path.db (default sqlite:///auwgent_sessions.db), "
        "redis://host:6379/0 or postgresql://user@host/db",
    )
    parser.add_argument(
        "--lock-ttl",
        type=_positive_float,
        default=120.0,
        metavar="SECONDS",
        help="how long a conversation lock outlives a worker that stopped renewing it (a live "
        "run renews it every third of that; default 120)",
    )
    parser.add_argument(
        "--stream-buffer",
        type=_positive_int,
        metavar="BYTES",
        help="the most bytes of events one response holds for a client that reads slowly "
        "(default 16777216, 16 MiB): partial events are coalesced or dropped, and a stream "
        "whose final events do not fit ends with an error event",
    )

    _add_durable(parser)

    def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        options: dict[str, Any] = {}
        if args.stream_buffer is not None:
            options["stream_buffer"] = args.stream_buffer
        if args.durable is not None:
            options["durable"] = _durable_options(args)
        from auwgent.serve import serve_command

        return serve_command(
            args.path,
            app=args.app,
            host=args.host,
            port=args.port,
            token=args.token,
            store_url=args.store,
            out=out,
            err=err,
            allow_origins=args.allow_origin,
            allow_hosts=args.allow_host,
            lock_ttl=args.lock_ttl,
            **options,
        )

    parser.set_defaults(run=run)


def _add_dev(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "dev",
        help="compile and watch a project, and open its dev console in the browser "
        "(needs auwgent[console])",
        description="Compile the project (regenerating on every change, as generate --watch), "
        "serve its agents and the dev console on a loopback address, and open the console. "
        "Without keys for the project's models, agents run on the offline model.",
    )
    _add_path(parser)
    parser.add_argument(
        "--app",
        metavar="MODULE:ATTR",
        help="a function called with an agent's name that returns its runtime config "
        "(tools, keys, middleware), as for auwgent serve",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="a loopback address (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=_port, default=4747, help="default 4747; 0 picks a free port"
    )
    parser.add_argument("--no-open", action="store_true", help="do not open the browser")
    parser.add_argument(
        "--offline", action="store_true", help="run every agent on the offline model"
    )

    def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        from auwgent.dev import dev_command

        return dev_command(
            args.path,
            app=args.app,
            host=args.host,
            port=args.port,
            open_browser=not args.no_open,
            offline=args.offline,
            out=out,
            err=err,
        )

    parser.set_defaults(run=run)


def _port(text: str) -> int:
    """A TCP port, 0 to 65535 (0: any free one)."""
    import argparse

    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"expected a port number from 0 to 65535, got {text!r}")
    return int(text)


def _add_durable(parser: argparse.ArgumentParser) -> None:
    """``auwgent serve``'s durable runs (docs/durable.md)."""
    parser.add_argument(
        "--durable",
        choices=["dbos"],
        help="run every run as a DBOS workflow on a queue shared by the workers of one "
        "PostgreSQL: a worker that dies loses no run (needs auwgent[dbos])",
    )
    parser.add_argument(
        "--durable-url",
        metavar="URL",
        help="the PostgreSQL of the durable runs (or AUWGENT_DURABLE_URL; default: --store "
        "when it is a postgresql:// URL)",
    )
    parser.add_argument(
        "--durable-concurrency",
        type=_positive_int,
        default=8,
        metavar="N",
        help="how many runs of one agent a worker executes at once (default 8)",
    )
    parser.add_argument(
        "--worker-ttl",
        type=_positive_float,
        default=15.0,
        metavar="SECONDS",
        help="how long a worker may stay silent before the others continue its runs (default 15)",
    )


def _durable_options(args: argparse.Namespace) -> dict[str, Any]:
    url = args.durable_url or os.environ.get("AUWGENT_DURABLE_URL")
    if not url and (args.store or "").startswith(("postgresql://", "postgres://")):
        url = args.store
    return {
        "engine": args.durable,
        "url": url,
        "concurrency": args.durable_concurrency,
        "worker_ttl": args.worker_ttl,
    }


def _add_mcp_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mcp-config",
        type=Path,
        metavar="FILE",
        help="the servers' secrets: a JSON file shaped like the runtime config's \"mcp\" "
        '(e.g. {"Search": {"headers": {"Authorization": "Bearer ..."}}})',
    )


def _add_mcp(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "mcp",
        help="use MCP servers: import their tools, serve an agent (needs auwgent[mcp])",
        description="Model Context Protocol tooling: `auwgent mcp import --help` and "
        "`auwgent mcp serve --help` describe each action.",
    )
    actions = parser.add_subparsers(dest="mcp_command", metavar="ACTION")
    importing = actions.add_parser(
        "import",
        help="print a declared server's tools as `tool` declarations",
        description="Connect to an MCP server declared in the project (`mcp Name { ... }`), "
        "list its tools and print one `tool` declaration per tool, with @mcp(Name).",
    )
    importing.add_argument("server", metavar="SERVER", help="the name of an `mcp` declaration")
    importing.add_argument(
        "--project",
        dest="path",
        default=Path("."),
        type=Path,
        help="the project: an .agent file, a folder or an auwgent.yml (default: the current "
        "folder)",
    )
    importing.add_argument("--only", metavar="A,B", help="only these tools (comma-separated names)")
    importing.add_argument("--out", type=Path, metavar="FILE", help="write to FILE, not stdout")
    _add_mcp_config(importing)

    def run_import(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        only = (
            [name.strip() for name in args.only.split(",") if name.strip()] if args.only else None
        )
        from auwgent.mcp.importer import run_import as import_tools

        return import_tools(
            args.path,
            args.server,
            only=only,
            out_file=args.out,
            out=out,
            err=err,
            mcp_config=args.mcp_config,
        )

    importing.set_defaults(run=run_import)
    serving = actions.add_parser(
        "serve",
        help="expose an agent to MCP clients (stdio, or streamable HTTP with --http)",
        description="Serve one agent as an MCP server: a tool `run` (input: string) that runs "
        "it, and one tool per workflow. Progress notifications carry the intents.",
    )
    _add_path(serving)
    serving.add_argument("--agent", required=True, metavar="NAME", help="the agent to serve")
    serving.add_argument(
        "--app",
        required=True,
        metavar="MODULE:ATTR",
        help="a function called with the agent's name that returns its runtime config",
    )
    serving.add_argument(
        "--http",
        type=_positive_int,
        metavar="PORT",
        help="serve streamable HTTP on 127.0.0.1:PORT instead of stdio",
    )

    def run_serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        from auwgent.mcp.serve import serve_command as serve_mcp

        return serve_mcp(args.path, agent=args.agent, app=args.app, port=args.http, err=err)

    serving.set_defaults(run=run_serve)

    def usage(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        parser.print_help(err)
        return EXIT_USAGE

    parser.set_defaults(run=usage)


def _add_fmt(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "fmt",
        help="rewrite .agent files in the canonical layout",
        description="Format .agent files: one canonical layout, comments kept, meaning unchanged.",
    )
    parser.add_argument(
        "paths",
        nargs="*",
        default=[Path(".")],
        type=Path,
        help="files or folders (default: the current folder); a folder means every .agent file "
        "below it, an auwgent.yml the files of its project; `-` alone: standard input to "
        "standard output",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; list the files that would change and exit 1 if there are any",
    )

    def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        from auwgent.fmt import run_fmt

        return run_fmt(args.paths, check=args.check, out=out, err=err)

    parser.set_defaults(run=run)


def _add_lsp(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "lsp",
        help="run the language server (for editors) on standard input and output",
        description="Run the Auwgent language server over stdio (needs the `lsp` extra).",
    )
    # Language clients often pass the transport; stdio is the only one.
    parser.add_argument("--stdio", action="store_true", help="talk over stdio (the default)")

    def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        missing = [m for m in ("pygls", "lsprotocol") if not _installed(m)]
        if missing:
            print(
                f"error: `auwgent lsp` needs {' and '.join(missing)}: pip install 'auwgent[lsp]'",
                file=err,
            )
            return EXIT_USAGE
        from auwgent.lsp.server import serve  # the lsp extra: imported once it is known there

        return serve()

    parser.set_defaults(run=run)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # a module set to None in sys.modules (blocked)
        return False


def _add_path(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        nargs="?",
        default=".",
        type=Path,
        help="an .agent file, a folder, or an auwgent.yml (default: the current folder)",
    )


def _add_jobs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-j",
        "--jobs",
        type=_positive_int,
        default=None,
        metavar="N",
        help="compile a large project in up to N processes (default: one per CPU; 1: no extra "
        "process)",
    )


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


COMMANDS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [
    _add_check,
    _add_generate,
    _add_test,
    _add_eval,
    _add_serve,
    _add_dev,
    _add_mcp,
    _add_fmt,
    _add_lsp,
]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""

    parser = argparse.ArgumentParser(
        prog="auwgent",
        description="Auwgent: compile .agent files into portable IR and typed Python bindings.",
    )
    parser.add_argument("--version", action="version", version=f"auwgent {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in COMMANDS:
        add(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``auwgent`` command and return its exit code. Never raises: argparse's own exits
    (``--help``, ``--version``, usage errors) become return codes too."""
    out, err = sys.stdout, sys.stderr
    arguments = list(argv) if argv is not None else sys.argv[1:]
    path = _plain_check(arguments)
    if path is not None:
        command = "check"
        run: Callable[[], int] = lambda: run_check(path, out=out, err=err)  # noqa: E731
    else:
        parser = build_parser()
        try:
            args = parser.parse_args(arguments)
        except SystemExit as exc:  # argparse's usage errors and --help/--version
            return exc.code if isinstance(exc.code, int) else EXIT_USAGE
        runner: Runner | None = getattr(args, "run", None)
        if runner is None:
            parser.print_help(err)
            return EXIT_USAGE
        command = args.command
        run = lambda: runner(args, out, err)  # noqa: E731
    try:
        code = run()
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 - the last line of defence against tracebacks
        print(f"error: internal error in auwgent ({type(exc).__name__}: {exc})", file=err)
        print("  this is a bug in Auwgent; please report it with the input", file=err)
        return EXIT_INTERNAL
    if argv is None and command == "check":
        _exit_now(code, out, err)
    return code


def _plain_check(arguments: list[str]) -> Path | None:
    """The path of ``check`` or ``check PATH`` without options; None for any other command line.

    The most frequent command line skips argparse: building the parser imports ``argparse``,
    ``gettext`` (which looks for translations on disk) and ``shutil`` (for the terminal width,
    with its compression modules), about 3% of a check of the bench project. Anything else,
    ``--help`` included, goes through the parser as usual.
    """
    if not arguments or arguments[0] != "check" or len(arguments) > 2:
        return None
    if len(arguments) == 1:
        return Path(".")
    path = arguments[1]
    return Path(path) if path and not path.startswith("-") else None


def _exit_now(code: int, out: TextIO, err: TextIO) -> NoReturn:
    """End the process at once, skipping the interpreter's teardown.

    Tearing the interpreter down frees every module and object one by one: about 1.5% of the
    instructions of an ``auwgent check`` of the bench project, for no effect once the process
    ends. Only for a real command line (``argv`` is
    None): a caller of ``main([...])`` keeps its process. Output is flushed first.
    """
    try:
        out.flush()
        err.flush()
    except (BrokenPipeError, ValueError):  # a closed pipe or stream: nothing more to write
        pass
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value
