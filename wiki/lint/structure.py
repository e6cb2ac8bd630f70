"""Rules over the files themselves: W005 index-drift and W007 schema-error."""

from __future__ import annotations

from wiki.lint.model import ERROR, Finding, LintContext, rule
from wiki.store import indextree


def expected_indexes(ctx: LintContext) -> dict[str, bytes | None]:
    """``index path -> bytes`` (``None``: should not exist) that regenerating every folder
    of the branch would give, keeping each existing overview."""
    files = ctx.snapshot.files
    paths = ctx.snapshot.entry_paths()
    folders = {f for p in paths for f in indextree.ancestors(p)} | {""}
    folders |= {indextree.parent(p) for p in files
                if p.rpartition("/")[2] == indextree.INDEX_NAME}
    parsed = {e.path: e for e in ctx.entries}

    def listing(path: str) -> indextree.Listing:
        entry = parsed.get(path)
        if entry is None:
            return indextree.Listing(path.rpartition("/")[2].removesuffix(".md"), "")
        return indextree.Listing(entry.title, entry.summary)

    def existing(path: str) -> str | None:
        data = ctx.snapshot.read(path)
        return data.decode("utf-8", "replace") if data is not None else None

    return indextree.regenerate(paths, folders, listing, existing)


@rule("W005", "index-drift", ERROR)
def index_drift(ctx: LintContext):
    """An ``index.md`` that differs from its regeneration, is missing, or lists a folder
    that has no entries. Fixable: the regenerated files."""
    for path, want in sorted(expected_indexes(ctx).items()):
        have = ctx.snapshot.read(path)
        if have == want:
            continue
        if want is None:
            message = "index.md of a folder without entries"
        elif have is None:
            message = "index.md is missing"
        else:
            message = "index.md differs from what the entries' frontmatter generates"
        ctx.fixes[path] = want
        yield Finding("W005", ERROR, path, message, fixable=True)


@rule("W007", "schema-error", ERROR)
def schema_error(ctx: LintContext):
    """An entry file that does not parse or validate, a markdown file whose name is not
    UTF-8 (so it is no entry), and ids carried by two entries."""
    for path in sorted(ctx.snapshot.files):
        if path.endswith(".md") and not indextree.is_text_name(path):
            shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            yield Finding("W007", ERROR, shown, "the file name is not UTF-8 text, so it is "
                          "not read as an entry; rename it with plain git")
    for error in ctx.invalid:
        what = f"field '{error.field}': " if error.field else ""
        yield Finding("W007", ERROR, error.path, what + " ".join(error.reason.split()),
                      line=error.line)
    for entry_id, entries in sorted(ctx.by_id.items()):
        if len(entries) > 1:
            for entry in entries:
                others = sorted(e.path for e in entries if e is not entry)
                yield Finding("W007", ERROR, entry.path, f"duplicate id {entry_id!r}, also "
                              f"in {', '.join(others)}", entry_id)
