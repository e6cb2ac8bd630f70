"""Review commands: proposals, diff, approve, reject, log, history."""

from __future__ import annotations

from typing import Annotated

import typer

from wiki_cli.common import (
    JsonOption,
    app,
    index_after_landing,
    open_wiki,
)
from wiki_cli.errors import report
from wiki_cli.inert import one_line
from wiki_cli.render import out, plain, print_json, table


@app.command("proposals")
def list_proposals(json_output: JsonOption = False) -> None:
    """List open proposals: name, author, age, entries touched, stale or not. A branch
    whose name does not read as itself (bidi, invisible characters) is not listed; a
    warning on stderr says why."""
    from wiki.review.proposals import list_proposals as run
    from wiki.review.proposals import unlisted_proposals

    wiki = open_wiki()
    proposals = run(wiki)
    for ref, why in unlisted_proposals(wiki):
        report(f"warning: {ref} is not listed as a proposal: its name {why}; rename it "
               "with git (`git branch -m`) to review it")
    if json_output:
        print_json(proposals)
        return
    if not proposals:
        report("no open proposals")
        return
    grid = table("proposal", "author", "created", "paths", "state", "flags", "subject",
                 identifiers=("proposal",), optional=("paths", "created", "author", "subject"))
    for p in proposals:
        grid.add_row(p.name, str(p.authors[0]) if p.authors else "?",
                     p.created.strftime("%Y-%m-%d %H:%M"), str(len(p.paths)),
                     "behind" if p.stale else "current",
                     ",".join(sorted({f.rule for f in p.flags}
                              | ({"conflict"} if p.conflicts else set()))) or "-",
                     plain(p.subject))
    out.print(grid)


@app.command()
def approve(
    proposal: Annotated[str, typer.Argument(help="Proposal name (see `wiki proposals`).")],
    expect: Annotated[str | None, typer.Option(
        "--expect", help="Review hash from `wiki diff` (all 64 hex digits, or a prefix of at "
        "least 12): refuse if the proposal changed since.")] = None,
    override_flags: Annotated[str | None, typer.Option(
        "--override-flags", metavar="REASON",
        help="Land a proposal the review check flagged (instruction-like text, control "
        "characters, size, non-regular files, file names, schema, broken dependencies, "
        "review policy, trust settings of wiki.toml); "
        "REASON is recorded in the landing commit. Secrets cannot be overridden.")] = None,
    json_output: JsonOption = False,
) -> None:
    """Approve a proposal and land it on the wiki branch (compare-and-swap). A flagged
    proposal (see `wiki diff`) is refused (exit 5) unless --override-flags gives a reason."""
    from wiki.review.proposals import approve as run

    wiki = open_wiki()
    landing = run(wiki, proposal, expect=expect, override=override_flags)
    if landing.landed:  # the landed entries' vectors now, with a bar, not in a later read
        index_after_landing(wiki, json_output)
    if json_output:
        print_json(landing)
        return
    if not landing.landed:
        report(f"approval {landing.approvals} recorded on {landing.proposal} by "
               f"{landing.approver}; it lands when enough different people approve")
        return
    how = "merged onto the moved wiki" if landing.merged else "landed"
    report(f"{how}: {landing.proposal} approved by {landing.approver}")
    out.print(landing.commit)




@app.command()
def diff(
    proposal: Annotated[str, typer.Argument(help="Proposal name (see `wiki proposals`).")],
    stat: Annotated[bool, typer.Option("--stat", help="One line per file.")] = False,
    json_output: JsonOption = False,
) -> None:
    """Show what a proposal changes: per entry, per field, and the body; plus the review
    hash to pass to `wiki approve --expect`."""
    from wiki.review.diff import proposal_diff
    from wiki.review.names import command_line

    result = proposal_diff(open_wiki(), proposal)
    if json_output:
        print_json(result)
        return
    out.print(plain(f"proposal {result.proposal}: {result.subject}"))
    out.print(plain(f"base {result.base[:12]}  tip {result.tip[:12]}  "
                    f"review hash {result.review_hash}"))
    for flag in result.flags:
        where = f"{flag.path}:{flag.line}:{flag.column}" if flag.line else flag.path
        out.print(plain(f"flagged: {where}: {flag.kind} ({flag.rule}) {flag.category}: "
                        f"{flag.detail or 'read it as a reviewer'}"), style="yellow")
    if result.flags:
        hint = command_line("approve", result.proposal, "--override-flags REASON")
        out.print(plain(f"approve refuses it unless overridden: {hint} (secrets cannot be "
                        "overridden)"),
                  style="yellow")
    for conflict in result.conflicts:
        out.print(plain(f"conflict: {conflict}: left as it is; the source's change needs a "
                        "decision (wiki propose --edit, or ingest --overwrite)"), style="yellow")
    for change in result.changes:
        label = f" ({change.entry_id}) {one_line(change.title)}" if change.entry_id else ""
        if not stat:
            out.print()
        out.print(plain(f"{change.kind:8} {change.path}{label}  "
                        f"+{change.lines_added} -{change.lines_removed}"))
        if stat:
            continue
        if change.note:
            out.print(plain(f"  {change.note}"))
        for item in change.fields:
            if _structured(item.old) or _structured(item.new):
                for line in _yaml_diff(item.field, item.old, item.new):
                    style = {"+": "green", "-": "red"}.get(line[:1])
                    out.print(plain(f"  {line}"), style=style)
            else:
                out.print(plain(f"  {item.field}: {_short(item.old)} -> {_short(item.new)}"))
        for line in change.body_diff[2:]:
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else None
            out.print(plain(f"  {line}"), style=style)


