"""``auwgent dev [PATH]``: compile the project, watch it, and serve the dev console.

The command generates the project as ``auwgent generate --watch`` does (a thread watches the
sources and regenerates on every change), serves its agents and the console on a loopback
address (:class:`auwgent.dev.server.DevServer`, Starlette under uvicorn) and opens the
console in the browser. See ``docs/dev.md``.
"""

from __future__ import annotations

import json
import socket
import threading
import webbrowser
from pathlib import Path
from typing import Any, TextIO

from auwgent.compiler import render_all
from auwgent.dev.server import DevServer
from auwgent.generate import GenerateResult, watch

__all__ = ["DevServer", "dev_command", "load_docs"]

#: The port ``auwgent dev`` listens on unless ``--port`` says otherwise (0: any free one).
DEFAULT_PORT = 4747


def load_docs(outputs: Any) -> dict[str, dict[str, Any]]:
    """Agent name → IR document, read from the ``.agent.json`` files a generation wrote."""
    docs = {}
    for path in outputs:
        if str(path).endswith(".agent.json"):
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
            docs[doc["root"]] = doc
    return docs


def dev_command(
    path: Path,
    *,
    app: str | None,
    host: str,
    port: int,
    open_browser: bool,
    offline: bool,
    out: TextIO,
    err: TextIO,
) -> int:
    """``auwgent dev``: returns the exit code once the server stops (0 after Ctrl-C, as
    ``auwgent generate --watch``)."""
    from auwgent.console import EXIT_OK, EXIT_USAGE
    from auwgent.errors import ConfigError
    from auwgent.project import load_project
    from auwgent.serve import ServeError, load_factory
    from auwgent.serve_security import is_loopback

    try:
        import starlette  # noqa: F401
        import uvicorn
    except ImportError:
        print('error: auwgent dev needs the console extra: pip install "auwgent[console]"',
              file=err)  # fmt: skip
        return EXIT_USAGE
    if not is_loopback(host):
        print(f"error: --host {host}: auwgent dev serves a loopback address only "
              "(127.0.0.1, ::1, localhost); use auwgent serve to serve others", file=err)  # fmt: skip
        return EXIT_USAGE
    try:
        project = load_project(path)
        factory = load_factory(app) if app else None
    except (ConfigError, ServeError) as exc:
        print(f"error: {exc}", file=err)
        return EXIT_USAGE
    try:
        listener = socket.create_server((host, port))
    except OSError as exc:
        print(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}", file=err)
        return EXIT_USAGE
    bound = listener.getsockname()[1]
    server = DevServer(project.root, factory, host=host, port=bound, offline=offline)
    stop = threading.Event()
    watcher: threading.Thread | None = None
    try:  # Ctrl-C at any point from here on stops it cleanly (uvicorn raises it again too)
        watcher = _start_watching(path, server, stop, out, err)
        url = f"http://{'[::1]' if host == '::1' else host}:{bound}/"
        print(f"auwgent dev: the console is on {url} (Ctrl-C to stop)", file=out)
        out.flush()
        if open_browser:
            webbrowser.open(url)
        config = uvicorn.Config(server, log_level="warning", timeout_graceful_shutdown=5)
        uvicorn.Server(config).run(sockets=[listener])
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        if watcher is not None:
            watcher.join(timeout=10)
        listener.close()
    return EXIT_OK


def _start_watching(
    path: Path, server: DevServer, stop: threading.Event, out: TextIO, err: TextIO
) -> threading.Thread:
    """Generate and watch in a thread; each generation reaches ``server``. Returns once the
    first generation is in (so the server starts with the project's agents)."""
    first = threading.Event()

    def cycle(result: GenerateResult) -> None:
        problems = [*result.errors]
        if result.diagnostics:
            problems.append(render_all(result.diagnostics, color=False))
        server.compiled(load_docs(result.outputs) if result.ok else None, problems)
        first.set()

    def run() -> None:
        try:
            watch(path, out=out, err=err, stop_event=stop, on_cycle=cycle)
        finally:
            first.set()

    thread = threading.Thread(target=run, name="auwgent-dev-watch", daemon=True)
    thread.start()
    first.wait()
    return thread
