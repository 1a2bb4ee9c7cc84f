"""A deliberate mistake no type checker can see: a misspelt tool method. The generated base
class refuses it when the class is defined, suggesting the declared name."""

from generated.weather_types import AuwgentTools


class Tools(AuwgentTools):
    async def get_wether(self, location: str) -> str:
        return "sunny"
