"""Kept so that ``python -m kenning.server`` (in existing MCP client configs) still starts the MCP server.

The server itself lives in ``kenning/serve/mcp.py``; ``kenning serve`` is the same thing.
"""
