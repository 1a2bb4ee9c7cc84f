"""Acceptance tests of the runtime, written from the manual's Python tabs and DECISIONS.md.

Each test works like a user: it writes ``.agent`` files and ``auwgent.yml``, runs the real CLI,
imports the generated module and drives it against the fake provider servers over real HTTP
on 127.0.0.1, asserting what the manual promises (intent names, payloads, agent names, hook
order, what reached the server).
"""
