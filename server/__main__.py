"""``python -m kenning.server --store DIR``: the MCP server over stdio (see kenning/serve/mcp.py)."""

from kenning.serve.mcp import main

main()
