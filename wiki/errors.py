"""Typed errors of the ``wiki`` package. The CLI maps each class to one exit code."""

from __future__ import annotations


class WikiError(Exception):
    """Base class of every error raised by ``wiki``; ``str(err)`` is a one-line message
    that names the file, field or value and says what to do next."""


class NotARepositoryError(WikiError):
    """The path is not inside a git repository."""


class NotInitializedError(WikiError):
    """The repository has no wiki branch yet (run ``wiki init``)."""


class AlreadyInitializedError(WikiError):
    """``wiki init`` found the wiki branch already there."""


class ConfigError(WikiError):
    """``wiki.toml`` or a setting is invalid."""


class IdentityError(WikiError):
    """git cannot tell who the user is (no ``user.name``/``user.email``)."""


class EntryError(WikiError):
    """An entry or source file is malformed: carries ``path``, ``field`` and ``line``.
    The message, which quotes the bad value, is clipped to :data:`MESSAGE_LIMIT`
    characters: the value is stored text, and a 10,000-character title must not make a
    10,000-character error line."""

    MESSAGE_LIMIT = 300

    def __init__(self, path: str, message: str, *, field: str | None = None,
                 line: int | None = None):
        if len(message) > self.MESSAGE_LIMIT:
            message = message[:self.MESSAGE_LIMIT] + "..."
        self.path, self.field, self.line, self.reason = path, field, line, message
        where = path + (f":{line}" if line else "")
        what = f"field '{field}': " if field else ""
        super().__init__(f"{where}: {what}{message}")


class SourceError(WikiError):
    """A source cannot be read (too large, binary, not UTF-8, unreadable)."""

    def __init__(self, path: str, message: str):
        self.path, self.reason = path, message
        super().__init__(f"{path}: {message}")


class SourceNotAllowedError(SourceError):
    """The reader's source policy (:mod:`wiki.adapters.policy`) refuses to read a source:
    a file outside the reader's source roots, a ``git:`` path leaving the repository, an
    address that is not public. Raised before anything is read or connected to."""


class NotFoundError(WikiError):
    """An entry, proposal or path does not exist."""


class RefMovedError(WikiError):
    """A compare-and-swap ref update lost a race: the ref is no longer at the expected
    commit. Nothing was overwritten."""


class BranchCheckedOutError(WikiError):
    """The wiki branch is checked out in a worktree, so moving it is refused."""


class StaleProposalError(WikiError):
    """A proposal touches entries that changed on the wiki since its base."""


class ProposalClosedError(WikiError):
    """The proposal already landed or was rejected."""


class DuplicateIdError(WikiError):
    """Two entries would share one id."""


class RemoteError(WikiError):
    """A git remote cannot be reached or refused an operation."""


class ReviewChangedError(WikiError):
    """The proposal changed after it was reviewed (its review hash differs)."""


class SelfApprovalError(WikiError):
    """Refused by the approval rule: the approver is one of the proposal's authors or
    committers (normalised identities, see :mod:`wiki.review.approval_policy`)."""


class SignaturePolicyError(SelfApprovalError):
    """Refused by ``[review] require_signatures``: a proposal commit has no good signature,
    the approver cannot sign, or the approver's key (or signer) signed the proposal.
    A :class:`SelfApprovalError`, so it is refused (exit 5) wherever that is."""


class SigningError(ConfigError):
    """git could not sign a commit it was asked to sign (``commit.gpgsign`` or the review
    policy): no ``user.signingkey``, no ``ssh-keygen``/``gpg``, an unreadable key."""


