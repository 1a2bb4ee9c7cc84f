"""Deliberate mistakes that mypy --strict must report: one per line marked ``# E: <text>``.

The test runs mypy over this file with the rest of the sample application and checks that the
marked lines, and only those, get an error containing the text.
"""

from typing import Any

from generated.extraction_types import AuwgentBaseIntentHandler, ResponseSchemaIntent
from generated.helpers_types import AuwgentBaseIntentHandler as HelpersHandler
from generated.helpers_types import IntentControl, ToolCallIntent
from generated.main_types import auwgent as main_agent
from generated.middleware_types import AuwgentMiddleware, AuwgentSession, MiddlewareContext
from generated.weather_types import AuwgentTools
from generated.workflows_types import auwgent as workflows_agent


class Tools(AuwgentTools):
    async def get_weather(self, city: str) -> str:  # E: Signature of "get_weather" incompatible
        return "sunny"

    async def get_forecast(self, location: str, days: str) -> str:  # E: Signature of "get_forecast" incompatible
        return "rain"

    async def get_humidity(self, location: str) -> list[str]:  # E: Signature of "get_humidity" incompatible
        return []


def wrong_config() -> None:
    main_agent({"context": {"name": "Ama", "is_vip": "yes"}})  # E: TypedDict item "is_vip" has type "bool"
    main_agent({"context": {"name": "Ama"}})  # E: Missing key "is_vip"
    main_agent({"apiKeys": {"openaiApiKey": "k"}})  # E: Extra key "openaiApiKey"
    workflows_agent({"config": "Strictt"})  # E: Literal['Strictt']
    workflows_agent({"tools": {"get_user": 3}})  # E: Dict entry 0 has incompatible type


def wrong_registration() -> None:
    agent = main_agent({"context": {"name": "Ama", "is_vip": True}})
    agent.on_intent(Tools)  # E: Argument 1 to "on_intent"
    agent.on_approval(lambda request: request["nme"] == "x")  # E: has no key "nme"


class Handler(AuwgentBaseIntentHandler):
    async def response_schema(self, intent: ResponseSchemaIntent, agent_name: str) -> None:
        print(intent["response"]["nmae"])  # E: has no key "nmae"

    async def error(self, intent: Any, agent_name: int) -> None:  # E: Argument 2 of "error" is incompatible
        pass


class Scoped(AuwgentMiddleware):
    name = "scoped"
    target = "Reseacher"  # E: Literal['Reseacher']

    async def onRunStart(self, session: AuwgentSession, ctx: MiddlewareContext) -> str:  # E: Return type "Coroutine[Any, Any, str]" of "onRunStart"
        return "session"


class Guard(HelpersHandler):
    async def tool_call(self, intent: ToolCallIntent, agent_name: str) -> IntentControl | None:
        if intent["type"] == "db_query_user":  # E: Non-overlapping equality check
            return {"skip": True}
        return {"skipp": True}  # E: Incompatible return value type
