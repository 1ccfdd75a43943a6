"""The surfaces that serve the library to other programs: the MCP server (mcp.py); an HTTP server is coming."""
