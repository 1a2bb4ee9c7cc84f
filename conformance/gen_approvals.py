"""Engine scenarios of the approval gate (docs/approvals.md), for conformance/engine.json.

Each scenario carries the optional key ``"approvals"`` that both runners read
(``_scenario`` in src/auwgent/testing/conformance.py, ``scenario`` in
ts/test/conformance.test.mjs):

- ``"approver"``: the approver's answers, one per request in order: ``true``, ``false``,
  ``"defer"``, ``{"approved", "reason", "args"}``, any other value (not understood),
  ``{"raise": message}`` (the approver throws) or ``{"hang": true}`` (it never answers);
  ``null`` or absent: no approver is configured;
- ``"resume"``: after the inputs, one ``agent.resume`` per entry: a list of decisions for
  the session's pending requests in order, or ``{"raw": decisions}`` given as they are;
- ``"edit"``: ``[[path, value], ...]`` set in the paused session before the first resume (a
  stored pause tampered with; a path is keys and list indexes, ``-1`` the last).

The output adds ``"asked"`` (the requests the approver was shown); the request ids, the
record ids and ``decided_at`` are random or the time, so both runners write them as
``<id>`` and ``<time>``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["APPROVAL_AGENT", "approval_scenarios"]

APPROVAL_AGENT = """
helper Analyst {
    description: "Analyses data"
    default config { model: openai("gpt-4o") prompt: "Analyse." }
}
helper Writer {
    description: "Writes letters"
    default config { model: openai("gpt-4o") prompt: "Write." }
}
helper Desk {
    description: "Takes over the conversation"
    default config { model: openai("gpt-4o") prompt: "Serve the customer." }
}
agent Main {
    default config { model: openai("gpt-4o") prompt: "Help {{ctx.name}}." maxToolLoops: 4 }
    context { name: string }
    tool send_email(to: string, body: string): string @approval
    tool read_file(path: string): string
    tool slow_op(x: string): string @approval(timeout = 0.2)

    workflow refund(order: string): string {
        description: "Refund an order"
        tool issue_refund(order: string): string @approval
        let done = issue_refund(order)
        return done
    }
    workflow settle(order: string): string {
        description: "Settle an order"
        tool issue_refund(order: string): string @approval
        let before = read_file(order)
        let done = issue_refund(order)
        let after = read_file("log")
        return before + " / " + done + " / " + after
    }
    workflow double(order: string): string {
        description: "Refund twice"
        tool issue_refund(order: string): string @approval
        let first = issue_refund(order)
        let second = issue_refund(order + "b")
        return first + " / " + second
    }
    workflow archive(): string {
        description: "Archive everything"
        return read_file("all")
    } @approval
    helpers {
        Analyst with all tools
        Desk with all tools handoff user
        Writer @approval(timeout = 5)
    }
}
"""

TOOLS = {
    "send_email": {"return": "sent"},
    "read_file": {"return": "contents"},
    "slow_op": {"return": "slow"},
    "issue_refund": {"return": "refunded"},
}


def _tb(kind: str, name: str | None, body: str) -> str:
    head = f"[{kind}: {name}]" if name else f"[{kind}]"
    return f"{head}\n{body}\n[/{kind}]"


DONE = _tb("response_text", None, "Done.")
EMAIL = _tb("tool_call", "send_email", "to: a@x.org\nbody: hi")
EMAIL_NATIVE = {"parts": [{"call": "tool__send_email", "args": {"to": "a@x.org", "body": "hi"}}]}
REFUND = _tb("workflow_call", "refund", "order: o1")
SETTLE = _tb("workflow_call", "settle", "order: o1")
DOUBLE = _tb("workflow_call", "double", "order: o1")
ROUND = ("turns", -1, "paused_round")
# A paused call an earlier resume journaled: its saved outcome is reused (whatever the new
# decision), and one that was started but never finished is refused, never run again.
AUDIT = {"id": "a1", "kind": "tool", "name": "send_email", "agent": "Main",
         "args": {"to": "a@x.org", "body": "hi"}, "approved": True, "reason": "earlier",
         "decided_at": "2026-12-01T10:00:00+00:00"}  # fmt: skip
JOURNAL_DONE = {"state": "done", "approval": AUDIT, "outcome": {
    "id": "r1", "kind": "tool", "name": "send_email", "args": {"to": "a@x.org", "body": "hi"},
    "status": "ok", "result": "sent earlier", "error": None, "call_id": None, "request_id": None,
}}  # fmt: skip
JOURNAL_STARTED = {"state": "started", "approval": AUDIT}


def _sc(replies: list[Any], approvals: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"inputs": ["go"], "replies": replies, "tools": TOOLS, "approvals": approvals, **more}


def approval_scenarios() -> list[tuple[str, dict[str, Any]]]:
    """``(name, scenario)`` pairs; the vectors are ``engine/approvals/<name>``."""
    edited = {"approved": True, "args": {"to": "b@x.org", "body": "edited"}, "reason": "ok"}
    bad_edit = {"approved": True, "args": {"to": 5, "body": "x"}}
    return [
        ("approve", _sc([EMAIL, DONE], {"approver": [True]})),
        ("approve_native", _sc([EMAIL_NATIVE, "Done."], {"approver": [True]}, protocol="native")),
        ("deny", _sc([EMAIL, DONE], {"approver": [False]})),
        ("deny_reason", _sc([EMAIL, DONE], {"approver": [{"approved": False, "reason": "no"}]})),
        ("deny_native", _sc([EMAIL_NATIVE, "Done."], {"approver": [{"approved": False, "reason": "no"}]},
                            protocol="native")),
        ("no_approver", _sc([EMAIL, DONE], {})),
        ("edit_args", _sc([EMAIL, DONE], {"approver": [edited]})),
        ("bad_edit", _sc([EMAIL, DONE], {"approver": [bad_edit]})),
        ("edit_not_object", _sc([EMAIL, DONE], {"approver": [{"approved": True, "args": [1]}]})),
        ("not_understood", _sc([EMAIL, DONE], {"approver": ["yes"]})),
        ("approved_not_bool", _sc([EMAIL, DONE], {"approver": [{"approved": "true"}]})),
        ("approver_throws", _sc([EMAIL, DONE], {"approver": [{"raise": "reviewer away"}]})),
        ("timeout", _sc([_tb("tool_call", "slow_op", "x: 1"), DONE], {"approver": [{"hang": True}]})),
        ("invalid_args_first", _sc([_tb("tool_call", "send_email", "to: a@x.org"), DONE],
                                   {"approver": [True]})),
        ("skipped_by_handler", _sc([EMAIL, DONE], {"approver": [True]},
                                   guard_returns={"on": "tool_call", "value": {"skip": True}})),
        ("ungated_not_asked", _sc([_tb("tool_call", "read_file", "path: a"), DONE], {"approver": [False]})),
        ("workflow_gated", _sc([_tb("workflow_call", "archive", ""), DONE], {"approver": [True]})),
        ("workflow_gated_deny", _sc([_tb("workflow_call", "archive", ""), DONE], {"approver": [False]})),
        ("scoped_step_approve", _sc([REFUND, DONE], {"approver": [True]})),
        ("scoped_step_deny", _sc([REFUND, DONE], {"approver": [{"approved": False, "reason": "no"}]})),
        ("helper_line", _sc([_tb("helper_call", "Writer", "input: a letter"),
                             _tb("response_text", None, "Dear."), DONE], {"approver": [True]})),
        ("helper_line_deny", _sc([_tb("helper_call", "Writer", "input: a letter"), DONE],
                                 {"approver": [False]})),
        ("helper_inherits", _sc([_tb("helper_call", "Analyst", "input: mail"), EMAIL,
                                 _tb("response_text", None, "Mailed."), DONE], {"approver": [True]})),
        ("helper_defer_is_deny", _sc([_tb("helper_call", "Analyst", "input: mail"), EMAIL,
                                      _tb("response_text", None, "Could not."), DONE],
                                     {"approver": ["defer"]})),
        ("defer_pauses", _sc([EMAIL], {"approver": ["defer"]})),
        ("defer_resume_approve", _sc([EMAIL, DONE], {"approver": ["defer"], "resume": [[True]]})),
        ("defer_resume_native", _sc([EMAIL_NATIVE, "Done."], {"approver": ["defer"], "resume": [[True]]},
                                    protocol="native")),
        ("defer_resume_deny", _sc([EMAIL, DONE], {"approver": ["defer"],
                                                  "resume": [[{"approved": False, "reason": "later no"}]]})),
        ("defer_resume_edit", _sc([EMAIL, DONE], {"approver": ["defer"], "resume": [[edited]]})),
        ("defer_resume_bad_edit", _sc([EMAIL, DONE], {"approver": ["defer"], "resume": [[bad_edit]]})),
        ("config_defer", _sc([EMAIL, DONE], {"resume": [[True]]}, config={"approvals": "defer"})),
        ("defer_run_again_refused", {**_sc([EMAIL], {"approver": ["defer"]}), "inputs": ["go", "more"]}),
        ("resume_nothing_pending", _sc([DONE], {"resume": [[True]]})),
        ("resume_unknown_id", _sc([EMAIL], {"approver": ["defer"], "resume": [{"raw": {"nope": True}}]})),
        ("resume_missing", _sc([EMAIL], {"approver": ["defer"], "resume": [[]]})),
        ("resume_bad_decision", _sc([EMAIL], {"approver": ["defer"], "resume": [["defer"]]})),
        ("resume_not_a_dict", _sc([EMAIL], {"approver": ["defer"], "resume": [{"raw": [True]}]})),
        ("step_defer_resume", _sc([SETTLE, DONE], {"approver": ["defer"], "resume": [[True]]})),
        ("step_defer_resume_deny", _sc([SETTLE, DONE], {"approver": ["defer"], "resume": [[False]]})),
        ("step_defer_twice", _sc([DOUBLE, DONE], {"approver": ["defer", "defer"],
                                                  "resume": [[True], [True]]})),
        ("tampered_pending", _sc([EMAIL, DONE], {"approver": ["defer"], "resume": [[True]],
                                                 "edit": [[["pending_approvals"], "x"]]})),
        ("tampered_records", _sc([EMAIL, DONE], {"approver": ["defer"], "resume": [[True]],
                                                 "edit": [[[*ROUND], [{"id": "r"}]]]})),
        ("tampered_request_id", _sc([EMAIL, DONE], {"approver": ["defer"], "resume": [[True]],
                                                    "edit": [[[*ROUND, 0, "request_id"], "other"]]})),
        ("no_longer_declared", _sc([EMAIL, DONE], {"approver": ["defer"], "resume": [[True]],
                                                   "edit": [[[*ROUND, 0, "name"], "gone"]]})),
        ("replay_mismatch", _sc([SETTLE, DONE], {"approver": ["defer"], "resume": [[True]],
                                                 "edit": [[[*ROUND, 0, "steps", 0, "args"],
                                                           {"path": "changed"}]]})),
        ("journal_done_reused", _sc([EMAIL, DONE], {"approver": ["defer"], "resume": [[False]],
                                                    "edit": [[[*ROUND, 0, "journal"], JOURNAL_DONE]]})),
        ("journal_started_interrupted", _sc([EMAIL, DONE], {"approver": ["defer"], "resume": [[True]],
                                                            "edit": [[[*ROUND, 0, "journal"], JOURNAL_STARTED]]})),
        ("handoff_defer_resume", {**_sc([_tb("helper_call", "Desk", "input: help"),
                                         _tb("response_text", None, "Desk here."), EMAIL, DONE],
                                        {"approver": ["defer"], "resume": [[True]]}),
                                  "inputs": ["go", "email a"]}),
    ]  # fmt: skip
