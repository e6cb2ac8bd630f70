"""Review commands: proposals and approval."""

from __future__ import annotations

from typing import Annotated

import typer

from wiki_cli.common import (
    JsonOption,
    app,
    open_wiki,
)
from wiki_cli.errors import report
from wiki_cli.render import out, plain, print_json, table


@app.command("proposals")
def list_proposals(json_output: JsonOption = False) -> None:
    """List open proposals: name, author, age, entries touched, stale or not."""
    from wiki.proposals import list_proposals as run

    proposals = run(open_wiki())
    if json_output:
        print_json(proposals)
        return
    if not proposals:
        report("no open proposals")
        return
    grid = table("proposal", "author", "created", "paths", "state", "subject")
    for p in proposals:
        grid.add_row(p.name, str(p.authors[0]) if p.authors else "?",
                     p.created.strftime("%Y-%m-%d %H:%M"), str(len(p.paths)),
                     "behind" if p.stale else "current", plain(p.subject))
    out.print(grid)


@app.command()
def approve(
    proposal: Annotated[str, typer.Argument(help="Proposal name (see `wiki proposals`).")],
    json_output: JsonOption = False,
) -> None:
    """Approve a proposal and land it on the wiki branch (compare-and-swap)."""
    from wiki.proposals import approve as run

    landing = run(open_wiki(), proposal)
    if json_output:
        print_json(landing)
        return
    how = "merged onto the moved wiki" if landing.merged else "landed"
    report(f"{how}: {landing.proposal} approved by {landing.approver}")
    out.print(landing.commit)


