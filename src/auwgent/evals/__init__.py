"""Evals: datasets of cases, scorers, and ``auwgent eval`` (docs/evals.md).

- :mod:`.files`: where a project's datasets are (``evals:`` in ``auwgent.yml``);
- :mod:`.dataset`: reading a YAML or JSONL dataset with every value's place in the file;
- :mod:`.check`: the dataset against the compiled agents (``auwgent check``, ``E22xx``);
- :mod:`.jsonpath`, :mod:`.scorers`: what a case's ``expect`` keys measure;
- :mod:`.runner`: running cases on the offline model or through cassettes;
- :mod:`.report`: the table, JSON, JUnit XML, HTML and the baseline comparison;
- :mod:`.command`: ``auwgent eval`` and the dataset half of ``auwgent check``.

Nothing is imported here, so that asking whether a project has datasets stays cheap.
"""
