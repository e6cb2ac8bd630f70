"""Redaction of every text before it leaves the process (ROBUSTNESS H2).

:func:`redact_outbound` is the single choke point: the LLM client passes every message
through it before calling a provider (hosted or local). Secrets are found and masked by
:func:`wiki.safety.scan.redact`, the same pattern table that guards every proposal.
"""

from __future__ import annotations

from wiki.safety.scan import redact


def redact_outbound(text: str) -> tuple[str, int]:
    """``(text with secrets replaced by [REDACTED:<kind>], number of secrets found)``."""
    cleaned, findings = redact(text)
    return cleaned, len(findings)