class SecretError(WikiError):
    """Text going into the wiki contains a secret (a token, a key, a password): refused.
    Carries ``path`` and the secret ``findings`` (:class:`wiki.safety.scan.Finding`, masked);
    ``reason`` is the message without the path."""

    def __init__(self, path: str, findings: list):
        self.path, self.findings = path, findings
        first = findings[0]
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        self.reason = (f"secret ({first.kind}) {first.excerpt} at line {first.line}, column "
                       f"{first.column}{more}: remove it, or pass --redact to replace it with "
                       f"[REDACTED:{first.kind}]")
        super().__init__(f"{path}:{first.line}:{first.column}: secret ({first.kind}) "
                         f"{first.excerpt}{more}: not written; remove it, or pass --redact "
                         f"to replace it with [REDACTED:{first.kind}]")


class WriterBusyError(RefMovedError):
    """Another writer held the repository's wiki write lock for the whole bounded wait
    (``wiki.store.locking``); nothing was written. Exit code as for a moved ref."""


class StorageError(WikiError):
    """A file the wiki must write cannot be written: a read-only file system, no
    permission, a full disk or an exhausted quota. Carries ``path`` and ``cause`` (the
    operating system's words, e.g. "No space left on device"). Nothing on the wiki branch
    or its refs was changed."""

    def __init__(self, path: str, cause: str):
        self.path, self.cause = path, cause
        super().__init__(f"cannot write {path}: {cause}; nothing on the wiki branch was "
                         "changed (free space or make it writable, then run the command again)")


class TreePathError(ConfigError):
    """A change would put a file and a folder of the same name in one tree, a tree git
    refuses (``duplicateEntries``); the message names the path. Nothing was written."""


class ReviewFlaggedError(WikiError):
    """The review check flagged the proposal (:mod:`wiki.review.check`) and the approver
    did not override (or the flags cannot be overridden: secrets). Carries ``flags``."""

    def __init__(self, message: str, flags: list):
        self.flags = flags
        super().__init__(message)


class UsageError(WikiError):
    """A command was given arguments it cannot take together, or an argument that names
    nothing usable (an unreadable FILE, an editor that cannot run): the message names the
    option or value and what to give instead (CLI exit 2)."""


class NotRegularFileError(UsageError):
    """A file a user named, or a state log the wiki appends to, is not a regular file (a
    FIFO, a device, a directory, a socket, or a symbolic link to one): refused without
    reading or writing it (:mod:`wiki.files`). Carries ``path``, ``kind`` (e.g. ``"a
    FIFO"``) and ``target`` (where a symbolic link led, else ``None``). CLI exit 2."""

    def __init__(self, path: str, kind: str, target: str | None = None):
        self.path, self.kind, self.target = path, kind, target
        through = f"a symbolic link to {kind} ({target})" if target else kind
        super().__init__(f"{path}: is {through}, not a regular file; put a regular file "
                         "there or name one")


class FileTooLargeError(UsageError):
    """A file a user named holds more than the bytes the command reads
    (:func:`wiki.files.read_regular`). Carries ``path``, ``size`` (bytes found; with
    ``at_least``, reading stopped past the limit, so it holds more) and ``limit``
    (bytes); ``hint`` ends the message (what to do: which setting raises the limit).
    CLI exit 2."""

    def __init__(self, path: str, size: int, limit: int, *, at_least: bool = False,
                 hint: str = ""):
        self.path, self.size, self.limit = path, size, limit
        said = f"more than the limit of {limit:,} bytes" if at_least else \
            f"{size:,} bytes, over the limit of {limit:,} bytes"
        super().__init__(f"{path}: {said}" + (f"; {hint}" if hint else ""))


def quoted(value: object, limit: int = 60) -> str:
    """``value`` as a message may name it: in single quotes, on one line (a newline or
    carriage return written as ``\\n``/``\\r``), at most ``limit`` characters of it (then
    ``...``). For values that come from stored text (a tag, a folder name): an entry's
    10,000-character tag must not make a one-line error 100 KB long or forge a second
    line. Other control characters are made inert by the CLI's output layer."""
    text = str(value).replace("\r", "\\r").replace("\n", "\\n")
    return f"'{text[:limit]}...'" if len(text) > limit else f"'{text}'"
