"""Running the rules: selection, sorting, counts, the ``--fix`` proposal and the saved
report."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from wiki.errors import ConfigError
from wiki.lint.model import ERROR, RULES, Finding, LintContext, LintReport

FIX_KIND = "lint-fix"


def select_rules(select: Iterable[str] | None = None,
                 ignore: Iterable[str] | None = None) -> list[str]:
    """The codes to run, sorted. A selector is a code (``W001``), a code prefix (``W``,
    ``W00``) or a rule name (``stale-source``); ``None`` selects every rule. Raises
    :class:`ConfigError` for a selector that matches no rule."""

    def matching(selectors: Iterable[str]) -> set[str]:
        codes: set[str] = set()
        for raw in selectors:
            selector = raw.strip()
            if not selector:
                continue
            hits = {c for c, r in RULES.items()
                    if c.startswith(selector.upper()) or r.name == selector.lower()}
            if not hits:
                raise ConfigError(f"unknown lint rule {selector!r} (rules: "
                                  f"{', '.join(sorted(RULES))})")
            codes |= hits
        return codes

    chosen = set(RULES) if select is None else matching(select)
    return sorted(chosen - matching(ignore or ()))


def run_lint(wiki, select: set[str] | None = None, ignore: set[str] | None = None, *,
             fix: bool = False, author=None) -> LintReport:
    """Lint the wiki head of ``wiki`` (a :class:`wiki.store.workspace.Wiki`) with the selected
    rules; never writes to the branch. With ``fix``, the safe fixes the rules found become
    ONE proposal (kind ``lint-fix``, by ``author`` or the current git identity), the
    findings it fixes move to ``report.fixed`` and ``report.proposal`` is set.

    Raises :class:`ConfigError` for an unknown selector or a bad ``wiki.toml`` and
    ``NotInitializedError`` without a wiki branch."""
    codes = select_rules(select, ignore)
    commit = wiki.require_head()
    snapshot = wiki.snapshot(commit)
    entries, invalid = snapshot.entries()
    ctx = LintContext(wiki, snapshot, snapshot.config(), entries, invalid)
    findings: list[Finding] = []
    try:
        for code in codes:
            findings.extend(RULES[code].check(ctx))
    finally:
        for close in ctx.cleanup:
            close()
    findings.sort(key=lambda f: (f.path, f.code, f.line or 0, f.message))
    report = LintReport(commit, codes)
    if fix and ctx.fixes:
        report.fixed = [f for f in findings if f.fixable]
        findings = [f for f in findings if not f.fixable]
        opened = _propose(wiki, ctx.fixes, report.fixed, author, commit)
        report.proposal, report.proposal_created = opened.proposal, opened.created
        if report.proposal is None:
            findings, report.fixed = sorted(findings + report.fixed, key=_order), []
    report.findings = findings
    for finding in findings:
        report.counts[finding.code] = report.counts.get(finding.code, 0) + 1
    report.errors = sum(f.severity == ERROR for f in findings)
    report.warnings = len(findings) - report.errors
    report.fixable = sum(f.fixable for f in findings)
    return report


def _order(finding: Finding):
    return finding.path, finding.code, finding.line or 0, finding.message


def _propose(wiki, changes: dict[str, bytes | None], fixed: list[Finding], author,
             base: str):
    from wiki.review.proposals import ProposalOpened, propose

    codes = sorted({f.code for f in fixed})
    lines = [f"- {f.code} {f.path}: {f.message}" for f in fixed]
    try:
        return propose(wiki, changes, base=base, kind=FIX_KIND,
                       subject=f"lint: fix {len(fixed)} finding(s) ({', '.join(codes)})",
                       body="Safe fixes from `wiki lint --fix`:\n\n" + "\n".join(lines),
                       author=author)
    except ValueError:  # every fix is already on the branch
        return ProposalOpened(None)


def report_dict(report: LintReport) -> dict[str, Any]:
    """The report as plain JSON values (the ``--format json`` shape)."""
    proposal = report.proposal
    return {
        "commit": report.commit,
        "rules": report.rules,
        "summary": {"errors": report.errors, "warnings": report.warnings,
                    "fixable": report.fixable, "fixed": len(report.fixed),
                    "counts": dict(sorted(report.counts.items()))},
        "findings": [dataclasses.asdict(f) for f in report.findings],
        "fixed": [dataclasses.asdict(f) for f in report.fixed],
        "proposal": None if proposal is None else {
            "name": proposal.name, "created": report.proposal_created,
            "paths": list(proposal.paths)},
    }


def save_report(wiki, report: LintReport, when: dt.datetime | None = None) -> Path:
    """Write the report as JSON to ``<state dir>/lint/<UTC time>.json``; returns the path.
    Raises ``OSError`` when the state directory cannot be written."""
    when = when or dt.datetime.now(dt.UTC)
    folder = Path(wiki.state_dir) / "lint"
    folder.mkdir(parents=True, exist_ok=True)
    stem = when.strftime("%Y%m%dT%H%M%S.%fZ")
    path = folder / f"{stem}.json"
    path.write_text(json.dumps(report_dict(report), ensure_ascii=False, indent=2) + "\n",
                    encoding="utf-8")
    return path
