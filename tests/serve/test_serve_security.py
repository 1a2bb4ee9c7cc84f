"""``auwgent serve`` probed as an attacker would: real server processes over real HTTP.

A page on another site (cross-site POSTs, DNS rebinding), a second user (another principal's
conversations and memory), a client setting privileged context, and malformed input."""

from __future__ import annotations

import asyncio
import json
import re
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from auwgent.runtime.session import new_session
from auwgent.runtime.stores import SQLiteSessionStore
from auwgent.testing import FakeOpenAIServer, text

from .test_serve import json_headers, read_sse, serving

AGENT = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a helpful assistant.{{#if ctx.tier == \\"gold\\"}} Offer refunds.{{/if}}"
    }
    context { user?: string, is_admin?: boolean, note?: string, tier?: string }
    workflow delete_user(id: string): string {
        description: "Deletes a user record"
        tool remove_user(id: string): string
        if (ctx.is_admin) {
            return remove_user(id)
        }
        return "not allowed"
    }
}
"""

APP = """
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
REMOVED = os.path.join(HERE, "removed.txt")
SETTINGS = os.path.join(HERE, "serve.json")


def remove_user(id):
    with open(REMOVED, "a") as log:
        log.write(id + "\\n")
    return "removed " + id


def ingester(turn):
    return ["The user said: " + turn["input"]["text"]]


class Principals:
    # writes down who each run is for, as middleware sees it

    async def onRunStart(self, session, ctx):
        with open(os.path.join(HERE, "principals.txt"), "a") as log:
            log.write(json.dumps(dict(ctx["principal"])) + "\\n")


SERVE = {}
if os.path.exists(SETTINGS):  # the test writes the settings it probes
    with open(SETTINGS) as file:
        SERVE = json.load(file)


if os.environ.get("APP_AUTHENTICATES"):

    def authenticate(request):
        key = request.headers.get("x-api-key")
        if key == "boom":
            raise RuntimeError("the identity service is down")
        if key == "shapeless":
            return {"user": "ada"}
        return {"ada-key": {"tenant": "acme", "user": "ada"}}.get(key)


def config(agent_name):
    return {
        "apiKeys": {"openaiApiKey": "sk-test"},
        "baseUrls": {"openai": os.environ["FAKE_OPENAI_URL"]},
        "tools": {"remove_user": remove_user},
        "retry": {"attempts": 1},
        "middleware": [Principals()],
        "memory": {"store": os.path.join(HERE, "memory.db"), "ingester": ingester},
        "context": {"is_admin": False} if os.environ.get("APP_SETS_ADMIN") else {},
    }
"""

ADA = "ada-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef"
TOKENS = {
    ADA: {"tenant": "acme", "user": "ada"},
    BOB: {"tenant": "globex", "user": "bob"},
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "main.agent").write_text(AGENT, encoding="utf-8")
    (tmp_path / "app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    return tmp_path


def settings(project: Path, **values: Any) -> None:
    (project / "serve.json").write_text(json.dumps(values), encoding="utf-8")


def answer(recorded: Any) -> Any:
    return text("[response_text]\nok\n[/response_text]")


def system_of(fake: FakeOpenAIServer) -> str:
    """The system prompt of the model's last request."""
    messages = fake.requests[-1].body["messages"]
    return "".join(str(m["content"]) for m in messages if m["role"] == "system")


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}", "content-type": "application/json"}


def run(url: str, body: dict[str, Any], token: str | None = None) -> list[tuple[str, Any]]:
    hdrs = bearer(token) if token else {"content-type": "application/json"}
    with httpx.stream(
        "POST", f"{url}/v1/agents/Main/runs", content=json.dumps(body), headers=hdrs, timeout=60
    ) as response:
        assert response.status_code == 200, response.read()
        return read_sse(response)


def sqlite(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 's.db'}"


# -- origin and host -----------------------------------------------------------------------------


