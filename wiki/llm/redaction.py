"""Redaction of every text before it leaves the process (ROBUSTNESS H2).

:func:`redact_outbound` is the single choke point: the LLM client passes every message
through it before calling a provider (hosted or local). It uses ``wiki.safety.redact``
when that module exists (``redact(text) -> (text, findings)``), and passes text through
unchanged otherwise.
"""

from __future__ import annotations

import importlib
import importlib.util
from functools import cache


@cache
def _redactor():
    if importlib.util.find_spec("wiki.safety") is None:
        return None
    return getattr(importlib.import_module("wiki.safety"), "redact", None)


def redact_outbound(text: str) -> tuple[str, int]:
    """``(text with secrets masked, number of findings)``; ``(text, 0)`` when no redactor
    is installed."""
    redact = _redactor()
    if redact is None:
        return text, 0
    cleaned, findings = redact(text)
    return cleaned, len(findings or ())
