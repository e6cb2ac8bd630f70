"""Shared helpers of the memory tests: land entries on a real wiki branch through review."""

from __future__ import annotations

from tests.conftest import ALICE, BOB
from wiki.review.proposals import approve, propose
from wiki.store.workspace import Wiki


def land(w: Wiki, files: dict[str, str], subject: str = "test entries",
         override: str | None = None) -> None:
    """Propose ``files`` (path -> text) as Alice and approve them as Bob (``override``:
    the reason to land content the review check flags, e.g. a planted injection)."""
    proposal = propose(w, {p: t.encode() for p, t in files.items()}, base=None,
                          kind="new",
                          subject=subject, author=ALICE).proposal
    approve(w, proposal.name, approver=BOB, override=override)


def entry(entry_id: str, title: str, body: str, **fields) -> str:
    """Entry text; list and mapping values are written as YAML flow style."""
    lines = [f"id: {entry_id}", f"title: {title}"]
    for key, value in fields.items():
        lines.append(f"{key}: {value}")
    return "---\n" + "\n".join(lines) + f"\n---\n{body}\n"


MILEAGE = "The mileage rate is 0.67 dollars per mile."


def land_mileage_fact(w: Wiki) -> None:
    """Land ``travel/mileage.md`` (id ``ml``), a fact entry holding ``mileage_rate: 0.67``."""
    land(w, {"travel/mileage.md": entry("ml", "Mileage rate", MILEAGE, summary=MILEAGE,
                                        type="fact", facts="{mileage_rate: 0.67}")})