def test_cross_site_and_rebinding_requests_are_refused(project: Path, tmp_path: Path) -> None:
    with (
        FakeOpenAIServer(answer) as fake,
        serving(project, fake.base_url, sqlite(tmp_path), token=None,
                extra=["--allow-origin", "http://app.example"]) as url,
    ):  # fmt: skip
        post = f"{url}/v1/agents/Main/runs"
        body = json.dumps({"input": "call the tool", "conversation_id": "c1"})
        evil = "http://evil.example"
        # what a page on another site can send without a preflight: text/plain, forms
        plain = httpx.post(
            post, content=body, headers={"origin": evil, "content-type": "text/plain"}
        )
        assert plain.status_code == 403 and plain.json()["error"]["code"] == "bad_origin"
        form = httpx.post(post, data={"input": "x"}, headers={"origin": evil})
        assert form.status_code == 403
        json_evil = httpx.post(post, content=body, headers={"origin": evil,
                                                           "content-type": "application/json"})  # fmt: skip
        assert json_evil.status_code == 403
        fetched = httpx.post(post, content=body, headers={"sec-fetch-site": "cross-site",
                                                         "content-type": "application/json"})  # fmt: skip
        assert fetched.status_code == 403
        # without an Origin, a body must still be JSON
        for kind in ("text/plain", "application/x-www-form-urlencoded", None):
            sent = httpx.post(post, content=body, headers={"content-type": kind} if kind else {})
            assert sent.status_code == 415, (kind, sent.text)
            assert sent.headers["content-type"] == "application/json"
            assert "application/json" in sent.json()["error"]["message"]
        assert fake.requests == []  # the model was never asked

        # DNS rebinding: the attacker's name resolves to 127.0.0.1, the Host header says so
        port = url.rsplit(":", 1)[1]
        for path in ("/v1/conversations/c1", "/healthz", "/openapi.json"):
            rebound = httpx.get(f"{url}{path}", headers={"host": f"evil.example:{port}"})
            assert rebound.status_code == 421, path
            assert rebound.json()["error"]["code"] == "bad_host"
        wrong_port = httpx.get(f"{url}/healthz", headers={"host": "127.0.0.1:1"})
        assert wrong_port.status_code == 421
        assert httpx.get(f"{url}/healthz", headers={"host": f"localhost:{port}"}).status_code == 200

        # an allowed origin: preflight answered, CORS headers on the answer
        preflight = httpx.options(post, headers={
            "origin": "http://app.example", "access-control-request-method": "POST",
            "access-control-request-headers": "content-type"})  # fmt: skip
        assert preflight.status_code == 204
        assert preflight.headers["access-control-allow-origin"] == "http://app.example"
        refused = httpx.options(post, headers={"origin": evil,
                                               "access-control-request-method": "POST"})  # fmt: skip
        assert refused.status_code == 403 and "access-control-allow-origin" not in refused.headers
        allowed = httpx.post(post, content=body, headers={"origin": "http://app.example",
                                                         "content-type": "application/json"})  # fmt: skip
        assert allowed.status_code == 200, allowed.text
        assert allowed.headers["access-control-allow-origin"] == "http://app.example"
        assert len(fake.requests) == 1
        plain_get = httpx.get(f"{url}/healthz")
        assert "access-control-allow-origin" not in plain_get.headers


