"""`wiki ask` output about revalidation: warnings on citations and the update proposal
(:func:`wiki.questions.offer_update`)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from wiki_cli.common import report, report_proposal
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


def update_payload(offer) -> dict[str, Any] | None:
    """The JSON view of an :class:`wiki.questions.UpdateOffer` (``uris``,
    ``command``, ``proposal``, ``created``, ``skipped``); ``None`` when nothing changed."""
    if offer is None:
        return None
    data: dict[str, Any] = {"uris": offer.uris,
                            "command": update_command(offer.paths) if offer.paths else None,
                            "proposal": None, "created": False, "skipped": []}
    if offer.proposed is not None:
        data["skipped"] = [f"{s.path}: {s.reason}" for s in offer.proposed.skipped]
        if offer.proposed.proposal is not None:
            data["proposal"] = offer.proposed.proposal.name
            data["created"] = offer.proposed.proposal_created
    return data


def report_update(offer, *, propose: bool) -> None:
    """On stderr: the update of the answer's out-of-date entries that could be proposed
    (and how), or the one that ``propose`` opened."""
    if offer is None:
        if propose:
            report("nothing to propose: the sources of the answer's entries are unchanged")
        return
    if not offer.paths:
        report("the changed sources are not local files: re-ingest them by hand")
        return
    if offer.proposed is None:
        report(f"to propose an update of the out-of-date entries: "
               f"{update_command(offer.paths)} (or ask again with --propose)")
        return
    for skipped in offer.proposed.skipped:
        report(f"skipped {skipped.path}: {skipped.reason}")
    if offer.proposed.proposal is None:
        report("no update proposed: the wiki already matches these sources")
        return
    report_proposal(offer.proposed.proposal, offer.proposed.proposal_created, None,
                    name_on_stdout=False)
