"""`gnoctl mcp`: agents reach gnod through the Model Context Protocol (imported only by that command)."""