def _structured(value) -> bool:
    return isinstance(value, (list, dict))


def _yaml_diff(field: str, old, new) -> list[str]:
    """A field whose value is a list or mapping (``sources``, ``facts``, ``relations``) as
    the YAML it is stored as, one line each, prefixed ``-`` (before), ``+`` (after) or a
    space (both)."""
    import difflib

    from wiki.store.frontmatter import dump_field

    def lines(value) -> list[str]:
        return [] if value is None else dump_field(field, value).splitlines()

    before, after = lines(old), lines(new)
    diff = difflib.unified_diff(before, after, lineterm="", n=len(before) + len(after))
    return [line for line in diff if not line.startswith(("---", "+++", "@@"))]


def _short(value, width: int = 80) -> str:
    text = "(none)" if value is None else '""' if value == "" else one_line(str(value))
    return text if len(text) <= width else text[:width - 1] + "…"


@app.command()
def reject(
    proposal: Annotated[str, typer.Argument(help="Proposal name (see `wiki proposals`).")],
    reason: Annotated[str, typer.Option("--reason", help="Why it is rejected.")] = "",
) -> None:
    """Close a proposal without landing it; it is kept under <wiki>-rejected/NAME."""
    from wiki.review.proposals import reject as run

    ref = run(open_wiki(), proposal, reason)
    report(f"rejected; kept as {ref}")
    out.print(ref)


@app.command()
def log(
    limit: Annotated[int, typer.Option("--limit", "-n", min=1)] = 20,
    json_output: JsonOption = False,
) -> None:
    """Landings on the wiki branch, newest first: proposal, proposers, approver. In a
    shallow clone that lacks some of them: those it has, then an error (exit 1)."""
    from wiki.review.history import log as run
    from wiki.store.shallow import ShallowHistoryError

    try:
        landings = run(open_wiki(), limit=limit)
    except ShallowHistoryError as exc:
        if exc.partial or json_output:
            _print_landings(exc.partial, json_output)
        raise
    _print_landings(landings, json_output)


def _print_landings(landings, json_output: bool) -> None:
    if json_output:
        print_json(landings)
        return
    grid = table("commit", "date", "approved by", "proposed by", "subject",
                 identifiers=("commit",), optional=("proposed by", "date"))
    for item in landings:
        grid.add_row(item.commit[:12], item.date.strftime("%Y-%m-%d %H:%M"),
                     plain(item.approved_by or "-"), plain(item.proposed_by), plain(item.subject))
    out.print(grid)


@app.command()
def history(
    target: Annotated[str, typer.Argument(help="Entry id or path.")],
    json_output: JsonOption = False,
) -> None:
    """Every revision of one entry across renames, with who proposed and approved it. In
    a shallow clone that lacks its beginning: the revisions it has, then an error (exit 1)."""
    from wiki.review.history import history as run
    from wiki.store.shallow import ShallowHistoryError

    try:
        entry_id, revisions = run(open_wiki(), target)
    except ShallowHistoryError as exc:
        if exc.partial[1] or json_output:
            _print_revisions(*exc.partial, json_output)
        raise
    _print_revisions(entry_id, revisions, json_output)


def _print_revisions(entry_id: str, revisions, json_output: bool) -> None:
    if json_output:
        print_json({"id": entry_id, "revisions": revisions})
        return
    grid = table("commit", "date", "change", "path", "proposed by", "approved by",
                 identifiers=("commit", "path"), optional=("approved by", "proposed by", "date"))
    for rev in revisions:
        change = f"renamed from {rev.old_path}" if rev.change == "renamed" else rev.change
        grid.add_row(rev.landing.commit[:12], rev.landing.date.strftime("%Y-%m-%d %H:%M"),
                     change, plain(rev.path), plain(rev.landing.proposed_by),
                     plain(rev.landing.approved_by or "-"))
    out.print(grid)


@app.command()
def rebase(
    proposal: Annotated[str, typer.Argument(help="Proposal name (see `wiki proposals`).")],
) -> None:
    """Move a proposal that is behind onto the current wiki (three-way merge per entry)."""
    from wiki.review.rebase import rebase as run

    result = run(open_wiki(), proposal)
    report(f"{result.name} is now based on {result.base[:12]}")
    out.print(result.name)


@app.command("sync")
def sync_command(
    remote: Annotated[str, typer.Argument(help="Git remote name.")] = "origin",
    json_output: JsonOption = False,
) -> None:
    """Fetch and push the wiki branch and proposals with a remote; never force-pushes."""
    from wiki.review.sharing import sync_remote

    wiki = open_wiki()
    result = sync_remote(wiki, remote)
    if result.action not in ("up-to-date", "created-remote", "pushed"):  # new entries here
        index_after_landing(wiki, json_output)
    if json_output:
        print_json(result)
        return
    report(f"wiki branch: {result.action} ({(result.head or '-')[:12]})")
    if result.rescue:
        report(f"the previous local head is kept as {result.rescue}")
    if result.proposal:
        report(f"local changes conflicted with {remote}: left as proposal {result.proposal}")
    if result.pushed or result.fetched or result.closed:
        report(f"proposals: {len(result.pushed)} pushed, {len(result.fetched)} fetched, "
               f"{len(result.closed)} closed (landed or rejected)")
    for name in result.diverged:
        report(f"warning: {name} changed differently here and on {remote}; left alone")
