"""``auwgent mcp import`` and ``auwgent check --mcp``: a project's declarations beside what its
MCP servers really offer.

Both compile the project first (a project with errors is reported and goes no further), then
connect to servers declared in it with the runtime's own connection
(:class:`auwgent.runtime.mcp.McpConnection`: the declaration's ``command`` / ``args`` / ``env``
or ``url``, the SDK's default environment) and list their tools, each server given
``LIST_TIMEOUT`` seconds: at development time a server may first have to be downloaded
(``npx -y ...``), which the run-time default of 10 s does not allow for. ``import``
prints one ``tool`` declaration per tool, or with ``--out FILE`` writes a module exporting them
as a tool group (``export tools <Server>Tools { ... }``) that the project can import; ``check --mcp`` reports every ``@mcp`` tool that no
longer matches its server as ``E2113`` at the declaration, in the format of every other
diagnostic. Plain ``auwgent check`` never starts a server.

A server that needs a secret even to list its tools gets it from ``--mcp-config FILE``: a JSON
file holding what the runtime config's ``"mcp"`` key holds (``env`` and ``headers`` per server),
checked by the same rules.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from auwgent.compiler import (
    SUFFIX,
    CompileResult,
    Diagnostic,
    SourceFile,
    agent_parts,
    did_you_mean,
    error,
    listing,
    lower_mcp_server,
    lower_tool_in,
    parse,
    render_all,
    resolve_modules,
    sort_key,
    use_color,
)
from auwgent.compiler import nodes as n
from auwgent.console import check_project, summary
from auwgent.errors import ConfigError, McpError
from auwgent.mcp.shapes import (
    canonical,
    identifier_for,
    is_identifier,
    params_of,
    returns_of,
    source_field,
    source_string,
    source_type,
)
from auwgent.project import load_project
from auwgent.runtime.mcp import McpConnection, ServerOptions, parse_mcp_options

if TYPE_CHECKING:
    from auwgent.compiler import CompileResult, ModuleGraph

__all__ = ["declaration_text", "module_text", "run_check_mcp", "run_import"]

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2
LIST_TIMEOUT = 60.0
_INSTALL = "pip install 'auwgent[mcp]'"


# --------------------------------------------------------------------------------------------
# The project


class _Project:
    """A compiled project's module graph and its ``mcp`` declarations."""

    def __init__(self, result: CompileResult) -> None:
        self.result = result
        modules = {path: parse(source)[0] for path, source in result.sources.items()}
        self.graph: ModuleGraph = resolve_modules(modules)
        self.servers: dict[str, tuple[str, n.McpDecl]] = {}
        for path, scope in sorted(self.graph.scopes.items()):
            for decl in scope.module.decls:
                if isinstance(decl, n.McpDecl):
                    self.servers.setdefault(decl.name.text, (path, decl))

    def declarations(self) -> dict[str, n.McpDecl]:
        """Every declared server by name."""
        return {name: decl for name, (_, decl) in self.servers.items()}

    def source(self, path: str) -> SourceFile:
        return self.graph.scope(path).module.source

    def mcp_tools(self) -> Iterator[tuple[str, n.ToolDecl, str]]:
        """Every ``@mcp`` tool declaration: its file, itself and the server it names."""
        for path, scope in sorted(self.graph.scopes.items()):
            tools: list[n.ToolDecl] = []
            for decl in scope.module.decls:
                if isinstance(decl, n.ToolGroupDecl):
                    tools.extend(decl.tools)
                elif isinstance(decl, n.AgentDecl):
                    parts = agent_parts(decl)
                    tools.extend([*parts.tools, *(t for w in parts.workflows for t in w.tools)])
            for tool in tools:
                use = n.mcp_of(tool.annotations)
                if use is not None and use.server is not None:
                    yield path, tool, use.server.text

    def server_spec(self, name: str, path: str) -> tuple[str, n.McpDecl] | None:
        """The declaration ``name`` denotes in file ``path`` (imports followed)."""
        symbol = self.graph.scope(path).lookup(name)
        if symbol is None or not isinstance(symbol.decl, n.McpDecl):
            return None
        return symbol.path, symbol.decl


