"""Rules over hostile content in entries (docs/robustness.md, H1-H2): W014 secret, W015
suspicious-instruction. Both read one scan per file (:func:`wiki.safety.scan.scan`) of every
entry file on the branch, valid or not, so lines and columns are the file's own."""

from __future__ import annotations

from wiki.lint.model import ERROR, WARNING, Finding, LintContext, rule
from wiki.safety.scan import INSTRUCTION, SECRET, scan


def _scans(ctx: LintContext):
    """``path -> (entry id or None, findings)`` for every entry file, computed once."""
    cached = ctx.cache.get("safety")
    if cached is None:
        ids = {e.path: e.id for e in ctx.entries}
        cached = {}
        for path in ctx.snapshot.entry_paths():
            text = (ctx.snapshot.read(path) or b"").decode("utf-8", "replace")
            cached[path] = (ids.get(path), scan(text))
        ctx.cache["safety"] = cached
    return cached


def _findings(ctx: LintContext, code: str, severity: str, category: str, advice: str):
    for path, (entry_id, found) in sorted(_scans(ctx).items()):
        for item in found:
            if item.category == category:
                yield Finding(code, severity, path, f"{item.kind} ({item.rule}) "
                              f"{item.excerpt} at column {item.column}: {advice}", entry_id,
                              line=item.line)


@rule("W014", "secret", ERROR)
def secret(ctx: LintContext):
    """A secret (token, key, password, connection string with a password) in an entry
    file. The branch's history keeps it: rotate the credential, then edit it out."""
    yield from _findings(ctx, "W014", ERROR, SECRET,
                         "rotate the credential, then propose an edit without it")


@rule("W015", "suspicious-instruction", WARNING)
def suspicious_instruction(ctx: LintContext):
    """Text that reads as instructions to a model (override attempts, role changes,
    exfiltration requests, long encoded blobs, hidden characters) in an entry file."""
    yield from _findings(ctx, "W015", WARNING, INSTRUCTION,
                         "check that it is meant as knowledge, not as an instruction")
