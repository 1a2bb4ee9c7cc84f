"""A plain reading of a recorded provider response, written apart from the adapters.

The conformance suite (``test_wire_real.py``) decodes every recorded response twice: with the
adapter under test, over HTTP, and with these few functions, which read the whole body at once
the way the API documentation describes it. The two readings must agree.
"""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

# Gemini's finish reasons as the adapters report them (docs/providers.md).
GEMINI_FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MODEL_ARMOR": "content_filter",
    "MALFORMED_FUNCTION_CALL": "malformed_function_call",
}


def sse_payloads(body: str) -> list[str]:
    """The ``data`` payloads of an event stream, one per event."""
    payloads: list[str] = []
    data: list[str] = []
    for line in body.replace("\r\n", "\n").split("\n"):
        if not line:
            if data:
                payloads.append("\n".join(data))
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        payloads.append("\n".join(data))
    return payloads


def is_stream(record: dict[str, Any]) -> bool:
    content_type = record["response"]["headers"].get("content-type", "")
    return bool(record["request"]["stream"]) and "json" not in content_type


def _chunks(record: dict[str, Any]) -> list[Any]:
    body = record["response"]["body"]
    if is_stream(record):
        return [json.loads(p) for p in sse_payloads(body) if p.strip() != "[DONE]"]
    value = json.loads(body)
    return value if isinstance(value, list) else [value]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def _arguments(text: str) -> Any:
    try:
        return json.loads(text) if text.strip() else {}
    except ValueError:
        return text


def openai_reference(record: dict[str, Any]) -> dict[str, Any]:
    """Text, calls, usage and finish reason of a Chat Completions response."""
    stream = is_stream(record)
    text = ""
    others: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage: tuple[Any, Any] | None = None
    for chunk in _chunks(record):
        if "error" in chunk:
            return {"error": True}
        if isinstance(chunk.get("usage"), dict):
            usage = (chunk["usage"].get("prompt_tokens"), chunk["usage"].get("completion_tokens"))
        choices = [c for c in chunk.get("choices") or () if c.get("index", 0) == 0]
        if not choices:
            continue
        choice = choices[0]
        message = choice.get("delta" if stream else "message") or {}
        content = message.get("content")
        text += _content_text(content) or (message.get("refusal") or "")
        if isinstance(content, list):
            others.extend(
                str(p.get("type"))
                for p in content
                if p.get("type") not in ("text", "thinking", "reasoning")
            )
        for position, fragment in enumerate(message.get("tool_calls") or ()):
            index = fragment.get("index", position) if stream else position
            call = calls.setdefault(index, {"id": None, "name": None, "arguments": ""})
            function = fragment.get("function") or {}
            call["id"] = call["id"] or fragment.get("id") or None
            call["name"] = call["name"] or function.get("name")
            call["arguments"] += function.get("arguments") or ""
        finish = choice.get("finish_reason") or finish
    if stream and "[DONE]" not in record["response"]["body"]:
        return {"error": True}
    return {
        "text": text,
        "calls": [
            {"id": c["id"], "name": c["name"], "args": _arguments(c["arguments"])}
            for _, c in sorted(calls.items())
        ],
        "others": others,
        "usage": usage,
        "finish": finish or "stop",
    }


def gemini_reference(record: dict[str, Any]) -> dict[str, Any]:
    """Text, calls, other parts, usage and finish reason of a generateContent response."""
    text = ""
    calls: list[dict[str, Any]] = []
    others: list[str] = []
    finish: str | None = None
    usage: tuple[Any, Any] | None = None
    for chunk in _chunks(record):
        if "error" in chunk:
            return {"error": True}
        meta = chunk.get("usageMetadata")
        if isinstance(meta, dict):
            output = meta.get("candidatesTokenCount")
            if meta.get("thoughtsTokenCount") is not None:
                output = (output or 0) + meta["thoughtsTokenCount"]
            usage = (meta.get("promptTokenCount"), output)
        if (chunk.get("promptFeedback") or {}).get("blockReason"):
            finish = "content_filter"
        candidates = chunk.get("candidates") or []
        if not candidates:
            continue
        for part in (candidates[0].get("content") or {}).get("parts") or ():
            if part.get("thought"):
                continue
            if "functionCall" in part:
                call = part["functionCall"]
                calls.append(
                    {
                        "id": call.get("id") or None,
                        "name": call["name"],
                        "args": call.get("args") or {},
                    }
                )
            elif "text" in part:
                text += part["text"]
            else:
                others.extend(k for k in part if k not in ("thoughtSignature", "partMetadata"))
        reason = candidates[0].get("finishReason")
        if reason:
            finish = GEMINI_FINISH.get(reason, str(reason).lower())
    if finish is None:
        return {"error": True}
    if finish == "stop" and calls:
        finish = "tool_calls"
    return {"text": text, "calls": calls, "others": others, "usage": usage, "finish": finish}


