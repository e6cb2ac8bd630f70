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
from pathlib import Path


@cache
def _redactor():
    spec = importlib.util.find_spec("wiki.safety")
    own = Path(__file__).resolve().parent.parent  # this installation's wiki package
    if spec is None or spec.origin is None or Path(spec.origin).resolve().parent != own:
        return None  # absent (or another checkout's, found through an editable install)
    return getattr(importlib.import_module("wiki.safety"), "redact", None)


def redact_outbound(text: str) -> tuple[str, int]:
    """``(text with secrets masked, number of findings)``; ``(text, 0)`` when no redactor
    is installed."""
    redact = _redactor()
    if redact is None:
        return text, 0
    cleaned, findings = redact(text)
    return cleaned, len(findings or ())
