"""``wiki mcp``: serve the wiki to agents over the Model Context Protocol (docs/mcp.md)."""

from __future__ import annotations

from pathlib import Path

from wiki_cli.common import app, open_wiki, state


@app.command("mcp")
def mcp_command() -> None:
    """Serve search, ask, get, propose and lint as MCP tools over stdio (for Claude,
    Cursor, VS Code...; see docs/mcp.md). Agents can propose, never approve."""
    open_wiki().require_head()  # fail here, with the CLI's message, not inside the client
    from wiki_cli.mcp_server import serve

    serve(Path.cwd() if state.repo == Path(".") else state.repo.resolve(), state.branch)
