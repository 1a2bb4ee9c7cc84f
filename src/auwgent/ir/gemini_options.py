"""Where each Gemini option goes in a ``generateContent`` request, and which ones exist.

One table, read by the adapter (to place options) and by the compiler (``auwgent check``
rejects an option the Gemini API does not accept, E2077). Names are the REST API's
lowerCamelCase; the manual writes them in snake_case, and both spellings are accepted.

The lists follow the Gemini Developer API's ``GenerateContentRequest``: the fields the
official SDK (google-genai) sends at the top level, those it sends inside
``generationConfig``, and the Vertex-only ones it refuses for this API. This module imports
nothing, and lives with the IR contract because the compiler and the runtime both read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "ADAPTER_OWNED",
    "EMBEDDING",
    "GENERATION_CONFIG",
    "MESSAGE_VALUED",
    "REQUEST_LEVEL",
    "VERTEX_ONLY",
    "camel",
    "embedding_options",
    "option_problem",
    "split_options",
]

# Top-level fields of the request body.
REQUEST_LEVEL = frozenset(
    {
        "safetySettings",
        "toolConfig",
        "cachedContent",
        "labels",
        "serviceTier",
        "store",
        "continuationToken",
    }
)

# Fields of ``generationConfig``.
GENERATION_CONFIG = frozenset(
    {
        "temperature",
        "topP",
        "topK",
        "candidateCount",
        "maxOutputTokens",
        "stopSequences",
        "responseLogprobs",
        "logprobs",
        "presencePenalty",
        "frequencyPenalty",
        "seed",
        "responseMimeType",
        "responseSchema",
        "responseJsonSchema",
        "responseModalities",
        "mediaResolution",
        "speechConfig",
        "thinkingConfig",
        "imageConfig",
        "enableEnhancedCivicAnswers",
        "audioTranscriptionConfig",
    }
)

# Fields of each request of ``batchEmbedContents``: the options of an embedding model.
EMBEDDING = frozenset({"taskType", "title", "outputDimensionality"})

# Fields the adapter fills from the agent itself (its prompt, history and native tools).
ADAPTER_OWNED = frozenset({"contents", "systemInstruction", "tools"})

# Options of Vertex AI's Gemini that the Gemini Developer API refuses.
VERTEX_ONLY = frozenset(
    {
        "routingConfig",
        "modelSelectionConfig",
        "audioTimestamp",
        "modelArmorConfig",
        "generationOutputConfig",
        "autoTruncate",
        "mimeType",
        "documentOcr",
    }
)

# Other APIs' names for Gemini options (OpenAI's, the manual's shorthand): the did-you-mean of
# an unknown key, which spelling alone would not find.
ALIASES = {
    "stop": "stopSequences",
    "safety": "safetySettings",
    "maxTokens": "maxOutputTokens",
    "n": "candidateCount",
}

# Option values that are API messages themselves: their keys are field names to convert.
MESSAGE_VALUED = frozenset(
    {"thinkingConfig", "toolConfig", "speechConfig", "imageConfig", "audioTranscriptionConfig"}
)


def alias_of(key: str, valid: list[str]) -> str | None:
    """The option among ``valid`` (snake_case) that ``key`` is another API's name for."""
    alias = ALIASES.get(camel(key))
    found = _snake(alias) if alias is not None else None
    return found if found in valid else None


def camel(key: str) -> str:
    """``max_output_tokens`` → ``maxOutputTokens`` (camelCase stays as it is)."""
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _camel_deep(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {camel(str(k)): _camel_deep(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel_deep(v) for v in value]
    return value


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def option_problem(
    key: str, *, nested: bool = False, use: str | None = None
) -> tuple[str, list[str]] | None:
    """Why ``key`` is not a Gemini option, with the valid names in the manual's spelling.

    ``nested`` is for a key inside ``generation_config: { ... }``; ``use`` is ``"model"`` or
    ``"embedding"`` when the options belong to an inline ``model:`` / ``embedding:`` value, and
    ``None`` for a ``model`` block, which may serve as either. ``None`` when it is fine.
    """
    name = camel(key)
    if name == "generationConfig" and not nested and use != "embedding":
        return None
    if nested:
        valid = GENERATION_CONFIG
    elif use == "embedding":
        valid = EMBEDDING
    elif use == "model":
        valid = GENERATION_CONFIG | REQUEST_LEVEL
    else:
        valid = GENERATION_CONFIG | REQUEST_LEVEL | EMBEDDING
    if name in valid:
        return None
    names = sorted(_snake(v) for v in valid)
    if name in ADAPTER_OWNED:
        return (f"`{key}` is set by the agent itself (its prompt, history and tools)", names)
    if name in VERTEX_ONLY:
        return (f"`{key}` is a Vertex AI option; the Gemini API does not accept it", names)
    where = (
        "inside `generation_config`"
        if nested
        else "of a Gemini embedding model"
        if use == "embedding"
        else "of a Gemini chat model"
        if use == "model"
        else "for the Gemini API"
    )
    return (f"`{key}` is not an option {where}", names)


def split_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split DSL options into (request-level fields, ``generationConfig`` fields).

    Keys are converted to lowerCamelCase; values are left untouched except inside the option
    objects that are API messages themselves (``thinking_config``, ``tool_config``, ...).
    ``generation_config: { ... }`` is merged into ``generationConfig``; embedding options
    (``task_type``, ``title``, ``output_dimensionality``) are left out (see
    :func:`embedding_options`). A key of no known place
    (the compiler reports those, E2077) goes into ``generationConfig``.
    """
    top: dict[str, Any] = {}
    config: dict[str, Any] = {}
    for key, value in options.items():
        name = camel(str(key))
        if name == "generationConfig" and isinstance(value, Mapping):
            config.update(_config_fields(value))
        elif name in REQUEST_LEVEL:
            top[name] = _camel_deep(value) if name in MESSAGE_VALUED else value
        elif name in EMBEDDING:
            continue  # a model block serving as an embedding model too: not for chat
        else:
            config.update(_config_fields({key: value}))
    return top, config


def embedding_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The fields an embedding request gets from an option object: all but the chat ones."""
    chat = GENERATION_CONFIG | REQUEST_LEVEL | {"generationConfig"}
    names = ((camel(str(k)), v) for k, v in options.items())
    return {name: value for name, value in names if name not in chat}


def _config_fields(options: Mapping[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for key, value in options.items():
        name = camel(str(key))
        fields[name] = _camel_deep(value) if name in MESSAGE_VALUED else value
    return fields
