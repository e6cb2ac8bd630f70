"""W010: entries the post-commit hook marked because a commit changed a file they cite;
and :func:`revalidation_marks`, the marks themselves for other readers (MCP ``get``)."""

from __future__ import annotations

from collections.abc import Iterable

from wiki.lint.model import WARNING, Finding, LintContext, rule
from wiki.store.derived import open_index, open_synced
from wiki.store.index_url import index_exists
from wiki.store.workspace import Wiki


def revalidation_marks(wiki: Wiki, paths: Iterable[str] | None = None, *,
                       synced: bool = True) -> dict[str, list[dict]]:
    """``entry path -> [{uri, commit, marked_at}]``: the entries (all, or ``paths``) whose
    cited files changed in a commit after they were written (marked by ``wiki hook``).
    ``synced``: bring the index up to the wiki head first (an entry updated since is no
    longer marked); else read the marks as stored."""
    index = open_synced(wiki).index if synced else open_index(wiki)
    try:
        return index.marks(paths)
    finally:
        index.close()


@rule("W010", "needs-revalidation", WARNING)
def needs_revalidation(ctx: LintContext):
    """An entry whose cited file changed in a commit since it was written (marked by
    ``wiki hook``); re-ingest the source or confirm the entry."""
    if not index_exists(ctx.wiki):
        return  # no derived state yet: the hook has marked nothing
    # synced: an entry updated since its mark (landed by plain git too) is no longer marked
    marked = revalidation_marks(ctx.wiki)
    by_path = {e.path: e for e in ctx.entries}
    for path, items in sorted(marked.items()):
        entry = by_path.get(path)
        for item in items:
            yield Finding("W010", WARNING, path,
                          f"{item['uri']} changed in commit {item['commit'][:12]} after this "
                          "entry was written", entry.id if entry else None)
