#!/usr/bin/env python3
"""Extract text-only requests and the input tokens their providers reported from other
projects' VCR cassettes into tests/data/context/usage_real.json.

Usage::

    python scripts/extract_usage_cassettes.py OWNER/NAME=/path/to/git/dir [...]

Each argument names a public repository and a local git directory holding it (a clone or a
bare mirror). Every YAML cassette at the repository's HEAD is read; each recorded exchange
that is a whole (not streamed) OpenAI Chat Completions call to ``api.openai.com``, an Anthropic
Messages call to ``api.anthropic.com`` or a Gemini ``generateContent`` call to
``generativelanguage.googleapis.com``, offers no tools, carries only text, and whose answer
reports its input tokens, becomes one entry::

    {"source": {"repo", "commit", "path", "interaction"}, "api": "openai" | "anthropic" |
     "gemini", "model": "...", "system": "...", "messages": [{"role", "content"}],
     "input_tokens": N}

Identical requests are kept once. The estimator test (tests/runtime/test_context_estimates.py)
reads the file; docs/context.md shows its table. Rerun by hand when sources change.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "context" / "usage_real.json"


def _git(git_dir: str, *args: str) -> str:
    done = subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, check=True)
    return done.stdout.decode("utf-8", "replace")


def _text(content: Any) -> str | None:
    """A message's content as text, or ``None`` when it holds anything but text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(p, dict) and p.get("type") == "text" and set(p) <= {"type", "text"}
        for p in content
    ):
        return "".join(str(p["text"]) for p in content)
    return None


def _openai(body: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any] | None:
    system, messages = [], []
    for message in body.get("messages") or []:
        text = _text(message.get("content"))
        if text is None or set(message) - {"role", "content"}:
            return None
        if message["role"] in ("system", "developer"):
            system.append(text)
        else:
            messages.append({"role": message["role"], "content": text})
    tokens = (answer.get("usage") or {}).get("prompt_tokens")
    return _entry("openai", body.get("model"), "\n\n".join(system), messages, tokens)


def _anthropic(body: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any] | None:
    system = _text(body.get("system") or "")
    messages = []
    for message in body.get("messages") or []:
        text = _text(message.get("content"))
        if text is None:
            return None
        messages.append({"role": message["role"], "content": text})
    usage = answer.get("usage") or {}
    tokens = usage.get("input_tokens")
    if tokens is not None:
        tokens += (usage.get("cache_read_input_tokens") or 0) + (
            usage.get("cache_creation_input_tokens") or 0
        )
    return _entry("anthropic", body.get("model"), system, messages, tokens)


def _gemini_text(content: dict[str, Any]) -> str | None:
    parts = content.get("parts") or []
    if not all(isinstance(p, dict) and set(p) == {"text"} for p in parts):
        return None
    return "".join(str(p["text"]) for p in parts)


def _gemini(model: str, body: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any] | None:
    system = (
        _gemini_text(body.get("systemInstruction") or {}) if body.get("systemInstruction") else ""
    )
    messages = []
    for content in body.get("contents") or []:
        text = _gemini_text(content)
        if text is None:
            return None
        role = "assistant" if content.get("role") == "model" else "user"
        messages.append({"role": role, "content": text})
    tokens = (answer.get("usageMetadata") or {}).get("promptTokenCount")
    return _entry("gemini", model, system, messages, tokens)


def _entry(api: str, model: Any, system: str | None, messages: list[Any], tokens: Any) -> Any:
    if system is None or not isinstance(model, str) or not messages or not isinstance(tokens, int):
        return None
    return {
        "api": api,
        "model": model,
        "system": system,
        "messages": messages,
        "input_tokens": tokens,
    }


#: The request fields a plain text request may carry (sampling and limits, nothing that adds
#: input the body does not show).
_PLAIN = {
    "model", "messages", "system", "max_tokens", "max_completion_tokens", "temperature",
    "top_p", "top_k", "stream", "n", "seed", "stop", "stop_sequences", "metadata", "contents",
    "systemInstruction", "generationConfig", "safetySettings", "presence_penalty",
    "frequency_penalty", "logprobs", "user", "store", "service_tier",
}  # fmt: skip


def _exchange(interaction: dict[str, Any]) -> dict[str, Any] | None:
    request = interaction.get("request") or {}
    body = request.get("parsed_body")
    answer = (interaction.get("response") or {}).get("parsed_body")
    uri = str(request.get("uri", "")).split("?")[0]
    if not isinstance(body, dict) or not isinstance(answer, dict):
        return None
    if set(body) - _PLAIN or body.get("stream"):
        return None  # tools, server features, caches, files: not a plain text request
    config = body.get("generationConfig") or {}
    if any(k in config for k in ("responseSchema", "responseJsonSchema", "_responseJsonSchema")):
        return None  # a response schema is input too
    if uri == "https://api.openai.com/v1/chat/completions":
        return _openai(body, answer)
    if uri == "https://api.anthropic.com/v1/messages":
        return _anthropic(body, answer)
    prefix = "https://generativelanguage.googleapis.com/v1beta/models/"
    if uri.startswith(prefix) and uri.endswith(":generateContent"):
        if body.get("tools") or body.get("toolConfig"):
            return None
        return _gemini(uri[len(prefix) : -len(":generateContent")], body, answer)
    return None


def main(argv: list[str]) -> int:
    found: list[dict[str, Any]] = []
    seen: set[str] = set()
    for arg in argv:
        repo, _, git_dir = arg.partition("=")
        commit = _git(git_dir, "rev-parse", "HEAD").strip()
        paths = [p for p in _git(git_dir, "ls-tree", "-r", "--name-only", "HEAD").split("\n")]
        for path in sorted(p for p in paths if "cassettes" in p and p.endswith(".yaml")):
            try:
                data = yaml.safe_load(_git(git_dir, "show", f"HEAD:{path}"))
            except (yaml.YAMLError, subprocess.CalledProcessError):
                continue  # not YAML, or a large file the mirror does not hold
            for index, interaction in enumerate((data or {}).get("interactions") or []):
                entry = _exchange(interaction)
                if entry is None:
                    continue
                key = json.dumps([entry[k] for k in ("api", "model", "system", "messages")])
                if key in seen:
                    continue
                seen.add(key)
                source = {"repo": repo, "commit": commit, "path": path, "interaction": index}
                found.append({"source": source, **entry})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(found, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(found)} requests to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