def _compile(path: Path, err: TextIO) -> tuple[_Project | None, int]:
    """The checked project, or ``None`` and the exit code once the problem is reported."""
    if not _sdk_installed():
        print(f"error: MCP servers need the MCP SDK: {_INSTALL}", file=err)
        return None, EXIT_USAGE
    try:
        project = load_project(path)
    except ConfigError as exc:
        print(f"error: {exc}", file=err)
        return None, EXIT_USAGE
    result = check_project(project, jobs=1)
    if not result.ok:
        print(render_all(result.diagnostics, color=use_color(err)), file=err)
        print(f"\nerror: {path} has errors; fix them first", file=err)
        return None, EXIT_ERRORS
    return _Project(result), EXIT_OK


def load_mcp_config(file: Path | None, servers: Mapping[str, n.McpDecl]) -> dict[str, Any]:
    """``--mcp-config FILE``: each declared server's ``ServerOptions`` (``env``, ``headers``),
    listing given ``LIST_TIMEOUT``. Raises ``ConfigError`` naming the file and the key path."""

    value = None
    if file is not None:
        try:
            value = json.loads(file.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"--mcp-config: cannot read {file}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise ConfigError(f"--mcp-config: {file} is not JSON: {exc}") from None
    specs = {name: lower_mcp_server(decl) for name, decl in servers.items()}
    try:
        parsed = parse_mcp_options(value, specs)
    except ConfigError as exc:
        raise ConfigError(f"--mcp-config {file}: {exc}") from None
    return {
        name: ServerOptions(found.env, found.headers, LIST_TIMEOUT)
        for name, found in parsed.items()
    }


def _list_tools(
    servers: Mapping[str, n.McpDecl], options: Mapping[str, Any]
) -> dict[str, list[Any] | str]:
    """Each server's tools (keyed as given), or the message saying why they could not be
    listed (without the server's name). ``options`` are by server name."""

    async def one(decl: n.McpDecl) -> list[Any] | str:
        name = decl.name.text
        connection = McpConnection(name, lower_mcp_server(decl), options[name])
        try:
            return await connection.list_tools()
        except McpError as exc:
            return exc.detail
        finally:
            await connection.aclose()

    async def every() -> list[list[Any] | str]:
        return await asyncio.gather(*(one(decl) for decl in servers.values()))

    return dict(zip(servers, asyncio.run(every()), strict=True))


def _sdk_installed() -> bool:
    return find_spec("mcp") is not None


# --------------------------------------------------------------------------------------------
# auwgent mcp import


def run_import(
    path: Path,
    server: str,
    *,
    only: Sequence[str] | None,
    out_file: Path | None,
    out: TextIO,
    err: TextIO,
    mcp_config: Path | None = None,
) -> int:
    """``auwgent mcp import SERVER [--only a,b] [--out FILE] [--mcp-config FILE]``."""
    project, code = _compile(path, err)
    if project is None:
        return code
    found = project.servers.get(server)
    if found is None:
        known = listing(sorted(project.servers), "`{}`".format) or "none"
        hint = did_you_mean(server, project.servers) or f"the project declares: {known}"
        print(f"error: no `mcp {server} {{ ... }}` is declared in {path}; {hint}", file=err)
        return EXIT_USAGE
    try:
        options = load_mcp_config(mcp_config, project.declarations())
    except ConfigError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_USAGE
    listed = _list_tools({server: found[1]}, options)[server]
    if isinstance(listed, str):
        print(f"error: MCP server {server}: {listed}", file=err)
        return EXIT_USAGE
    if only:
        names = {t.name for t in listed}
        unknown = [name for name in only if name not in names]
        if unknown:
            print(
                f"error: MCP server {server} has no tool {listing(unknown, '`{}`'.format)}; it "
                f"has {listing(sorted(names), '`{}`'.format) or 'none'}",
                file=err,
            )
            return EXIT_USAGE
        listed = [t for t in listed if t.name in only]
    if out_file is None:
        out.write(declaration_text(server, found[0], listed))
        return EXIT_OK
    return _write_module(path, out_file, server, found[0], listed, out, err)


def _write_module(
    path: Path,
    out_file: Path,
    server: str,
    declared_in: str,
    tools: Sequence[Any],
    out: TextIO,
    err: TextIO,
) -> int:
    """``--out FILE``: the module declaring the server's tool group, importing the server from
    the file that declares it (unless that is ``FILE``, which is never overwritten)."""
    server_file = (load_project(path).source_root / declared_in).resolve()
    target = out_file.resolve()
    if target == server_file:
        print(
            f"error: not writing {out_file}: it declares `mcp {server}`, which writing the "
            "tools there would erase; write them to a file of their own",
            file=err,
        )
        return EXIT_USAGE
    spec = os.path.relpath(server_file, target.parent).replace(os.sep, "/")
    spec = spec.removesuffix(SUFFIX)
    text, count = module_text(
        server, declared_in, spec if spec.startswith("../") else "./" + spec, tools
    )
    try:
        out_file.parent.mkdir(parents=True, exist_ok=True)
        out_file.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"error: cannot write {out_file}: {exc.strerror or exc}", file=err)
        return EXIT_USAGE
    group = group_name(server)
    print(
        f"wrote {count} tool{'s' if count != 1 else ''} of {server} to {out_file} as tool group "
        f"`{group}`: import it and name it in an agent's `tools {{ {group} }}`",
        file=out,
    )
    return EXIT_OK


