"""The surfaces that serve the library to other programs: the MCP server (mcp.py) and HTTP (http/)."""
