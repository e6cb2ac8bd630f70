"""The ``wiki`` command: parse, call one function of ``wiki``, render. Nothing else.

Commands live in one module per group (admin, review, query); importing them registers
them on the shared typer app.
"""

from __future__ import annotations

from wiki_cli import (  # noqa: F401
    admin,
    authoring,
    cron,
    doctor,
    gaps,
    hooks,
    lint,
    mcp_command,
    memory,
    query,
    review,
)
from wiki_cli.common import app

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    app(prog_name="wiki")