def group_name(server: str) -> str:
    """The name of the tool group ``--out`` writes for ``server``."""
    return f"{server}Tools"


def declaration_text(server: str, declared_in: str, tools: Sequence[Any]) -> str:
    """The ``tool`` declarations for ``tools`` (the SDK's ``Tool`` objects) of ``server``, to
    paste into an agent, a helper or a workflow."""
    lines = [
        f"// The tools of MCP server {server} (declared in {declared_in}), written by",
        "// `auwgent mcp import`: paste them into an agent, a helper or a workflow.",
    ]
    lines += [line if line.startswith("//") else f"tool {line}" for line in _members(server, tools)]
    return "\n".join(lines) + "\n"


def module_text(server: str, declared_in: str, spec: str, tools: Sequence[Any]) -> tuple[str, int]:
    """A module exporting ``tools`` of ``server`` as the tool group ``<server>Tools``, importing
    the server from ``spec``; and how many tools it declares."""
    group = group_name(server)
    members = _members(server, tools)
    lines = [
        f"// The tools of MCP server {server} (declared in {declared_in}), written by",
        f"// `auwgent mcp import {server} --out`. An agent or helper uses them by importing",
        f"// {group} and naming it in its `tools {{ }}` block.",
        f'import {{ {server} }} from "{spec}"',
        "",
        f"export tools {group} {{",
        *(f"    {line}" for line in members),
        "}",
    ]
    return "\n".join(lines) + "\n", sum(1 for line in members if not line.startswith("//"))


def _members(server: str, tools: Sequence[Any]) -> list[str]:
    """One signature (without ``tool``) per tool, or a comment saying why it is left out."""
    lines: list[str] = []
    # A name that is not an identifier is declared under one derived from it, the server's
    # own name in @mcp; the server's identifiers come first so that they keep their names.
    taken = {tool.name for tool in tools if is_identifier(tool.name)}
    for tool in tools:
        local = tool.name
        if not is_identifier(local):
            local = identifier_for(local)
            if not local or local in taken:
                why = f"`{local}` is taken" if local else "no identifier can be made of it"
                lines.append(f"// left out `{tool.name}`: its name is not an identifier ({why})")
                continue
            taken.add(local)
        declaration, problem = _declaration(server, tool, local)
        lines.append(declaration if problem is None else f"// left out `{tool.name}`: {problem}")
    return lines


def _declaration(server: str, tool: Any, local: str) -> tuple[str, str | None]:
    params = params_of(tool.input_schema)
    if params is None:
        return "", "a parameter has a type the language cannot express"
    for param in params:
        if not is_identifier(param["name"]):
            return "", f"parameter {param['name']!r} is not an identifier the language accepts"
    returns = returns_of(tool.output_schema) or {"kind": "string"}
    signature = f"{local}({', '.join(source_field(p) for p in params)}): "
    signature += source_type(returns)
    if tool.description:
        signature += f" @desc {source_string(tool.description)}"
    remote = "" if local == tool.name else f", {source_string(tool.name)}"
    return f"{signature} @mcp({server}{remote})", None


# --------------------------------------------------------------------------------------------
# auwgent check --mcp


def run_check_mcp(path: Path, *, out: TextIO, err: TextIO, mcp_config: Path | None = None) -> int:
    """``auwgent check --mcp [--mcp-config FILE]``: the project's diagnostics plus its ``@mcp``
    tools' drift."""
    started = time.perf_counter()
    project, code = _compile(path, err)
    if project is None:
        return code
    try:
        options = load_mcp_config(mcp_config, project.declarations())
    except ConfigError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_USAGE
    drift = drift_diagnostics(project, options)
    result = project.result
    diagnostics = tuple(sorted((*result.diagnostics, *drift), key=sort_key))
    report = CompileResult(result.documents, diagnostics, result.files, result.agents)
    if diagnostics:
        print(render_all(diagnostics, color=use_color(err)), file=err)
        print(file=err)
    print(summary(report, (time.perf_counter() - started) * 1000), file=out)
    return EXIT_OK if report.ok else EXIT_ERRORS


