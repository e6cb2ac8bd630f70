"""Rules over typed relations: W016 relation-cycle. (Relation targets that no entry has
are W006 broken-link's.)"""

from __future__ import annotations

from wiki.knowledge.relations import ACYCLIC, cycles
from wiki.lint.model import ERROR, Finding, LintContext, rule


@rule("W016", "relation-cycle", ERROR)
def relation_cycle(ctx: LintContext):
    """Entries that, through a chain of ``depends_on``, ``refines`` or ``derived_from``,
    relate to themselves (retracted entries left out). One finding per entry in the
    cycle, naming the whole cycle."""
    live = [e for e in ctx.entries if e.status != "retracted"]
    by_id = {e.id: e for e in live}
    for kind in ACYCLIC:
        for group in cycles(live, kind):
            for entry_id in group:
                entry = by_id[entry_id]
                yield Finding("W016", ERROR, entry.path, f"{kind} cycle among "
                              f"{', '.join(group)}; break one of its links",
                              entry.id)
