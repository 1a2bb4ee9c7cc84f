"""The console in a real browser (Debian's ``chromium``, driven by Playwright with that
executable: no browser download): chat with an agent on the offline model, approve its call,
open, replay and export the session, read the run's trace, run the DSL tests; and the same run
through plain ``auwgent serve`` gives the same intents.

Screenshots of each view go to ``.test-logs/console/`` (``AUWGENT_SCREENSHOTS`` names another
folder: docs/images/dev is where docs/dev.md takes them from). Marked ``browser``: the full tier
of scripts/test.sh, which installs chromium when it is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from servers import free_port

from .conftest import DevProcess, copy_project, read_sse, serve_process

pytestmark = [pytest.mark.browser, pytest.mark.servers]

ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("AUWGENT_SCREENSHOTS") or ROOT / ".test-logs" / "console")
WIDE = {"width": 1280, "height": 800}
NARROW = {"width": 420, "height": 860}
ASK = "Please refund order A-17"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium")
    if executable is None:  # never skipped: scripts/_env.sh installs it
        raise AssertionError("chromium is not installed (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any, dev: DevProcess) -> Iterator[Any]:
    context = browser.new_context(viewport=WIDE, accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(dev.url + "/")
    page.wait_for_selector("text=model: offline")
    yield page
    context.close()
    assert errors == [], errors


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def send(page: Any, words: str) -> None:
    page.fill("textarea[aria-label=message]", words)
    page.keyboard.press("Enter")


def finals(sse_text: str) -> list[tuple[str, Any]]:
    """The final intents of an SSE body (no partials, no session), approval ids blanked (they
    are made per conversation)."""
    response = httpx.Response(200, content=sse_text.encode())
    events = [(n, v) for n, v in read_sse(response) if n not in ("partial", "session")]
    return [(n, {**v, "id": "<id>"} if n == "approval_request" else v) for n, v in events]


def test_chat_approve_and_the_session(page: Any, dev: DevProcess) -> None:
    page.fill("#ctx-customer", "Ada")
    page.check("#ctx-vip")
    page.select_option("#pick-config", "careful")
    page.select_option("#pick-persona", "Terse")
    send(page, ASK)
    page.wait_for_selector("li.intent[data-intent=approval_request]")
    timeline = page.inner_text("aside")
    assert 'lookup_order(order="A-17")' in timeline
    assert 'lookup_order → "order A-17: shipped"' in timeline
    assert "waits for a decision" in timeline
    page.wait_for_selector("nav >> text=approvals1")
    shot(page, "chat")

    page.keyboard.press("Alt+2")  # the views are keyboard shortcuts
    inbox = page.inner_text("section.view")
    assert "tool refund_order" in inbox and '"order": "A-17"' in inbox and ASK in inbox
    shot(page, "approvals")
    page.get_by_role("button", name="Approve").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("li.intent[data-intent=response_text]:not(.partial)")
    assert "refunded 12 on A-17" in page.inner_text("aside")
    # the chat shows the stored session, read back once the stream has ended
    page.wait_for_selector("ol.messages >> text=Called: lookup_order, refund_order.")
    shot(page, "timeline")

    page.keyboard.press("Alt+4")
    rows = page.locator("div.runs tbody tr").all_inner_texts()
    assert len(rows) == 2 and "resumed" in rows[1]  # the first run, and its resume
    page.get_by_role("button", name="#1").click()
    page.wait_for_selector("ol.waterfall")
    names = page.locator(".span-name").all_inner_texts()
    assert names.count("invoke_agent Desk") == 2 and "execute_tool refund_order" in names
    assert names.count("chat gpt-4o") == 2  # the careful config's model
    page.locator("details.request-sent summary").first.click()
    sent = page.inner_text("details.request-sent")
    assert "You help Ada with their orders, carefully." in sent  # the config chosen
    assert "Answer in one short line." in sent  # and the persona
    shot(page, "runs")

    page.keyboard.press("Alt+3")
    page.wait_for_selector("tr[data-session]")
    (conversation,) = page.locator("tr[data-session]").evaluate_all(
        "rows => rows.map(r => r.dataset.session)"
    )
    shot(page, "sessions")
    with page.expect_download() as download:
        page.get_by_role("button", name="Export").click()
    exported = json.loads(Path(download.value.path()).read_text())
    stored = httpx.get(f"{dev.url}/v1/conversations/{conversation}").json()
    assert exported == stored

    page.get_by_role("button", name="New conversation").click()
    page.keyboard.press("Alt+3")
    page.get_by_role("button", name="Open").click()
    assert ASK in page.inner_text("ol.messages")
    assert "refunded 12 on A-17" in page.inner_text("aside")

    page.keyboard.press("Alt+3")
    page.get_by_role("button", name="Replay").click()
    page.wait_for_selector("li.intent[data-intent=approval_request]")
    deadline = time.monotonic() + 30  # the replay's session is saved when its stream ends
    while True:
        sessions = httpx.get(dev.url + "/dev/api/sessions").json()["sessions"]
        if len(sessions) == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert [s["first_input"] for s in sessions] == [ASK, ASK]
    assert sessions[0]["status"] == "awaiting_approval"  # the replay, waiting in its turn

    page.set_viewport_size(NARROW)
    page.keyboard.press("Alt+1")
    shot(page, "narrow")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= NARROW["width"], f"the page is {width} px wide at {NARROW['width']} px"


def test_dsl_tests_from_the_page(page: Any) -> None:
    page.keyboard.press("Alt+5")
    page.get_by_role("button", name="Run tests").click()
    page.wait_for_selector(".summary")
    assert page.inner_text(".summary").startswith("1 passed, 1 failed")
    failure = page.inner_text(".test-results .fail")
    assert "says the wrong thing" in failure and 'expected: text contains "on its way"' in failure
    shot(page, "tests")


def test_the_console_and_the_api_give_the_same_intents(page: Any, tmp_path: Path) -> None:
    page.fill("#ctx-customer", "Ada")
    with page.expect_response(lambda r: r.url.endswith("/v1/agents/Desk/runs")) as answer:
        send(page, ASK)
    page.wait_for_selector("li.intent[data-intent=approval_request]")
    in_console = finals(answer.value.text())
    assert "event: partial" in answer.value.text()  # what the timeline fills in from

    folder = copy_project(tmp_path / "serve")
    with serve_process(folder, free_port(), "--app", "app:deferring") as url:
        body = {
            "input": ASK,
            "conversation_id": "same",
            "context": {"customer": "Ada", "vip": False},
        }
        with httpx.stream("POST", f"{url}/v1/agents/Desk/runs", json=body, timeout=60) as sent:
            through_api = finals(sent.read().decode())
    assert [n for n, _ in in_console] == [
        "tool_call", "tool_result", "tool_call", "approval_request",
    ]  # fmt: skip
    assert in_console == through_api
