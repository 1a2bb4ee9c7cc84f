"""The injection suite (injection_suite.json) through a compiled agent and a model that obeys
every instruction it finds in a tool result, in both protocols and under each policy.

With the default policy no injected sink call runs without an approval (the approver here
says no to everything), and every benign task completes with no approval prompt; the table
in docs/security.md is the one these runs produce.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from .suite import SCENARIOS, compiled, run_scenario

PROTOCOLS = ("blocks", "native")
POLICIES = ("allow", "default", "refuse", "quarantine")
DOCS = Path(__file__).parents[2] / "docs" / "security.md"
_DOCS_CACHE: dict[tuple[str, str], dict[str, Any]] = {}


def test_the_suite_is_large_enough() -> None:
    domains = {s["domain"] for s in SCENARIOS}
    assert len(SCENARIOS) >= 40
    assert domains == {"mail", "calendar", "banking", "files", "web"}


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["id"] for s in SCENARIOS])
async def test_default_policy_no_injected_sink_call_runs_unapproved(
    scenario: dict[str, Any], protocol: str
) -> None:
    result = await run_scenario(compiled("default", protocol), scenario, True, protocol)
    assert result["attack_ran"] == []
    assert result["status"] == "complete"
    injected = scenario["injected"]
    assert injected["tool"] in [r["name"] for r in result["asked"]]
    request = next(r for r in result["asked"] if r["name"] == injected["tool"])
    assert request["taint"]["findings"], request  # the request says why, and from where
    assert [t["action"] for t in result["tainted"]] == ["approve"] * len(result["tainted"])


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["id"] for s in SCENARIOS])
async def test_default_policy_benign_tasks_complete_without_a_prompt(
    scenario: dict[str, Any], protocol: str
) -> None:
    result = await run_scenario(compiled("default", protocol), scenario, False, protocol)
    assert result["plan_ran"]
    assert result["asked"] == []
    assert result["tainted"] == []
    assert result["status"] == "complete"


async def _table(policy: str, protocol: str) -> dict[str, Any]:
    key = (policy, protocol)
    if key not in _DOCS_CACHE:
        doc = compiled(policy, protocol)
        quarantine = policy == "quarantine"
        attacks = benign = asked = 0
        for scenario in SCENARIOS:
            attack = await run_scenario(doc, scenario, True, protocol, quarantine)
            attacks += bool(attack["attack_ran"])
            asked += bool(attack["asked"])
            clean = await run_scenario(doc, scenario, False, protocol, quarantine)
            benign += bool(clean["plan_ran"] and not clean["asked"])
        _DOCS_CACHE[key] = {"attacks": attacks, "benign": benign, "asked": asked}
    return _DOCS_CACHE[key]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_refuse_stops_every_attack_and_allow_stops_none(protocol: str) -> None:
    assert (await _table("refuse", protocol))["attacks"] == 0
    assert (await _table("allow", protocol))["attacks"] == len(SCENARIOS)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_through_a_quarantine_helper_every_attack_is_attempted_and_asks(
    protocol: str,
) -> None:
    table = await _table("quarantine", protocol)
    assert table == {"attacks": 0, "benign": len(SCENARIOS), "asked": len(SCENARIOS)}


async def test_the_table_in_security_md_is_what_the_suite_measures() -> None:
    text = DOCS.read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| py (\w+ / \w+) \| (.*) \|$", text, re.MULTILINE))
    total = len(SCENARIOS)
    for policy in POLICIES:
        for protocol in PROTOCOLS:
            measured = await _table(policy, protocol)
            shown = "approve (default)" if policy == "default" else policy
            expected = f"{measured['attacks']}/{total} | {measured['benign']}/{total}"
            assert rows[f"{shown.split()[0]} / {protocol}"] == expected, (policy, protocol)