# Anthropic's stop reasons as the adapter reports them (docs/providers.md).
ANTHROPIC_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
}


def anthropic_reference(record: dict[str, Any]) -> dict[str, Any]:
    """Text, calls, other blocks, usage and stop reason of a Messages API response.

    A whole message is its ``content`` list; a stream is the same blocks told as events (a
    ``tool_use`` block's input in ``input_json_delta`` fragments). Blocks other than text and
    ``tool_use`` are "others", by type, in block order (a citation in a stream is one too).
    """
    events = _anthropic_events(record)
    if events is None:
        return {"error": True}
    text = ""
    calls: list[dict[str, Any]] = []
    others: list[str] = []
    fragments: dict[int, list[str]] = {}
    blocks: dict[int, dict[str, Any]] = {}
    counts: dict[str, int] = {}
    reason = None
    for event in events:
        kind = event.get("type")
        if kind == "error":
            return {"error": True}
        usage = event.get("usage") or (event.get("message") or {}).get("usage") or {}
        counts.update((k, v) for k, v in usage.items() if isinstance(v, int))
        if kind == "content_block_start":
            block = event["content_block"]
            blocks[event["index"]] = block
            fragments[event["index"]] = []
            text += block.get("text", "") if block.get("type") == "text" else ""
        elif kind == "content_block_delta":
            delta = event["delta"]
            if delta.get("type") == "text_delta":
                text += delta["text"]
            elif delta.get("type") == "input_json_delta":
                fragments[event["index"]].append(delta["partial_json"])
            elif delta.get("type") == "citations_delta":
                others.append("citation")
        elif kind == "content_block_stop":
            block = blocks[event["index"]]
            if block.get("type") == "tool_use":
                given = "".join(fragments[event["index"]])
                args = _arguments(given) if given else block.get("input") or {}
                calls.append({"id": block["id"], "name": block["name"], "args": args})
            elif block.get("type") != "text":
                others.append(str(block.get("type")))
        elif kind == "message_delta":
            reason = event["delta"].get("stop_reason") or reason
    if reason is None:
        return {"error": True}
    finish = ANTHROPIC_FINISH.get(reason, reason)
    if finish == "stop" and calls:
        finish = "tool_calls"
    prompt = sum(
        counts.get(k, 0)
        for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    usage_pair = (prompt, counts.get("output_tokens")) if counts else None
    return {"text": text, "calls": calls, "others": others, "usage": usage_pair, "finish": finish}


def _anthropic_events(record: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The response as stream events (a whole message told as its blocks); ``None`` for a
    stream that never stopped."""
    if is_stream(record):
        events = _chunks(record)
        if not any(e.get("type") == "message_stop" for e in events):
            return None
        return events
    message = json.loads(record["response"]["body"])
    events = [{"type": "message_start", "message": {**message, "content": []}}]
    for index, block in enumerate(message.get("content") or ()):
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta", "delta": message, "usage": {}})
    return events


def embedding_reference(record: dict[str, Any]) -> list[list[float]] | None:
    """The vectors of an embeddings response, in input order."""
    body = json.loads(record["response"]["body"])
    if record["api"] == "openai":
        rows = sorted(body.get("data") or [], key=lambda row: row.get("index", 0))
        return [_floats(row["embedding"]) for row in rows]
    if "embedding" in body:
        return [body["embedding"]["values"]]
    return [row["values"] for row in body.get("embeddings") or []]


def _floats(vector: Any) -> list[float]:
    if isinstance(vector, str):  # encoding_format "base64": little-endian float32
        raw = base64.b64decode(vector)
        return list(struct.unpack(f"<{len(raw) // 4}f", raw))
    return [float(x) for x in vector]


def error_message(record: dict[str, Any]) -> str | None:
    """The provider's own message in a recorded error body, when it has one."""
    try:
        body = json.loads(record["response"]["body"])
    except ValueError:
        return None
    if isinstance(body, list) and body:
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return None
