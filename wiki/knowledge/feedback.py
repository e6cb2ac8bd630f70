"""Outcomes of procedures: ``wiki feedback ENTRY worked|failed``.

Outcomes are events, not knowledge, so they do not go through review one by one: each is
appended to ``<git common dir>/wiki/feedback.jsonl`` (one JSON object per line: time,
entry id, path, outcome, who) next to ``gaps.jsonl``, and the counters are computed from
that log. The log is not the derived SQLite database, so ``wiki index --rebuild`` or
deleting the database never loses it. To share the counters with the team,
:func:`propose_counts` writes them into the entry's frontmatter (``outcomes: {worked,
failed, last}``) as one ordinary proposal that someone else approves (docs/decisions.md).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from wiki.errors import ConfigError
from wiki.files import STATE_LOG_HINT, STATE_LOG_LIMIT_BYTES, append_regular, read_regular
from wiki.store.entry import Entry
from wiki.store.gitrepo import Identity, current_identity
from wiki.store.lookup import find_entry
from wiki.store.workspace import Wiki

OUTCOMES = ("worked", "failed")
LOG_NAME = "feedback.jsonl"


@dataclass
class Counts:
    """Outcomes of one entry: ``worked`` and ``failed`` counts (the local log plus what
    the entry's ``outcomes`` field already records) and the ``last`` time reported."""

    entry_id: str
    path: str
    worked: int = 0
    failed: int = 0
    last: str = ""
    recorded: dict | None = None
    """The ``outcomes`` field on the branch, if any (counts already shared)."""


def record(wiki: Wiki, target: str, outcome: str, *, who: Identity | None = None) -> Counts:
    """Append one outcome of procedure ``target`` (id or path) and return its counts.
    Raises ``ConfigError`` for an unknown outcome or an entry that is not a procedure,
    ``NotFoundError`` for an unknown entry and ``NotRegularFileError`` when the log is a
    directory, a FIFO or a device (:mod:`wiki.files`)."""
    if outcome not in OUTCOMES:
        raise ConfigError(f"outcome must be worked or failed, got {outcome!r}")
    entry = find_entry(wiki, target)
    if entry.type != "procedure":
        raise ConfigError(f"{entry.path}: only procedures record outcomes (type is "
                          f"{entry.type}); set 'type: procedure' first")
    who = who or current_identity(wiki.repo)
    wiki.state_dir.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # orders events
    line = {"time": stamp, "entry_id": entry.id, "path": entry.path,
            "outcome": outcome, "by": who.email}
    append_regular(wiki.state_dir / LOG_NAME, json.dumps(line, ensure_ascii=False) + "\n")
    return counts(wiki, entry)


def counts(wiki: Wiki, entry: Entry | str) -> Counts:
    """The counts of ``entry`` (an entry or its id/path): the field on the branch plus
    the local log's events newer than the field's ``last``. Raises
    ``NotRegularFileError`` when the log is not a regular file and ``FileTooLargeError``
    when it holds more than :data:`wiki.files.STATE_LOG_LIMIT_BYTES`."""
    if isinstance(entry, str):
        entry = find_entry(wiki, entry)
    recorded = entry.meta.get("outcomes") if isinstance(entry.meta.get("outcomes"), dict) \
        else None
    result = Counts(entry.id, entry.path, recorded=recorded)
    since = ""
    if recorded:
        result.worked = int(recorded.get("worked") or 0)
        result.failed = int(recorded.get("failed") or 0)
        since = result.last = str(recorded.get("last") or "")
    path = wiki.state_dir / LOG_NAME
    try:
        log = read_regular(path, STATE_LOG_LIMIT_BYTES, hint=STATE_LOG_HINT)
    except FileNotFoundError:
        log = b""
    if log:
        for raw in log.decode("utf-8", errors="replace").splitlines():
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(event, dict) or event.get("outcome") not in OUTCOMES \
                    or not isinstance(event.get("time"), str):
                continue  # a hand-edited or foreign line: not an outcome this log wrote
            if event.get("entry_id") != entry.id or event["time"] <= since:
                continue
            setattr(result, event["outcome"], getattr(result, event["outcome"]) + 1)
            result.last = max(result.last, event["time"])
    return result


def propose_counts(wiki: Wiki, target: str, *, author: Identity | None = None):
    """Propose writing the current counts of ``target`` into its ``outcomes`` field.
    Returns a :class:`wiki.review.proposals.ProposalOpened`, its ``proposal`` ``None`` when
    the field already says so."""
    from wiki.review.proposals import ProposalOpened, propose

    snapshot = wiki.snapshot()
    entry = find_entry(wiki, target, snapshot)
    now = counts(wiki, entry)
    field = {"worked": now.worked, "failed": now.failed, "last": now.last}
    if now.recorded == field:
        return ProposalOpened(None)
    changed = entry.updated_with(outcomes=field)
    return propose(wiki, {entry.path: changed.to_bytes()}, base=snapshot.commit,
                   kind="feedback",
                   subject=f"outcomes of {entry.title}: {now.worked} worked, "
                           f"{now.failed} failed", author=author)
