"""``wiki mcp``: serve the wiki to agents over the Model Context Protocol (docs/mcp.md)."""

from __future__ import annotations

import sys
from pathlib import Path

from wiki_cli.common import app, open_wiki, state
from wiki_cli.errors import report

ON_A_TERMINAL = ("note: wiki mcp speaks the Model Context Protocol (JSON-RPC) on stdin/stdout "
                 "for an agent's client, not to a person; register `wiki -C {repo} mcp` as a "
                 "stdio server in the client (docs/mcp.md); Ctrl-D stops it")
"""Said on stderr when ``wiki mcp`` is started on a terminal (stdin is a TTY)."""


@app.command("mcp")
def mcp_command() -> None:
    """Serve search, ask, get, propose and lint as MCP tools over stdio (for Claude,
    Cursor, VS Code...; see docs/mcp.md). Agents can propose, never approve."""
    open_wiki().require_head()  # fail here, with the CLI's message, not inside the client
    from wiki_cli.mcp_server import serve

    repo = Path.cwd() if state.repo == Path(".") else state.repo.resolve()
    if sys.stdin.isatty():  # started by hand: say what it is, then serve all the same
        report(ON_A_TERMINAL.format(repo=repo))
    serve(repo, state.branch)
