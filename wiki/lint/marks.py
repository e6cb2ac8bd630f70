"""W010: entries the post-commit hook marked because a commit changed a file they cite."""

from __future__ import annotations

from indexes.marks import marks
from wiki.lint.model import WARNING, Finding, LintContext, rule
from wiki.store.derived import open_index


@rule("W010", "needs-revalidation", WARNING)
def needs_revalidation(ctx: LintContext):
    """An entry whose cited file changed in a commit since it was written (marked by
    ``wiki hook``); re-ingest the source or confirm the entry."""
    if not ctx.wiki.database_path().exists():
        return  # no derived state yet: the hook has marked nothing
    index = open_index(ctx.wiki)  # marks are read as stored; no sync needed for them
    try:
        marked = marks(index.conn)
    finally:
        index.close()
    by_path = {e.path: e for e in ctx.entries}
    for path, items in sorted(marked.items()):
        entry = by_path.get(path)
        for item in items:
            yield Finding("W010", WARNING, path,
                          f"{item['uri']} changed in commit {item['commit'][:12]} after this "
                          "entry was written", entry.id if entry else None)
