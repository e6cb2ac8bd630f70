"""Review flags of what a proposal carries besides its files, and how that text is copied.

A hand-made proposal controls more than its tree: its branch name and every byte of its
commit objects (author and committer names, emails and dates, extra headers such as
``encoding`` or a signature, the message with its trailers). All of it lands in the wiki's
history (the commits become ancestors of the wiki branch) and some of it is copied into the
landing commit (the subject, the proposers, the name). :func:`name_flags` and
:func:`commit_flags` scan it with the same table as file content
(:func:`wiki.review.check.content_flags`), so a secret anywhere is the never-overridable
``secret`` flag and instruction text or control characters are flags a reviewer must
override; :func:`escaped` writes copied metadata so that no control, bidi or invisible
character reaches a commit message.
"""

from __future__ import annotations

import subprocess

from wiki.errors import WikiError
from wiki.review.check import (
    CONTROL,
    INSTRUCTION,
    SECRET_FLAG,
    ReviewFlag,
    content_flags,
    not_text,
)
from wiki.store.workspace import Wiki

SIGNATURE_HEADERS = frozenset({"gpgsig", "gpgsig-sha256", "mergetag"})
"""Headers holding armoured signatures: scanned for secrets and control characters only
(their base64 is no text a person or model reads as instructions)."""
_SEPARATORS = str.maketrans("-_./", "    ")
"""A ref name holds no spaces: its words are joined by these, read as spaces by the
instruction rules (``ignore-all-previous-instructions``)."""
_TOKEN_SEPARATORS = str.maketrans("-/", "  ")
"""The separators the secret rules read as spaces in a ref name (``fix-ghp_...``; a token
keeps its own ``_`` and ``.``)."""
_UTF8 = {"utf-8", "utf8"}


def escaped(text: str) -> str:
    """``text`` on one line with every character that is not printable (newlines, C0/C1
    controls, bidi and zero-width characters) written as its escape (``\\x1b``,
    ``\\u202e``), and bytes that were not UTF-8 (surrogate escapes) as ``\\xNN``: what a
    commit message may copy from a proposal without forging a trailer or acting on a
    terminal."""
    out = []
    for char in text:
        if "\udc80" <= char <= "\udcff":
            out.append(f"\\x{ord(char) - 0xDC00:02x}")
        else:
            out.append(char if char.isprintable() else repr(char)[1:-1])
    return "".join(out)


def name_flags(ref: str) -> list[ReviewFlag]:
    """Flags of a proposal's branch name (``ref``, the full ref name): secrets (also with
    ``-`` and ``/`` read as spaces), instruction text (also with ``-_./`` read as spaces)
    and control or bidi characters, located at ``branch name <ref without refs/heads/>``."""
    name = ref.removeprefix("refs/heads/")
    where = f"branch name {name}"
    flags = content_flags(name, where, None)
    for table, only in ((_TOKEN_SEPARATORS, None), (_SEPARATORS, frozenset({INSTRUCTION}))):
        spaced = name.translate(table)
        if spaced != name:
            seen = {f.rule for f in flags}
            flags += [f for f in content_flags(spaced, where, None, only)
                      if f.rule not in seen]
    return [ReviewFlag(f.rule, f.kind, where, 0, 0, f.category, "in the branch name: "
                       + f.detail) for f in flags]


def commit_flags(wiki: Wiki, base: str, tip: str) -> list[ReviewFlag]:
    """Flags of every commit object of ``base..tip``, read raw (``git cat-file``): each
    author and committer name, email and date, every other header, and the message
    (trailers included). A commit object that is not UTF-8 text (NUL bytes, another
    encoding) or declares an ``encoding`` other than UTF-8 is ``R007`` in the secret
    category: what readers see would not be what was scanned. Raises :class:`WikiError`
    when git fails."""
    done = subprocess.run(["git", f"--git-dir={wiki.repo.git_dir}", "rev-list", tip,
                           "--not", base], capture_output=True)
    if done.returncode != 0:
        raise WikiError(f"git rev-list {base[:12]}..{tip[:12]} failed: "
                        f"{done.stderr.decode().strip()}")
    shas = done.stdout.decode().split()
    raws = wiki.store.read_many(shas)
    flags: list[ReviewFlag] = []
    for sha in shas:
        flags += _one_commit(sha, raws.get(sha, b""))
    return flags


def _one_commit(sha: str, raw: bytes) -> list[ReviewFlag]:
    where = f"commit {sha[:12]}"
    problem = not_text(raw)
    if problem:
        return [ReviewFlag("R007", "not-text", f"{where} metadata", 0, 0, SECRET_FLAG,
                           f"the commit object: {problem}")]
    head, _, message = raw.decode("utf-8").partition("\n\n")
    flags: list[ReviewFlag] = []
    for key, value in _headers(head):
        if key in ("tree", "parent"):
            continue
        if key == "encoding" and value.strip().lower() not in _UTF8:
            flags.append(ReviewFlag("R007", "not-text", f"{where} encoding header", 0, 0,
                                    SECRET_FLAG, f"declares encoding {escaped(value)!r}: "
                                    "readers re-encode its message, so they would not see "
                                    "what was scanned"))
        if key in ("author", "committer"):
            name, _, rest = value.partition("<")
            email, _, date = rest.rpartition(">")
            parts = (("name", name.strip()), ("email", email), ("date", date.strip()))
            for part, text in parts:
                flags += _located(content_flags(text, f"{where} {key} {part}", None),
                                  f"in the {key}'s {part}")
            continue
        categories = frozenset({SECRET_FLAG, CONTROL}) if key in SIGNATURE_HEADERS else None
        flags += _located(content_flags(value, f"{where} {key} header", None, categories),
                          f"in the {key} header")
    flags += content_flags(message, f"{where} message", None)
    return flags


def _headers(head: str) -> list[tuple[str, str]]:
    """``(key, value)`` of a commit object's header lines; a line starting with a space
    continues the previous value (signatures)."""
    found: list[tuple[str, str]] = []
    for line in head.split("\n"):
        if line.startswith(" ") and found:
            key, value = found[-1]
            found[-1] = (key, f"{value}\n{line[1:]}")
        else:
            key, _, value = line.partition(" ")
            found.append((key, value))
    return found


def _located(flags: list[ReviewFlag], place: str) -> list[ReviewFlag]:
    """The flags of one header value, at line 0 with ``place`` before the detail."""
    return [ReviewFlag(f.rule, f.kind, f.path, 0, 0, f.category, f"{place}: {f.detail}")
            for f in flags]
