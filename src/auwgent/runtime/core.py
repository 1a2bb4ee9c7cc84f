"""What every run of an agent reads and nothing changes: the IR views and the contracts
(:class:`AgentCore`).

The core answers the questions a run asks about the IR (which config an agent runs with, its
codec, its loop limit, its contract, its system prompt) and keeps the answers that are the
same for every run. Providers, hooks and stores are :mod:`.services`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from auwgent.errors import ConfigError
from auwgent.ir.model import Agent as IRAgent
from auwgent.ir.model import Document as IRDocument
from auwgent.runtime import code_switch
from auwgent.runtime.clock import now_line
from auwgent.runtime.config import DEFAULT_MAX_TOOL_LOOPS, RuntimeOptions
from auwgent.runtime.context import ContextSchema
from auwgent.runtime.evaluate import prompts
from auwgent.runtime.intents import BUILTIN_INTENTS, COMPLETE_SPEC
from auwgent.runtime.invocation import Invocation, helper_params
from auwgent.runtime.protocol import codec_for
from auwgent.runtime.protocol.contract import CallableSpec, Codec, Contract
from auwgent.runtime.providers.base import FunctionSpec
from auwgent.runtime.tools import ToolRegistry, declared_tools

if TYPE_CHECKING:
    from auwgent.ir.model import Example as IRExample
    from auwgent.ir.model import Intent as IRIntent
else:
    IRExample = IRIntent = Mapping[str, Any]

__all__ = ["AgentCore", "RoutedTools"]

#: The implementations of the tools served by MCP servers (``None``: the agent has none).
RoutedTools = Mapping[str, Callable[..., Awaitable[Any]]] | None


class AgentCore:
    """Everything a run needs that does not change between runs (checked at construction)."""

    def __init__(self, doc: IRDocument, options: RuntimeOptions, routed: RoutedTools) -> None:
        """``routed``: the implementations of the tools that live on MCP servers, if any."""
        self.doc = doc
        self.root: str = doc["root"]
        self.options = options
        self.context_schema = ContextSchema(doc)
        self.registry = ToolRegistry(options.tools, declared_tools(doc), routed)
        if code_switch.wanted(options, doc):
            code_switch.require()
        self.intent_names = list(BUILTIN_INTENTS) + [
            i["name"] for a in doc["agents"].values() for i in a["intents"]
        ]
        self._contracts: dict[Any, Contract] = {}
        self._sections: dict[Any, str] = {}
        # Per (agent, config): the context keys its prompt reads, and the prompt itself when
        # it reads none (then it is the same for every run).
        self._prompts: dict[Any, tuple[set[str], str | None]] = {}
        self._codecs: dict[str, Codec] = {}
        self._request_parts: dict[Any, tuple[tuple[FunctionSpec, ...], Any]] = {}

    # -- choices per agent -------------------------------------------------------------------

    def config_for(self, agent: IRAgent, selected: str | Mapping[str, str] | None) -> str:
        """The config ``agent`` runs with: the selected name if it has one, else ``default``."""
        if isinstance(selected, Mapping):
            selected = selected.get(agent["name"])
        if selected is not None and selected in agent["configs"]:
            return selected
        return "default"

    def max_loops(self, agent: IRAgent, config_name: str) -> int:
        if self.options.max_tool_loops is not None:
            return self.options.max_tool_loops
        value = agent["configs"][config_name].get("max_tool_loops")
        return int(value) if value else DEFAULT_MAX_TOOL_LOOPS

    def codec(self, agent: IRAgent, selected: str | Mapping[str, str] | None) -> Codec:
        cfg = agent["configs"][self.config_for(agent, selected)]
        name = self.options.protocol or cfg.get("protocol") or "blocks"
        codec = self._codecs.get(name)
        if codec is None:
            codec = self._codecs[name] = codec_for(name)
        return codec

    # -- what the model sees -----------------------------------------------------------------

    def contract(self, inv: Invocation) -> Contract:
        key = (
            inv.name,
            inv.config_name,
            tuple(t["name"] for t in inv.tools),
            inv.handoff == "user",
        )
        found = self._contracts.get(key)
        if found is None:
            found = self._contracts[key] = self._build_contract(inv)
        return found

    def _build_contract(self, inv: Invocation) -> Contract:
        agent, types = inv.agent, self.doc["types"]
        specs = self._callable_specs(inv)
        intents: tuple[IRIntent, ...] = tuple(agent["intents"])
        if inv.handoff == "user":
            intents += (COMPLETE_SPEC,)
        contract = Contract(
            agent=agent["name"],
            callables=tuple(specs),
            intents=intents,
            output=agent["output"],
            types=types,
            examples=tuple(_declared_order(e, specs) for e in agent.get("examples", ())),
        )
        if code_switch.enabled(self.options, agent, inv.config_name):
            from auwgent.runtime.code_mode import code_contract  # the run's machinery

            return code_contract(contract)  # one callable: execute_code
        return contract

    def _callable_specs(self, inv: Invocation) -> list[CallableSpec]:
        """What ``inv``'s model may call: its tools, its agent's workflows and helpers."""
        agent, types = inv.agent, self.doc["types"]
        specs = [
            CallableSpec(
                "tool",
                t["name"],
                t.get("description") or "",
                tuple(t["params"]),
                t["returns"],
                # (the built-in `recall` of runtime/context_budget.py runs without the registry)
                configured=self.registry.has(t["name"]) or t.get("builtin") is True,
                examples=tuple(t.get("examples", ())),
                approval=t.get("approval"),
            )
            for t in inv.tools
        ]
        specs += [
            CallableSpec(
                "workflow",
                w["name"],
                w.get("description") or "",
                tuple(w["params"]),
                w["returns"],
                approval=w.get("approval"),
            )
            for w in agent["workflows"]
        ]
        for use in agent["helpers"]:
            helper = self.doc["agents"][use["name"]]
            specs.append(
                CallableSpec(
                    "helper",
                    helper["name"],
                    helper.get("description") or "",
                    helper_params(helper, types),
                    helper["output"],
                    approval=use.get("approval"),
                )
            )
        return specs

    def request_parts(
        self, codec: Codec, contract: Contract
    ) -> tuple[tuple[FunctionSpec, ...], Mapping[str, Any] | None]:
        """The function specs and response schema of a contract, made once per codec.

        Contracts are immutable and kept by ``contract()`` for the agent's lifetime, so their
        JSON schemas need not be rebuilt for every model call.
        """
        key = (id(contract), codec.name)
        found = self._request_parts.get(key)
        if found is None:
            found = (codec.functions(contract), codec.response_schema(contract))
            self._request_parts[key] = found
        return found

    def system_prompt(
        self,
        inv: Invocation,
        codec: Codec,
        contract: Contract,
        context: Mapping[str, Any],
        *,
        persona: str | None = None,
        memory: str = "",
    ) -> str:
        """The system prompt, stable to dynamic (docs/prompts.md, "The order of a request"):

        the config prompt and the protocol section, the active persona (when ``inv``'s agent
        lists it), the Memory section, the context section, then the date-and-time line.
        """
        rkey = (inv.name, inv.config_name)
        found = self._prompts.get(rkey)
        if found is None:
            cfg = inv.agent["configs"][inv.config_name]
            referenced = prompts.referenced_context_keys(self.doc, inv.agent, cfg)
            # A prompt that reads no context renders the same for every run: rendered once.
            fixed = None if referenced else prompts.render_prompt(self.doc, inv.agent, cfg, {})
            found = self._prompts[rkey] = (referenced, fixed)
        referenced, rendered = found
        if rendered is None:
            cfg = inv.agent["configs"][inv.config_name]
            rendered = prompts.render_prompt(self.doc, inv.agent, cfg, context)
        skey = (id(contract), codec.name)
        section = self._sections.get(skey)
        if section is None:
            section = self._sections[skey] = codec.system_section(contract)
        options = self.options
        parts = [
            rendered,
            section,
            self.persona_section(inv.agent, persona, context) if persona is not None else "",
            memory,
            self.context_schema.section(context, referenced) if context else "",
            now_line(options.timezone, options.clock),
        ]
        return "\n\n".join(filter(None, parts))

    def persona_section(
        self, agent: IRAgent, persona: str | None, context: Mapping[str, Any]
    ) -> str:
        """The "Active persona" section, or '' when none is active or ``agent`` lacks it."""
        if persona is None or persona not in agent.get("personas", ()):
            return ""
        body = prompts.render_body(
            self.doc["personas"][persona]["body"],
            {},
            context,
            schema_text=prompts.schema_text_for(self.doc, agent),
        )
        return f"Active persona: {persona}\n{body}" if body.strip() else ""

    def check_persona(self, name: Any, where: str) -> str | None:
        """``name`` if the IR declares a persona of that name (``None`` clears); else an error."""
        if name is None:
            return None
        valid = list(self.doc.get("personas", {}))
        if name not in valid:
            listed = ", ".join(valid) if valid else "none (this agent lists no personas)"
            raise ConfigError(f"{where}: unknown persona {name!r}; valid personas: {listed}")
        return str(name)


def _declared_order(example: IRExample, specs: list[CallableSpec]) -> IRExample:
    """An ``@example`` with its arguments in the target's parameter order.

    The IR stores objects with sorted keys (for a stable hash), so ``@example(location =
    "Kumasi", days = 3)`` would otherwise reach the model as ``days`` first.
    """
    args = example.get("args")
    kind = "workflow" if example.get("kind") == "workflow" else "tool"
    spec = next((s for s in specs if s.kind == kind and s.name == example.get("target")), None)
    if not isinstance(args, Mapping) or spec is None:
        return example
    order = {field["name"]: i for i, field in enumerate(spec.params)}
    ordered = dict(sorted(args.items(), key=lambda item: order.get(item[0], len(order))))
    return {**example, "args": ordered}
