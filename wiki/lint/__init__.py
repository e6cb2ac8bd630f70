"""``wiki lint``: rules with stable codes over the wiki branch (docs/lint.md).

Importing this package registers the built-in rules in :data:`RULES`.
"""

from __future__ import annotations

from wiki.lint import (  # noqa: F401  (registers rules)
    content,
    marks,
    safety,
    sources,
    structure,
    subjects,
)
from wiki.lint.model import ERROR, RULES, WARNING, Finding, LintContext, LintReport, Rule, rule
from wiki.lint.runner import FIX_KIND, report_dict, run_lint, save_report, select_rules

__all__ = ["ERROR", "FIX_KIND", "RULES", "WARNING", "Finding", "LintContext", "LintReport",
           "Rule", "report_dict", "rule", "run_lint", "save_report", "select_rules"]
