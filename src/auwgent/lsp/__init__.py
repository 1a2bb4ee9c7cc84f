"""The language server (``auwgent lsp``, see docs/editors.md).

``workspace`` keeps the projects being edited and checks them incrementally, ``index`` says
what each name stands for, ``complete`` what may be written where; ``server`` (which needs the
``lsp`` extra: pygls and lsprotocol) answers the editor. Only ``server`` imports pygls.
"""
