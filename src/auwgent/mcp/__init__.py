"""The ``auwgent mcp`` commands and ``auwgent check --mcp``: MCP servers at development time.

- :mod:`.shapes`: JSON Schema (what MCP servers describe tools with) to IR types and back, and
  IR types written as ``.agent`` source;
- :mod:`.importer`: ``auwgent mcp import`` (a server's tools as ``tool`` declarations) and
  ``auwgent check --mcp`` (declarations that drifted from their server);
- :mod:`.serve`: ``auwgent mcp serve`` (an agent as an MCP server).

Calls to ``@mcp`` tools at run time live in :mod:`auwgent.runtime.mcp`. Everything here needs
the MCP SDK (``pip install 'auwgent[mcp]'``).
"""