def drift_diagnostics(project: _Project, options: Mapping[str, Any]) -> list[Diagnostic]:
    """E2113 for every ``@mcp`` tool that its server contradicts (and every unreachable server)."""
    uses = list(project.mcp_tools())
    by_key: dict[str, n.McpDecl] = {}  # "file::name" -> the declaration, each server once
    for path, _, name in uses:
        found = project.server_spec(name, path)
        if found is not None:
            by_key.setdefault(f"{found[0]}::{name}", found[1])
    listed = _list_tools(by_key, options)
    diags: list[Diagnostic] = []
    for key, tools in listed.items():
        if isinstance(tools, str):
            where = key.split("::")[0]
            decl = by_key[key]
            diags.append(
                error(
                    "E2113",
                    f"cannot list the tools of MCP server `{decl.name.text}`: {tools}",
                    project.source(where),
                    decl.name.span,
                    help="start it by hand with the declared command (or open the url) to see why",
                )
            )
    for path, tool, name in uses:
        found = project.server_spec(name, path)
        if found is None:
            continue
        tools = listed[f"{found[0]}::{name}"]
        if not isinstance(tools, str):
            diags.extend(_tool_drift(project, path, tool, name, tools))
    return diags


def _tool_drift(
    project: _Project, path: str, tool: n.ToolDecl, server: str, offered: list[Any]
) -> Iterator[Diagnostic]:
    source = project.source(path)
    use = n.mcp_of(tool.annotations)
    name = use.remote.value if use is not None and use.remote is not None else tool.name.text
    remote = next((t for t in offered if t.name == name), None)
    if remote is None:
        names = sorted(t.name for t in offered)
        yield error(
            "E2113",
            f"MCP server `{server}` has no tool `{name}` (any more)",
            source,
            tool.name.span,
            help=did_you_mean(name, names)
            or f"it has {listing(names, '`{}`'.format) or 'no tools'}; "
            f"`auwgent mcp import {server}` writes their declarations",
        )
        return
    declared, types = lower_tool_in(project.graph, path, tool)
    params = params_of(remote.input_schema)
    if params is not None:
        yield from _param_drift(source, tool, declared, types, server, params)
    returns = returns_of(remote.output_schema)
    if returns is not None and tool.returns is not None:
        if canonical(declared["returns"], types) != canonical(returns, {}):
            yield error(
                "E2113",
                f"`{name}` returns {source_type(returns)} on MCP server `{server}`",
                source,
                tool.returns.span,
                help=f"declare `: {source_type(returns)}`",
            )


def _param_drift(
    source: SourceFile,
    tool: n.ToolDecl,
    declared: Mapping[str, Any],
    types: Mapping[str, Any],
    server: str,
    params: list[dict[str, Any]],
) -> Iterator[Diagnostic]:
    name = tool.name.text
    remote = {p["name"]: p for p in params}
    spans = {p.name.text: p.span for p in tool.params}
    mine = {p["name"]: p for p in declared["params"]}
    for param in params:
        if param["optional"]:
            continue
        if param["name"] not in mine or mine[param["name"]]["optional"]:
            yield error(
                "E2113",
                f"MCP server `{server}` requires parameter `{param['name']}` of `{name}`, which "
                "the declaration " + ("makes optional" if param["name"] in mine else "lacks"),
                source,
                spans.get(param["name"], tool.name.span),
                help=f"declare `{source_field({**param, 'description': None})}`",
            )
    for pname, param in mine.items():
        theirs = remote.get(pname)
        if theirs is None:
            yield error(
                "E2113",
                f"MCP server `{server}` no longer takes parameter `{pname}` of `{name}`",
                source,
                spans[pname],
                help=did_you_mean(pname, remote)
                or f"it takes {listing(list(remote), '`{}`'.format) or 'no parameters'}",
            )
        elif canonical(param["type"], types) != canonical(theirs["type"], {}):
            yield error(
                "E2113",
                f"parameter `{pname}` of `{name}` is {source_type(theirs['type'])} on MCP "
                f"server `{server}`",
                source,
                spans[pname],
                help=f"declare `{source_field({**theirs, 'description': None})}`",
            )
