"""Keeping a served wiki branch up with its remote: fetch, then fast-forward only.

The server is a reader of the team's wiki: it fetches ``refs/heads/<branch>`` from the
remote into ``refs/remotes/<remote>/<branch>`` and moves the local branch by
compare-and-swap only when that is a fast-forward. It never pushes, never merges and
never approves; a local branch that is ahead of the remote or has diverged from it is left
alone and reported, for a person to settle (``wiki sync``).
"""

from __future__ import annotations

from dataclasses import dataclass

import git

from wiki.errors import ConfigError, RemoteError
from wiki.store.workspace import Wiki

UP_TO_DATE, FAST_FORWARD, CREATED, AHEAD, DIVERGED = (
    "up-to-date", "fast-forward", "created", "ahead", "diverged")


@dataclass(frozen=True)
class FetchResult:
    """What one fetch did: ``action`` (up-to-date, fast-forward, created, ahead:
    the local branch has commits the remote lacks, diverged: both moved; the last two left
    alone), the local head ``before`` and ``after``, and the remote's head."""

    remote: str
    action: str
    before: str | None
    after: str | None
    theirs: str


def fetch_wiki(wiki: Wiki, remote: str) -> FetchResult:
    """Fetch the wiki branch from ``remote`` and fast-forward the local one to it.

    Raises :class:`ConfigError` for an unknown remote or a remote without the branch, and
    :class:`RemoteError` when git cannot fetch (the remote's own message)."""
    if remote not in [r.name for r in wiki.repo.remotes]:
        raise ConfigError(f"no git remote named {remote!r} in {wiki.repo.common_dir}")
    tracking = f"refs/remotes/{remote}/{wiki.branch}"
    try:
        wiki.repo.git.execute(["git", "fetch", "--quiet", "--no-tags", remote,
                               f"+refs/heads/{wiki.branch}:{tracking}"])
    except git.GitCommandError as exc:
        lines = [line.strip(" '") for line in (exc.stderr or "").splitlines() if line.strip(" '")]
        reason = lines[0].removeprefix("stderr: ").strip(" '") if lines else str(exc)
        if "couldn't find remote ref" in reason:
            raise ConfigError(f"remote {remote!r} has no branch {wiki.branch!r}") from None
        raise RemoteError(f"git fetch from remote {remote!r} failed: {reason}") from None
    theirs = wiki.store.resolve(tracking)
    local = wiki.head()
    if local == theirs:
        return FetchResult(remote, UP_TO_DATE, local, local, theirs)
    if local is None:
        wiki.store.update_ref(wiki.ref, theirs, None, f"wiki serve: fetch from {remote}")
        return FetchResult(remote, CREATED, None, theirs, theirs)
    if wiki.repo.is_ancestor(local, theirs):
        wiki.store.update_ref(wiki.ref, theirs, local, f"wiki serve: fetch from {remote}")
        return FetchResult(remote, FAST_FORWARD, local, theirs, theirs)
    action = AHEAD if wiki.repo.is_ancestor(theirs, local) else DIVERGED
    return FetchResult(remote, action, local, local, theirs)
