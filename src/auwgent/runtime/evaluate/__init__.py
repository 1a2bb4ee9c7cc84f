"""The runtime's pure evaluators: functions of the typed IR (:mod:`auwgent.ir.model`) and values.

:mod:`.schema` (type descriptions, validation, coercion, JSON Schema), :mod:`.expr`
(expressions), :mod:`.workflows` (the workflow interpreter, which awaits the tool calls it is
given a function for) and :mod:`.prompts` (prompt assembly). They import nothing else of the
runtime (``tests/runtime/pure/test_pure_layer.py``): no run, no agent, no provider, so another
runtime can be checked against them and the conformance vectors are made from them alone.
"""
