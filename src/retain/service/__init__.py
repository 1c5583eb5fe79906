"""Serving retain to other processes: the MCP server (``mcp``, ``retain mcp``; needs the ``mcp`` extra),
a thin layer over one :class:`~retain.memory.Memory`. This package's ``__init__`` imports no extra.
"""
