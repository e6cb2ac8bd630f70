"""The evidence-gap log: the questions ``wiki ask`` could not answer, recorded and read back.

``wiki ask`` appends one JSON object per line to ``<git common dir>/wiki/gaps.jsonl``
(:func:`record_gap`: ``time`` (ISO 8601 UTC), ``question``, ``commit``,
``confidence``, optionally ``missing_type``). The log is local derived state, written by
several processes and versions over time, so it is read defensively: a line that is not
UTF-8, not JSON, not an object or without a question is skipped with its line number and
reason, and the rest is returned.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from wiki.errors import WikiError
from wiki.files import STATE_LOG_HINT, STATE_LOG_LIMIT_BYTES, append_regular, read_regular
from wiki.store.disk_faults import storage_cause
from wiki.store.entry import now_iso
from wiki.store.notices import notify
from wiki.store.workspace import Wiki

if TYPE_CHECKING:
    from wiki.answering.ask import Answer

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


GAP_QUESTION_CHARS = 2000
"""A recorded gap keeps this much of its question (a caller of ``wiki serve`` may send a
megabyte per question; the log must not grow by that much per call)."""


def record_gap(wiki: Wiki, answer: Answer) -> None:
    """Append the gap to ``gaps.jsonl`` for lint (the question clipped to
    :data:`GAP_QUESTION_CHARS`); a disk that refuses it (read-only, full) loses only this
    record, said in a notice, never the answer. Raises
    :class:`wiki.errors.NotRegularFileError` when ``gaps.jsonl`` is a directory, a FIFO or
    a device (:func:`wiki.files.append_regular`)."""
    question = answer.question if len(answer.question) <= GAP_QUESTION_CHARS else \
        answer.question[:GAP_QUESTION_CHARS] + "…"
    line = {"time": now_iso(), "question": question, "commit": answer.commit,
            "confidence": round(answer.coverage, 4)}
    if answer.missing_type:
        line["missing_type"] = answer.missing_type
    if answer.gap_reason is not None:
        line["gap_reason"] = answer.gap_reason.code
    try:  # a regular file only: a directory or FIFO there is an error naming it
        wiki.state_dir.mkdir(parents=True, exist_ok=True)
        append_regular(log_path(wiki), json.dumps(line, ensure_ascii=False) + "\n")
    except OSError as exc:
        cause = storage_cause(exc)
        if cause is None:
            raise
        notify(f"note: the evidence gap was not recorded in {log_path(wiki)} "
               f"({cause})")
