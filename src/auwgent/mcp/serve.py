"""``auwgent mcp serve``: one agent as an MCP server, over stdio or streamable HTTP.

The server offers exactly these tools:

- ``run`` (one string parameter ``input``): runs the agent on ``input`` and answers its final
  answer; a structured output is the result's structured content (and its JSON text);
- one tool per workflow of the agent, named like it, taking its parameters: the call goes
  the way a model's call of that workflow goes (the ``workflow_call`` intent and its handlers
  and middleware, argument validation, the approval gate, the steps' own checks).

Scoped tools and plain tools are never offered: the agent's contract decides what its model may
call, and an MCP client is not its model. While a call runs, every final intent is sent as a
progress notification (when the client asked for progress) whose message is the intent as JSON,
``{"intent": name, "agent": agent_name, "value": payload}``. A run that ends in an ``error``
intent, a denied or skipped workflow, or invalid arguments answer with ``isError``.

The application's code comes from ``--app module:attr`` as for ``auwgent serve``: a function
called with the agent's name that returns its runtime config.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from auwgent.compiler import compile_project, render_all, use_color
from auwgent.console import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, display_path
from auwgent.errors import AuwgentError, ConfigError
from auwgent.project import load_project
from auwgent.runtime.agent import agent_from_ir
from auwgent.runtime.engine import Run
from auwgent.runtime.evaluate.schema import object_type, to_json_schema
from auwgent.runtime.intents import IntentEvent
from auwgent.runtime.invocation import Invocation, effective_tools
from auwgent.runtime.parts import INPUT_SCHEMA, InputError, Part, check_input
from auwgent.runtime.protocol.contract import FinalEvent
from auwgent.runtime.tools import result_text
from auwgent.serve import ServeError, load_factory

if TYPE_CHECKING:
    from auwgent.ir.model import Agent as IRAgent

__all__ = ["McpAgentServer", "serve_command"]

RUN_TOOL = "run"


class McpAgentServer:
    """What the MCP server offers and does for one agent (independent of the transport)."""

    def __init__(self, agent: Any, doc: Mapping[str, Any]) -> None:
        self.agent = agent
        self.doc = doc
        self.root: IRAgent = doc["agents"][doc["root"]]
        names = [w["name"] for w in self.root["workflows"]]
        if RUN_TOOL in names:
            raise AuwgentError(
                f"workflow `{RUN_TOOL}` of {doc['root']} has the name of the tool that runs the "
                "agent; rename the workflow to serve it over MCP"
            )

    def tools(self) -> list[Any]:
        """The ``run`` tool, then one tool per workflow (the SDK's ``Tool`` objects)."""
        from mcp.types import Tool

        types = self.doc["types"]
        description = self.root.get("description") or f"Run the agent {self.doc['root']}."
        run_input = {
            "type": "object",
            "properties": {
                "input": {
                    **INPUT_SCHEMA,
                    "description": "what to ask the agent: text, or a list of text, image "
                    "and file parts",
                }
            },
            "required": ["input"],
        }
        tools = [Tool(name=RUN_TOOL, description=description, input_schema=run_input)]
        for workflow in self.root["workflows"]:
            params = object_type(workflow["params"])
            tools.append(
                Tool(
                    name=workflow["name"],
                    description=workflow.get("description") or None,
                    input_schema=to_json_schema(params, types),
                )
            )
        return tools

    async def call(self, name: str, arguments: Mapping[str, Any], progress: Any) -> Any:
        """Answer a ``tools/call``: the SDK's ``CallToolResult``.

        ``progress(number, message)`` sends one progress notification.
        """
        if name == RUN_TOOL:
            if set(arguments) != {"input"}:
                return _result("run takes one argument, input", error=True)
            try:
                given = check_input(arguments["input"], "input")
            except InputError as exc:
                return _result(str(exc), error=True)
            return await self._run(given, progress)
        if not any(w["name"] == name for w in self.root["workflows"]):
            return _result(f"unknown tool {name!r}", error=True)
        return await self._workflow(name, dict(arguments), progress)

    async def _run(self, text: str | list[Part], progress: Any) -> Any:
        answer: Any = None
        failure: str | None = None
        count = 0
        root = self.doc["root"]
        async for event in self.agent.stream(text):
            if event.partial:
                continue
            count += 1
            await progress(count, _intent_message(event.name, event.agent_name, event.value))
            if event.agent_name != root and event.name != "error":
                continue
            if event.name == "response_text":
                answer = event.value.get("text", "")
            elif event.name == "response_schema":
                answer = event.value.get("response")
            elif event.name == "error":
                failure = str(event.value.get("message") or event.value)
        if failure is not None and answer is None:
            return _result(failure, error=True)
        return _result(answer if answer is not None else "")

    async def _workflow(self, name: str, args: dict[str, Any], progress: Any) -> Any:
        core = self.agent.core  # the agent's checked core: this call takes its call path
        sink: asyncio.Queue[IntentEvent | None] = asyncio.Queue()
        run = Run(
            core,
            self.agent.services,
            context=dict(self.agent.context),
            config=self.agent.config_name,
            conversation_id=None,
            sink=sink,
        )
        invocation = Invocation(
            agent=self.root,
            config_name=core.config_for(self.root, self.agent.config_name),
            history=[],
            tools=effective_tools(self.root, "none", ()),
        )
        event = FinalEvent("workflow_call", name, 0, {"type": name, "args": args}, "")
        call = asyncio.ensure_future(run.calls.call(invocation, core.contract(invocation), event))
        call.add_done_callback(lambda _: sink.put_nowait(None))
        value: Any = None
        count = 0
        while (item := await sink.get()) is not None:
            if item.partial:
                continue
            count += 1
            await progress(count, _intent_message(item.name, item.agent_name, item.value))
            if item.name == "workflow_result" and item.value.get("name") == name:
                value = item.value.get("result")
        outcome = await call
        if outcome.status == "ok":
            return _result(value)
        if outcome.status == "skipped":
            return _result(f"workflow {name} was skipped by the application", error=True)
        if outcome.status == "pending":
            return _result(f"workflow {name} awaits an approval this server cannot wait for", True)
        return _result(outcome.error or f"workflow {name} failed", error=True)


def _intent_message(name: str, agent: str, value: Any) -> str:
    return json.dumps(
        {"intent": name, "agent": agent, "value": value}, ensure_ascii=False, default=str
    )


def _result(value: Any, error: bool = False) -> Any:
    from mcp.types import CallToolResult, TextContent

    structured = value if isinstance(value, dict) and not error else None
    return CallToolResult(
        content=[TextContent(type="text", text=result_text(value))],
        structured_content=structured,
        is_error=error,
    )


# --------------------------------------------------------------------------------------------
# The command


def lowlevel_server(served: McpAgentServer, name: str) -> Any:
    """The SDK's low-level ``Server`` answering ``tools/list`` and ``tools/call``."""
    from mcp.server import Server
    from mcp.types import ListToolsResult

    async def list_tools(ctx: Any, params: Any) -> Any:
        return ListToolsResult(tools=served.tools())

    async def call_tool(ctx: Any, params: Any) -> Any:
        async def progress(number: int, message: str) -> None:
            await ctx.session.report_progress(number, None, message)

        return await served.call(params.name, params.arguments or {}, progress)

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


def serve_command(path: Path, *, agent: str, app: str, port: int | None, err: TextIO) -> int:
    """``auwgent mcp serve [path] --agent NAME --app module:attr [--http PORT]``."""

    if find_spec("mcp") is None:
        print("error: auwgent mcp serve needs the MCP SDK: pip install 'auwgent[mcp]'", file=err)
        return EXIT_USAGE
    try:
        project = load_project(path)
        factory = load_factory(app)
    except (ConfigError, ServeError) as exc:
        print(f"error: {exc}", file=err)
        return EXIT_USAGE
    result = compile_project(project.files, project.source_root, display=display_path)
    if not result.ok:
        print(render_all(result.diagnostics, color=use_color(err)), file=err)
        return EXIT_ERRORS
    docs = {doc["root"]: doc for doc in result.documents.values()}
    doc = docs.get(agent)
    if doc is None:
        print(f"error: --agent: no agent {agent!r}; the project has {', '.join(sorted(docs))}",
              file=err)  # fmt: skip
        return EXIT_USAGE
    try:
        config = factory(agent)
        if not isinstance(config, Mapping):
            raise ConfigError(f"--app: the config for {agent} must be a dict, got {config!r}")
        served = McpAgentServer(agent_from_ir(doc, config), doc)
    except AuwgentError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_USAGE
    server = lowlevel_server(served, f"auwgent-{agent}")
    if port is None:
        asyncio.run(_stdio(server, served))
    else:
        _http(server, port, err)
    return EXIT_OK


async def _stdio(server: Any, served: McpAgentServer) -> None:
    from mcp.server.stdio import stdio_server

    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await served.agent.aclose()


def _http(server: Any, port: int, err: TextIO) -> None:
    import uvicorn

    application = server.streamable_http_app(host="127.0.0.1")
    print(f"auwgent mcp serve: http://127.0.0.1:{port}/mcp", file=err)
    err.flush()
    uvicorn.run(application, host="127.0.0.1", port=port, log_level="warning")
