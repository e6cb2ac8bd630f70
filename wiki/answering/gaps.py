"""The evidence-gap log: the questions ``wiki ask`` could not answer, read back.

``wiki ask`` appends one JSON object per line to ``<git common dir>/wiki/gaps.jsonl``
(:func:`wiki.answering.ask._record_gap`: ``time`` (ISO 8601 UTC), ``question``, ``commit``,
``confidence``, optionally ``missing_type``). The log is local derived state, written by
several processes and versions over time, so it is read defensively: a line that is not
UTF-8, not JSON, not an object or without a question is skipped with its line number and
reason, and the rest is returned.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from wiki.errors import WikiError
from wiki.files import STATE_LOG_HINT, STATE_LOG_LIMIT_BYTES, read_regular
from wiki.store.workspace import Wiki

LOG_NAME = "gaps.jsonl"


@dataclass(frozen=True)
class Gap:
    """One recorded evidence gap: when (``time``, ISO 8601 UTC as written), the
    ``question``, the wiki ``commit`` it was asked at, the word coverage (``confidence``,
    0-1, ``None`` when not recorded), ``missing_type`` (``percent``, ``money``, ... when the
    gap was a missing kind of value) and its ``line`` in the log (1-based)."""

    time: str
    question: str
    commit: str = ""
    confidence: float | None = None
    missing_type: str | None = None
    line: int = 0


@dataclass
class GapLog:
    """What :func:`read_gaps` found: ``gaps`` newest first (at most the limit), ``total``
    readable gaps in the log, ``skipped`` lines as ``(line, reason)``, and the log's
    ``path``."""

    path: Path
    gaps: list[Gap] = field(default_factory=list)
    total: int = 0
    skipped: list[tuple[int, str]] = field(default_factory=list)


def log_path(wiki: Wiki) -> Path:
    """Where ``wiki ask`` records evidence gaps for this repository."""
    return wiki.state_dir / LOG_NAME


def read_gaps(wiki: Wiki, limit: int | None = None) -> GapLog:
    """The recorded gaps, newest first (by ``time``; equal times: later lines first), at
    most ``limit``. A missing log is an empty result. Raises
    :class:`wiki.errors.NotRegularFileError` when the log is a directory, a FIFO or a
    device, :class:`wiki.errors.FileTooLargeError` past
    :data:`wiki.files.STATE_LOG_LIMIT_BYTES` and :class:`WikiError` naming the path when
    it cannot be read (no permission)."""
    path = log_path(wiki)
    result = GapLog(path)
    try:  # a regular file only: a FIFO would block the read, /dev/zero never end it
        raw = read_regular(path, STATE_LOG_LIMIT_BYTES, hint=STATE_LOG_HINT)
    except FileNotFoundError:
        return result
    except OSError as exc:
        raise WikiError(f"cannot read the evidence-gap log {path}: "
                        f"{exc.strerror or exc}") from exc
    found = []
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        gap, reason = _parse(line, number)
        if gap is None:
            result.skipped.append((number, reason))
        else:
            found.append(gap)
    found.sort(key=lambda g: (g.time, g.line), reverse=True)
    result.total = len(found)
    result.gaps = found if limit is None else found[:limit]
    return result


def _parse(line: bytes, number: int) -> tuple[Gap | None, str]:
    """One log line as a :class:`Gap`, or ``None`` and why it was skipped."""
    try:
        data = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except ValueError as exc:
        return None, f"not JSON ({exc.msg})"
    if not isinstance(data, dict):
        return None, f"not a JSON object (a {type(data).__name__})"
    question = data.get("question")
    if not isinstance(question, str) or not question.strip():
        return None, "no question"
    time = data.get("time")
    confidence = data.get("confidence")
    missing = data.get("missing_type")
    return Gap(time=time if isinstance(time, str) else "",
               question=question,
               commit=data["commit"] if isinstance(data.get("commit"), str) else "",
               confidence=_coverage(confidence),
               missing_type=missing if isinstance(missing, str) else None,
               line=number), ""


def _coverage(value: object) -> float | None:
    """A recorded coverage as a float in 0-1, or ``None`` when the line holds anything else
    (a string, a bool, ``NaN``, ``Infinity``, an integer too large for a float: a hand-edited
    log is read, never a crash)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if 0.0 <= number <= 1.0 else None
