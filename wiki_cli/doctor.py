"""``wiki doctor``: check the install and the repository; say how to fix each finding."""

from __future__ import annotations

from typing import Annotated

import typer

from wiki_cli.common import JsonOption, app, state
from wiki_cli.errors import FINDINGS
from wiki_cli.render import out, plain, print_json, table

STYLES = {"ok": "green", "info": "cyan", "warning": "yellow", "error": "bold red"}


@app.command()
def doctor(
    deep: Annotated[bool, typer.Option(
        "--deep", help="Also load the embedding model and encode a sentence (slow).")] = False,
    json_output: JsonOption = False,
) -> None:
    """Check the install (git, embedding model, embed server, optional extras) and the
    repository (wiki branch, wiki.toml, index freshness, hook, cron), with a fix for each
    finding. Exit 1 when an error-level finding exists."""
    from wiki.doctor import has_errors, run_checks

    checks = run_checks(state.repo, state.branch, deep=deep)
    if json_output:
        print_json({"checks": checks, "errors": sum(c.level == "error" for c in checks),
                    "warnings": sum(c.level == "warning" for c in checks)})
    else:
        grid = table("check", "status", "found", "fix")
        for check in checks:
            grid.add_row(check.name, plain(check.level, STYLES[check.level]),
                         plain(check.message), plain(check.fix))
        out.print(grid)
    if has_errors(checks):
        raise typer.Exit(FINDINGS)
