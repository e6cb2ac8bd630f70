"""``wiki gaps``: the evidence gaps ``wiki ask`` recorded, newest first (wiki/answering/gaps.py)."""

from __future__ import annotations

from typing import Annotated

import typer

from wiki_cli.common import JsonOption, app, open_wiki
from wiki_cli.errors import report
from wiki_cli.render import out, plain, print_json, table

NOTED = 3
"""Skipped lines named one by one on stderr; the rest are counted."""


@app.command("gaps")
def gaps_command(
    limit: Annotated[int, typer.Option("--limit", "-n", min=1,
                                       help="Show at most N, newest first.")] = 20,
    json_output: JsonOption = False,
) -> None:
    """List the questions `wiki ask` could not answer (its evidence gaps, recorded in
    <git dir>/wiki/gaps.jsonl), newest first. A damaged line is skipped with a note."""
    from wiki.answering.gaps import read_gaps

    log = read_gaps(open_wiki(), limit=limit)
    for line, reason in log.skipped[:NOTED]:
        report(f"note: {log.path}:{line}: skipped ({reason})")
    if len(log.skipped) > NOTED:
        report(f"note: {len(log.skipped) - NOTED} more lines of {log.path} skipped "
               "(`wiki gaps --json` lists them)")
    if json_output:
        print_json({"path": str(log.path), "total": log.total, "gaps": log.gaps,
                    "skipped": [{"line": line, "reason": why} for line, why in log.skipped]})
        return
    if not log.gaps:
        report("no evidence gaps recorded (`wiki ask` records a question it cannot answer)")
        return
    grid = table("time", "coverage", "question", "commit", optional=("commit", "coverage"))
    for gap in log.gaps:
        coverage = "-" if gap.confidence is None else f"{gap.confidence:.2f}"
        why = f" (no {gap.missing_type} stated)" if gap.missing_type else ""
        grid.add_row(gap.time.replace("T", " ")[:16] or "-", coverage,
                     plain(gap.question + why), gap.commit[:12] or "-")
    out.print(grid)
    if log.total > len(log.gaps):
        report(f"{len(log.gaps)} of {log.total} gaps shown, newest first (--limit N for more)")
