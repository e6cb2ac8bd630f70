"""What ``wiki approve`` requires of a reviewed proposal: the review hash ``--expect`` must
match (:func:`review_hash`, :func:`expected_hash`), and an explicit, recorded override of
the review check's flags (:func:`override_reason`, :func:`override_trailers`; the flags
come from :mod:`wiki.review.check`). Secrets and objects git refuses are never
overridable."""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

from wiki.errors import ConfigError, ReviewFlaggedError
from wiki.review.check import INVALID_TREE, LOCKS_OUT, UNRELATED, summary, tree_items
from wiki.review.metadata import escaped
from wiki.review.names import command_line
from wiki.safety.scan import screen
from wiki.store.workspace import Wiki

if TYPE_CHECKING:
    from wiki.review.proposals import Proposal

OVERRIDE_TRAILER = "Wiki-Override"
OVERRIDDEN_TRAILER = "Wiki-Overridden-Flag"
MAX_FLAGS = 100
"""Overridden flags listed one per trailer; more are counted."""
MIN_EXPECT_DIGITS = 12
"""The shortest prefix of the review hash that ``approve --expect`` accepts."""


def review_hash(wiki: Wiki, proposal: Proposal) -> str:
    """The sha256 (64 hex digits) over the sorted ``(path, mode and object before, mode and
    object after)`` of every tree entry ``proposal`` changes, ``index.md`` files and
    submodules included: what a reviewer saw in ``wiki diff``."""
    before = tree_items(wiki, proposal.base)
    after = tree_items(wiki, proposal.tip)
    digest = hashlib.sha256()
    for path in sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p)):
        old, new = before.get(path), after.get(path)
        digest.update(f"{path}\0{f'{old.mode:o} {old.sha}' if old else '-'}\0"
                      f"{f'{new.mode:o} {new.sha}' if new else '-'}\n"
                      .encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def expected_hash(expect: str) -> str:
    """``approve --expect``'s value checked: the full review hash or a prefix of at least
    :data:`MIN_EXPECT_DIGITS` hex digits, lower-cased. Raises :class:`ConfigError`."""
    value = expect.strip().lower()
    if not re.fullmatch(r"[0-9a-f]+", value) or len(value) < MIN_EXPECT_DIGITS:
        raise ConfigError(f"--expect {expect!r}: give the review hash from `wiki diff` (64 hex "
                          f"digits; a prefix of at least {MIN_EXPECT_DIGITS} is accepted)")
    return value


def override_reason(proposal: Proposal, override: str | None) -> str | None:
    """The one-line override reason to record, or ``None`` for an unflagged proposal.
    Raises :class:`ReviewFlaggedError` (flagged, no override; or a secret or an object git
    refuses, which no override lands), :class:`ConfigError` (a blank reason or one with
    control characters) and
    :class:`SecretError` (a secret in the reason)."""
    if override is not None:
        if not override.strip():
            raise ConfigError("--override-flags needs a reason (why the flagged content "
                              "may land)")
        if any(not (c.isprintable() or c in " \t\n") for c in override):
            raise ConfigError("the --override-flags reason holds control or invisible "
                              "characters; write it as plain text")
    if not proposal.flags:
        return None
    blocking = [f for f in proposal.flags if not f.overridable]
    if blocking:
        first = blocking[0]
        if first.kind == LOCKS_OUT:
            why = ("an invalid wiki.toml cannot be overridden (every command would stop on "
                   "it, approve of its fix included)", "with a valid one")
        elif first.category == UNRELATED:
            why = ("a history that shares no commit with the wiki was never reviewed (no "
                   "override lands it)", "as commits on the wiki branch")
        elif first.category == INVALID_TREE:
            why = (f"git refuses the object ({first.detail}; no override lands it)",
                   "with `wiki propose`")
        else:
            why = ("secrets cannot be overridden (they would be pushed to every clone)",
                   "without them (or with --redact)")
        raise ReviewFlaggedError(
            f"proposal {proposal.name} holds {summary(blocking)} flag(s), e.g. "
            f"{first.path}: {first.kind}; {why[0]}: "
            f"`{command_line('reject', proposal.name, '--reason ...')}` and propose it again "
            f"{why[1]}", blocking)
    if override is None:
        raise ReviewFlaggedError(
            f"proposal {proposal.name} is flagged ({summary(proposal.flags)}): read "
            f"`{command_line('diff', proposal.name)}`, then land it anyway with "
            f"`{command_line('approve', proposal.name, '--override-flags REASON')}` or reject "
            "it", proposal.flags)
    reason, _ = screen(" ".join(override.split()), "the --override-flags reason")
    return reason


def override_trailers(proposal: Proposal, reason: str | None) -> str:
    """``Wiki-Override: <reason>`` and one ``Wiki-Overridden-Flag:`` per flag (at most
    :data:`MAX_FLAGS`, then a count)."""
    if reason is None:
        return ""
    lines = [f"{OVERRIDE_TRAILER}: {reason}"]
    lines += [f"{OVERRIDDEN_TRAILER}: {escaped(str(flag))}"
              for flag in proposal.flags[:MAX_FLAGS]]
    if len(proposal.flags) > MAX_FLAGS:
        lines.append(f"{OVERRIDDEN_TRAILER}: ... and {len(proposal.flags) - MAX_FLAGS} more")
    return "".join(line + "\n" for line in lines)