# -- identity and ownership ------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["postgres", "redis"])
def test_two_principals_never_see_each_other(
    project: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    store = request.getfixturevalue("postgres_url" if backend == "postgres" else "redis_url")
    settings(project, tokens=TOKENS)
    conversation = f"shared-{backend}-{time.time_ns()}"
    with (
        FakeOpenAIServer(answer) as fake,
        serving(project, fake.base_url, store, token=None) as one,
        serving(project, fake.base_url, store, token=None) as two,
    ):
        post = f"{one}/v1/agents/Main/runs"
        assert httpx.post(post, json={"input": "x"}).status_code == 401
        assert httpx.post(post, json={"input": "x"}, headers=bearer("x" * 26)).status_code == 401
        assert httpx.get(f"{one}/openapi.json").status_code == 401
        assert httpx.get(f"{one}/openapi.json", headers=bearer(BOB)).status_code == 200

        run(one, {"input": "My locker code is 4321", "conversation_id": conversation}, ADA)
        # Ada's second run (on the other worker) recalls what her first taught, once learned
        deadline = time.monotonic() + 30
        while "4321" not in system_of(fake):
            assert time.monotonic() < deadline, "Ada's memory was never recalled"
            time.sleep(0.2)
            run(two, {"input": "What is my code?", "conversation_id": conversation}, ADA)
        assert '"The user said: My locker code is 4321" (learned in turn' in system_of(fake)

        # Bob: Ada's conversation is not found, exactly like one that does not exist
        mine = f"{two}/v1/conversations/{conversation}"
        assert httpx.get(mine, headers=bearer(ADA)).status_code == 200
        theirs = httpx.get(mine, headers=bearer(BOB))
        nowhere = httpx.get(f"{two}/v1/conversations/nowhere-{backend}", headers=bearer(BOB))
        assert theirs.status_code == nowhere.status_code == 404
        assert theirs.json()["error"]["code"] == nowhere.json()["error"]["code"] == "not_found"
        approve = httpx.post(f"{mine}/approvals", json={"decisions": {"x": True}},
                             headers=bearer(BOB))  # fmt: skip
        assert approve.status_code == 404
        # Bob's run with the same id is a conversation of his own, and his memory is his
        events = run(one, {"input": "Hello", "conversation_id": conversation}, BOB)
        assert len(events[-1][1]["turns"]) == 1
        his = httpx.get(f"{one}/v1/conversations/{conversation}", headers=bearer(BOB)).json()
        assert [t["input"]["text"] for t in his["turns"]] == ["Hello"]
        assert "4321" not in system_of(fake)
        assert "Memory (" not in system_of(fake)
        stored = httpx.get(mine, headers=bearer(ADA)).json()
        assert all(t["input"]["text"] != "Hello" for t in stored["turns"])
        assert "Hello" not in json.dumps(stored)
    seen = [json.loads(line) for line in (project / "principals.txt").read_text().splitlines()]
    assert seen[0] == TOKENS[ADA] and seen[-1] == TOKENS[BOB]


def test_memory_scoped_by_conversation(project: Path, tmp_path: Path) -> None:
    settings(project, memory="conversation")
    with (
        FakeOpenAIServer(answer) as fake,
        serving(project, fake.base_url, sqlite(tmp_path), token=None) as url,
    ):
        run(url, {"input": "My code is 4321", "conversation_id": "one"})
        deadline = time.monotonic() + 30
        while "4321" not in system_of(fake):
            assert time.monotonic() < deadline, "the conversation's memory was never recalled"
            time.sleep(0.2)
            run(url, {"input": "Code?", "conversation_id": "one"})
        run(url, {"input": "Code?", "conversation_id": "two"})
        assert "4321" not in system_of(fake)
        run(url, {"input": "Code?"})
        assert "4321" not in system_of(fake)


def test_the_authenticate_hook_and_a_trusted_header(project: Path, tmp_path: Path) -> None:
    settings(project, trusted_header="X-Auth-User", trusted_tenant_header="X-Auth-Tenant")
    with (
        FakeOpenAIServer(answer) as fake,
        serving(project, fake.base_url, sqlite(tmp_path), token=None) as url,
    ):
        post = f"{url}/v1/agents/Main/runs"
        body = {"input": "hi", "conversation_id": "c"}
        assert httpx.post(post, json=body).status_code == 401
        ada = {"x-auth-user": "ada", "x-auth-tenant": "acme"}
        assert httpx.post(post, json=body, headers=ada).status_code == 200
        conversation = f"{url}/v1/conversations/c"
        assert httpx.get(conversation, headers=ada).status_code == 200
        other = httpx.get(conversation, headers={"x-auth-user": "ada", "x-auth-tenant": "globex"})
        assert other.status_code == 404
    seen = (project / "principals.txt").read_text().splitlines()
    assert [json.loads(line) for line in seen] == [{"tenant": "acme", "user": "ada"}]


def test_the_authenticate_hook_decides_and_fails_closed(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_AUTHENTICATES", "1")
    with (
        FakeOpenAIServer(answer) as fake,
        serving(project, fake.base_url, sqlite(tmp_path), token=None,
                extra=["--host", "0.0.0.0", "--allow-host", "agents.example"]) as url,
    ):  # fmt: skip
        post = f"{url}/v1/agents/Main/runs"
        body = {"input": "hi", "conversation_id": "c"}
        for key, status in (("nope", 401), ("boom", 500), ("shapeless", 500), ("ada-key", 200)):
            answered = httpx.post(post, json=body, headers={"x-api-key": key})
            assert answered.status_code == status, (key, answered.text)
            assert answered.headers["content-type"].startswith(
                "text/event-stream" if status == 200 else "application/json"
            )
        assert (
            "identity service"
            not in httpx.post(post, json=body, headers={"x-api-key": "boom"}).text
        )
        assert len(fake.requests) == 1
        # bound to every address: the allowed name and loopback are accepted, nothing else
        port = url.rsplit(":", 1)[1]
        health = f"{url}/healthz"
        assert httpx.get(health, headers={"host": "agents.example"}).status_code == 200
        assert httpx.get(health, headers={"host": f"agents.example:{port}"}).status_code == 200
        assert httpx.get(health, headers={"host": f"evil.example:{port}"}).status_code == 421


@pytest.mark.parametrize(
    ("values", "token", "message"),
    [
        ({"tokens": TOKENS, "trusted_header": "X-Auth-User"}, None, "choose one way"),
        ({"alow_origins": []}, None, "SERVE.alow_origins: unknown key"),
        ({"allow_origins": ["https://app.example/"]}, None, "is not an origin"),
        ({"allow_origins": "https://app.example"}, None, "SERVE.allow_origins: expected a list"),
        ({"memory": "everyone"}, None, "SERVE.memory: expected"),
        ({"tokens": {"short": TOKENS[ADA]}}, None, "at least 16 characters"),
        ({"tokens": {ADA: {"user": "ada"}}}, None, "SERVE.tokens[#1]: expected a principal"),
        ({"client_context": {"Main": 5}}, None, "SERVE.client_context.Main: expected a list"),
        ({}, "short", "--token: a token must have at least 16 characters"),
    ],
)
def test_wrong_settings_stop_the_server_at_start(
    project: Path, tmp_path: Path, values: dict[str, Any], token: str | None, message: str
) -> None:
    settings(project, **values)
    with pytest.raises(AssertionError, match=re.escape(message)):
        with serving(project, "http://127.0.0.1:9", sqlite(tmp_path), token=token):
            pass


# -- context -------------------------------------------------------------------------------------


def _calls_the_workflow(recorded: Any) -> Any:
    if "[tool_result" in json.dumps(recorded.body["messages"][-1]):
        return text("[response_text]\ndone\n[/response_text]")
    return text('[tool_call: delete_user]\n{"id": "u1"}\n[/tool_call]')


@pytest.mark.parametrize("app_sets_admin", [True, False])
def test_client_context_cannot_open_a_gated_workflow(
    project: Path, tmp_path: Path, app_sets_admin: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if app_sets_admin:
        monkeypatch.setenv("APP_SETS_ADMIN", "1")
    with (
        FakeOpenAIServer(_calls_the_workflow) as fake,
        serving(project, fake.base_url, sqlite(tmp_path), token=None) as url,
    ):
        post = f"{url}/v1/agents/Main/runs"
        refused = httpx.post(post, json={"input": "delete u1", "context": {"is_admin": True}},
                             headers=json_headers(None))  # fmt: skip
        assert refused.status_code == 422
        assert refused.json()["error"]["code"] == "context_refused"
        assert "context.is_admin" in refused.json()["error"]["message"]
        # a key a prompt condition tests decides something too
        tier = httpx.post(post, json={"input": "refund", "context": {"tier": "gold"}},
                          headers=json_headers(None))  # fmt: skip
        assert tier.status_code == 422 and "context.tier" in tier.json()["error"]["message"]
        assert fake.requests == []
        # a key that decides nothing is the client's to set; the workflow still says no
        events = run(url, {"input": "delete u1", "context": {"user": "Ada"}})
        results = [v for n, v in events if n == "workflow_result"]
        assert results and results[0]["result"] == "not allowed"
    assert not (project / "removed.txt").exists()


def test_declared_client_context_is_all_a_client_may_set(project: Path, tmp_path: Path) -> None:
    settings(project, client_context=["note"])
    with (
        FakeOpenAIServer(answer) as fake,
        serving(project, fake.base_url, sqlite(tmp_path), token=None) as url,
    ):
        post = f"{url}/v1/agents/Main/runs"
        refused = httpx.post(post, json={"input": "x", "context": {"user": "Ada"}},
                             headers=json_headers(None))  # fmt: skip
        assert refused.status_code == 422 and "context.user" in refused.json()["error"]["message"]
        undeclared = httpx.post(post, json={"input": "x", "context": {"whatever": 1}},
                                headers=json_headers(None))  # fmt: skip
        assert undeclared.status_code == 422
        assert run(url, {"input": "x", "context": {"note": "hi"}})[-1][0] == "session"


# -- errors as JSON ------------------------------------------------------------------------------


def test_bad_input_is_a_json_error_naming_the_field(project: Path, tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")

    asyncio.run(store.save("local/local/old", new_session("Gone")))
    with (
        FakeOpenAIServer(answer) as fake,
        serving(project, fake.base_url, sqlite(tmp_path), token=None) as url,
    ):
        post = f"{url}/v1/agents/Main/runs"
        hdrs = json_headers(None)

        def sent(raw: str) -> httpx.Response:
            return httpx.post(post, content=raw.encode(), headers=hdrs)

        cases = {
            "[" * 100_000 + "]" * 100_000: "body",
            '{"input": "x", "context": {"note": ' + "[" * 40 + "]" * 40 + "}}": "context.note",
            '{"input": "x", "conversation_id": "a\\ud800b"}': "conversation_id",
            '{"input": "hi \\udfff"}': "input",
            '{"input": "x", "context": {"\\ud800": 1}}': "context",
            '{"input": 5}': "input",
            '{"input": "x", "conversation_id": ""}': "conversation_id",
            '{"input": "x", "conversation_id": "a\\u0000b"}': "conversation_id",
            '{"input": "x", "extra": 1}': "extra",
        }
        for raw, field in cases.items():
            answered = sent(raw)
            assert 400 <= answered.status_code < 500, (raw[:60], answered.text)
            assert answered.headers["content-type"] == "application/json"
            assert field in answered.json()["error"]["message"], (raw[:60], answered.text)
        for method, path in (("GET", "/nowhere"), ("DELETE", "/v1/conversations/old"),
                             ("GET", "/v1/agents/Main/runs")):  # fmt: skip
            routed = httpx.request(method, f"{url}{path}")
            assert routed.status_code in (404, 405), (method, path)
            assert routed.json()["error"]["message"].startswith(f"{method} {path}")
        for raw_id in ("%ED%A0%80", "%FF", "a%00b"):  # a surrogate, not UTF-8, a NUL
            odd = httpx.get(f"{url}/v1/conversations/{raw_id}")
            assert odd.status_code in (400, 404), (raw_id, odd.text)
            assert odd.headers["content-type"] == "application/json"
        assert httpx.get(f"{url}/v1/conversations/a%00b").status_code == 400
        # a stored session of an agent that is not served
        stale = sent('{"input": "x", "conversation_id": "old"}')
        assert stale.status_code == 409 and "'Gone'" in stale.json()["error"]["message"]
        resumed = httpx.post(f"{url}/v1/conversations/old/approvals",
                             json={"decisions": {"r": True}}, headers=hdrs)  # fmt: skip
        assert resumed.status_code == 409 and "'Gone'" in resumed.json()["error"]["message"]
        assert fake.requests == []
