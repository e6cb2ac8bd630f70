"""Proposal names: which ones a reviewer can address, and how a command line names one.

A proposal's name is the rest of its ref after ``refs/heads/<wiki>-proposals/``, and a
branch made with plain git can hold anything ``git check-ref-format`` accepts: ``-rf``,
``--x=y``, ``@``, ``team/fix``, letters of any script, but also bidi controls, zero-width
and no-break spaces, a decomposed (not NFC) spelling, or bytes that are not UTF-8 (git
itself refuses ASCII controls, spaces, ``~^:?*[\\``, ``..``, ``@{`` and ``.lock``). A name
is *readable* when what a terminal shows is what a person types: every such name is
listed and addressed by its exact spelling (after ``--`` when it starts with a dash, or as
the full ref). Any other is not listed as a proposal; :func:`unreadable` says why, so
``wiki proposals`` and ``wiki doctor`` can tell the reviewer to rename it with git.
"""

from __future__ import annotations

import unicodedata

from wiki.review.metadata import escaped


def unreadable(name: str) -> str | None:
    """Why proposal ``name`` cannot be shown and typed as itself, or ``None`` when it can.
    ``name`` is decoded from the ref's bytes with surrogate escapes (bytes that are not
    UTF-8 become U+DC80-U+DCFF)."""
    if not name:
        return "an empty name"
    raw = next((c for c in name if "\udc80" <= c <= "\udcff"), None)
    if raw is not None:
        return f"not UTF-8 text (byte 0x{ord(raw) - 0xDC00:02X})"
    hidden = next((c for c in name if not c.isprintable()), None)
    if hidden is not None:
        label = unicodedata.name(hidden, unicodedata.category(hidden))
        return (f"holds U+{ord(hidden):04X} ({label}), which a terminal does not show as "
                "itself")
    if unicodedata.normalize("NFC", name) != name:
        return "not in Unicode NFC form (the same letters typed would be another name)"
    return None


def command_line(command: str, name: str, options: str = "") -> str:
    """``wiki COMMAND NAME OPTIONS`` as a person should type it: a name that starts with a
    dash goes last, after ``--`` (``wiki approve --override-flags REASON -- -rf``), so the
    parser never reads it as an option."""
    shown = escaped(name)
    if name.startswith("-"):
        return " ".join(part for part in ("wiki", command, options, "--", shown) if part)
    return " ".join(part for part in ("wiki", command, shown, options) if part)
