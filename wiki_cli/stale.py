"""`wiki ask` output about revalidation: warnings on citations and the update proposal."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from wiki_cli.common import report, report_flags
from wiki_cli.render import out, plain


def citation_warnings(citation) -> None:
    """Print the revalidation warning (or note) under one citation line."""
    if citation.stale:
        out.print(plain(f"    warning: entry {citation.entry_id} is out of date: "
                        f"{citation.reason}"))
    elif citation.unverifiable:
        out.print(plain(f"    warning: entry {citation.entry_id} is unverifiable: "
                        f"{citation.reason}"))
    elif citation.checked and citation.reason:
        out.print(plain(f"    note: {citation.reason}"))


def update_command(paths: list[Path]) -> str:
    """The `wiki ingest` command that refreshes ``paths`` (relative to the current
    directory when inside it)."""
    here = Path.cwd().resolve()
    shown = []
    for path in paths:
        resolved = path.resolve()
        shown.append(os.path.relpath(resolved, here) if resolved.is_relative_to(here)
                     else str(resolved))
    return "wiki ingest " + " ".join(shlex.quote(p) for p in shown)


def update(wiki, answer, *, propose: bool, quiet: bool) -> dict[str, Any] | None:
    """Offer (or, with ``propose``, open) the proposal that re-ingests the changed
    sources of ``answer``; ``None`` when nothing changed. Messages go to stderr unless
    ``quiet``; returns the JSON view (``uris``, ``command``, ``proposal``, ``created``,
    ``skipped``)."""
    from wiki.answering.revalidate import local_paths, propose_update

    uris = (answer.revalidation or {}).get("update") or []
    if not uris:
        if propose and not quiet:
            report("nothing to propose: the sources of the answer's entries are unchanged")
        return None
    paths = local_paths(wiki, uris)
    data: dict[str, Any] = {"uris": uris, "command": update_command(paths) if paths else None,
                            "proposal": None, "created": False, "skipped": []}
    if not paths:
        if not quiet:
            report("the changed sources are not local files: re-ingest them by hand")
        return data
    if not propose:
        if not quiet:
            report(f"to propose an update of the out-of-date entries: {data['command']} "
                   "(or ask again with --propose)")
        return data
    result = propose_update(wiki, uris)
    data["skipped"] = [f"{s.path}: {s.reason}" for s in result.skipped]
    if result.proposal is not None:
        data["proposal"], data["created"] = result.proposal.name, result.proposal_created
    if quiet:
        return data
    for skipped in data["skipped"]:
        report(f"skipped {skipped}")
    if result.proposal is None:
        report("no update proposed: the wiki already matches these sources")
        return data
    report_flags(result.proposal)
    verb = "proposed" if result.proposal_created else "already proposed as"
    report(f"{verb} {result.proposal.name}: land it with `wiki approve "
           f"{result.proposal.name}` (by someone else)")
    return data
