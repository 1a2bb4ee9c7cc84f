#!/usr/bin/env python3
"""Extract provider responses from other projects' VCR cassettes into tests/data/wire/real/.

Usage::

    python scripts/extract_wire_cassettes.py [--only API] OWNER/NAME=/path/to/git/dir[:rare] [...]

Each argument names a public repository and a local git directory holding it (a clone or a
bare mirror). With ``:rare``, only the shapes that plain OpenAI answers do not cover are kept
from that repository: error answers, streams, and everything from Gemini. With ``--only API``
(``openai``, ``gemini`` or ``anthropic``), only that API's exchanges are written. Every YAML
cassette under a ``cassettes`` folder at the repository's HEAD is read; each recorded exchange
with a Chat Completions, embeddings, Gemini ``generateContent`` / ``streamGenerateContent`` /
``embedContent`` / ``batchEmbedContents`` or Anthropic ``/v1/messages`` endpoint becomes one file
``tests/data/wire/real/<api>/<vendor>__<cassette>__<n>.json``::

    {"source": {"repo", "commit", "path", "interaction"},
     "api": "openai" | "gemini" | "anthropic", "vendor": "<host>", "endpoint": "chat" | ...,
     "request": {"model", "stream", "tools"},
     "response": {"status", "headers", "body"}}

``body`` is the response text exactly as recorded (streams byte for byte; cassettes that store
a parsed JSON body get it re-encoded as JSON). Only the request fields the replay needs are
kept (no prompts, no images). Identical bodies are stored once; bodies above ``MAX_BODY``
bytes (image and audio payloads) are skipped. The script is rerun by hand when sources change;
the files it writes are reviewed and committed.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "wire" / "real"
MAX_BODY = 16_000
# A few larger bodies are kept for shapes that only come big (images inline, embeddings).
RARE = {b'"inlineData"': 400_000, b'"embedding': 64_000}
MAX_RARE = 6  # of each
# Hosts that are test servers, not provider APIs.
NOT_PROVIDERS = re.compile(r"^(localhost|127\.0\.0\.1|demo-endpoints\.|fake-)")
KEPT_HEADERS = ("content-type", "retry-after", "retry-after-ms")

_ENDPOINTS = (
    (re.compile(r"/chat/completions"), "openai", "chat"),
    (re.compile(r"/embeddings$"), "openai", "embeddings"),
    (re.compile(r":streamGenerateContent"), "gemini", "streamGenerateContent"),
    (re.compile(r":generateContent"), "gemini", "generateContent"),
    (re.compile(r":batchEmbedContents"), "gemini", "batchEmbedContents"),
    (re.compile(r":embedContent"), "gemini", "embedContent"),
    (re.compile(r"/v1/messages$"), "anthropic", "messages"),
)


def _git(gitdir: str, *args: str) -> bytes:
    return subprocess.run(["git", "-C", gitdir, *args], capture_output=True, check=True).stdout


def _classify(uri: str) -> tuple[str, str] | None:
    path = uri.split("?", 1)[0]
    for pattern, api, endpoint in _ENDPOINTS:
        if pattern.search(path):
            return api, endpoint
    return None


def _body_text(response: dict[str, Any]) -> str | None:
    if "parsed_body" in response:
        return json.dumps(response["parsed_body"], ensure_ascii=False)
    body = response.get("body")
    raw = body.get("string") if isinstance(body, dict) else body
    if raw is None:
        return None
    if isinstance(raw, str):
        return raw
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return None  # brotli or other encodings we do not unpack


def _headers(response: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in (response.get("headers") or {}).items():
        name = str(key).lower()
        if name in KEPT_HEADERS:
            out[name] = value[0] if isinstance(value, list) else str(value)
    return out


def _request_summary(request: dict[str, Any], uri: str) -> dict[str, Any]:
    body = request.get("parsed_body")
    if body is None:
        raw = request.get("body")
        raw = raw.get("string") if isinstance(raw, dict) else raw
        try:
            body = json.loads(raw) if raw else None
        except (ValueError, TypeError):
            body = None
    body = body if isinstance(body, dict) else {}
    tools: list[str] = []
    for tool in body.get("tools") or ():
        if not isinstance(tool, dict):
            continue
        if isinstance(tool.get("function"), dict):
            tools.append(str(tool["function"].get("name")))
        elif "input_schema" in tool:  # an Anthropic function (server tools have a type)
            tools.append(str(tool.get("name")))
        for declaration in (
            tool.get("functionDeclarations") or tool.get("function_declarations") or ()
        ):
            if isinstance(declaration, dict):
                tools.append(str(declaration.get("name")))
    stream = bool(body.get("stream")) or "alt=sse" in uri or ":streamGenerateContent" in uri
    model = body.get("model") or (re.search(r"models/([^:/?]+)", uri) or [None, None])[1]
    return {"model": model, "stream": stream, "tools": tools}


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:90]


def _wanted(body: bytes, rare: dict[bytes, int]) -> bool:
    if len(body) <= MAX_BODY:
        return True
    for marker, cap in RARE.items():
        if marker in body and len(body) <= cap and rare.get(marker, 0) < MAX_RARE:
            rare[marker] = rare.get(marker, 0) + 1
            return True
    return False


def _rare_shape(api: str, status: int, stream: bool) -> bool:
    return api == "gemini" or status >= 400 or stream


def extract(
    repo: str,
    gitdir: str,
    seen: set[str],
    rare: dict[bytes, int],
    *,
    only_rare: bool = False,
    only_api: str | None = None,
) -> int:
    commit = _git(gitdir, "rev-parse", "HEAD").decode().strip()
    listing = _git(gitdir, "ls-tree", "-r", "--name-only", "HEAD").decode().splitlines()
    written = 0
    for path in listing:
        if "cassettes/" not in path or not path.endswith((".yaml", ".yml")):
            continue
        try:
            text = _git(gitdir, "show", f"HEAD:{path}")
        except subprocess.CalledProcessError:
            continue  # an LFS object or a file the mirror does not hold
        if not re.search(rb"chat/completions|googleapis\.com|/embeddings|/v1/messages", text):
            continue
        try:
            document = yaml.load(text, Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            continue
        for number, interaction in enumerate((document or {}).get("interactions") or ()):
            request = interaction.get("request") or {}
            response = interaction.get("response") or {}
            uri = str(request.get("uri", ""))
            kind = _classify(uri)
            body = _body_text(response)
            if kind is None or (only_api and kind[0] != only_api):
                continue
            if body is None or not _wanted(body.encode(), rare):
                continue
            digest = hashlib.sha256(body.encode()).hexdigest()
            if digest in seen:
                continue
            seen.add(digest)
            api, endpoint = kind
            vendor = re.sub(r"^https?://([^/]+).*$", r"\1", uri)
            if NOT_PROVIDERS.match(vendor):
                continue
            status = (response.get("status") or {}).get("code", 200)
            summary = _request_summary(request, uri)
            if only_rare and not _rare_shape(api, status, summary["stream"]):
                continue
            record = {
                "source": {"repo": repo, "commit": commit, "path": path, "interaction": number},
                "api": api,
                "vendor": vendor,
                "endpoint": endpoint,
                "request": summary,
                "response": {"status": status, "headers": _headers(response), "body": body},
            }
            name = f"{_slug(vendor)}__{_slug(Path(path).stem)}__{number}.json"
            target = OUT / api / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
            written += 1
    return written


def main(argv: list[str]) -> int:
    seen: set[str] = set()
    rare: dict[bytes, int] = {}
    only_api = None
    if argv[:1] == ["--only"]:
        only_api, argv = argv[1], argv[2:]
    for argument in argv:
        repo, _, gitdir = argument.partition("=")
        only_rare = gitdir.endswith(":rare")
        gitdir = gitdir.removesuffix(":rare")
        count = extract(repo, gitdir, seen, rare, only_rare=only_rare, only_api=only_api)
        print(f"{repo}: {count} responses")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
