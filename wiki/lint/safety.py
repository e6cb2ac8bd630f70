"""Rules over hostile content (docs/robustness.md, H1-H2): W014 secret, W015
suspicious-instruction. Both read one scan per file (:func:`wiki.safety.scan.scan`) of every
file on the branch: entries (valid or not), ``wiki.toml``, anything else a push carried, and
each ``index.md`` less the listing the generator writes (its overview is a person's text,
and the LLM index walk reads it; the listing's titles and summaries are their entries'
findings). Lines and columns are the file's own."""

from __future__ import annotations

from wiki.lint.model import ERROR, WARNING, Finding, LintContext, rule
from wiki.safety.scan import INSTRUCTION, SECRET, scan
from wiki.safety.scan import Finding as ScanFinding
from wiki.store import indextree


def _scans(ctx: LintContext):
    """``path -> (entry id or None, findings)`` for every file of the branch whose name is
    text (W007 names the others), computed once."""
    cached = ctx.cache.get("safety")
    if cached is None:
        ids = {e.path: e.id for e in ctx.entries}
        cached = {}
        listings: dict[str, bytes | None] | None = None
        for path in sorted(p for p in ctx.snapshot.files if indextree.is_text_name(p)):
            text = (ctx.snapshot.read(path) or b"").decode("utf-8", "replace")
            found = scan(text)
            if path.rpartition("/")[2] == indextree.INDEX_NAME and found:
                if listings is None:
                    from wiki.lint.structure import expected_indexes

                    listings = expected_indexes(ctx)
                found = _not_generated(text, found, indextree.listing_part(listings.get(path)))
            cached[path] = (ids.get(path), found)
        ctx.cache["safety"] = cached
    return cached


def _not_generated(text: str, found: list[ScanFinding], listing: str) -> list[ScanFinding]:
    """The findings of an ``index.md`` ``text`` that the generated ``listing`` (marker and
    lines) does not hold at the place it would be: at or after the first marker."""
    cut = text.find(indextree.MARKER)
    return [f for f in found
            if cut == -1 or f.start < cut or text[f.start:f.end] not in listing]


def _findings(ctx: LintContext, code: str, severity: str, category: str, advice: str):
    for path, (entry_id, found) in sorted(_scans(ctx).items()):
        for item in found:
            if item.category == category:
                yield Finding(code, severity, path, f"{item.kind} ({item.rule}) "
                              f"{item.excerpt} at column {item.column}: {advice}", entry_id,
                              line=item.line)


@rule("W014", "secret", ERROR)
def secret(ctx: LintContext):
    """A secret (token, key, password, connection string with a password) in a file of
    the branch (an entry, an ``index.md`` overview, ``wiki.toml``). The branch's history
    keeps it: rotate the credential, then edit it out."""
    yield from _findings(ctx, "W014", ERROR, SECRET,
                         "rotate the credential, then propose an edit without it")


@rule("W015", "suspicious-instruction", WARNING)
def suspicious_instruction(ctx: LintContext):
    """Text that reads as instructions to a model (override attempts, role changes,
    exfiltration requests, encoded instructions, long encoded blobs, hidden and control
    characters) in a file of the branch (an entry, an ``index.md`` overview, ``wiki.toml``)."""
    yield from _findings(ctx, "W015", WARNING, INSTRUCTION,
                         "check that it is meant as knowledge, not as an instruction")
