"""The post-commit hook: mark the entries whose sources a commit changed
(docs/architecture.md, "Lint, cron, hook").

Installed like pre-commit installs its hooks: a small shell script carrying a marker line;
a foreign ``post-commit`` is kept as ``post-commit.legacy`` and still runs first;
installing twice changes nothing; uninstalling restores the foreign hook; a
``core.hooksPath`` that points elsewhere is refused with a hint. The script starts the
marker in the background and exits 0, so it never fails or slows the commit. The marker
(:func:`mark_commit`) calls git with argument lists only, does nothing during a rebase or
merge, and records marks in the derived state, never on the wiki branch.
"""

from __future__ import annotations

import shlex
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

import git

from wiki.errors import ConfigError, NotFoundError
from wiki.store.derived import open_synced
from wiki.store.entry import now_iso
from wiki.store.gitrepo import common_dir
from wiki.store.indextree import is_text_name
from wiki.store.workspace import Wiki

MARKER = "# wiki-hook: post-commit (managed by `wiki hook`; your own hook: post-commit.legacy)"
HOOK = "post-commit"
LEGACY = "post-commit.legacy"


@dataclass
class HookStatus:
    """Where the hook lives, whether ours is installed and whether a foreign one is chained."""

    path: str
    installed: bool
    chained: bool


def hooks_dir(wiki: Wiki) -> Path:
    """The hooks folder git uses. Raises ``ConfigError`` when ``core.hooksPath`` points
    somewhere else (a hook manager owns the hooks: add ``wiki hook run`` there)."""
    configured = wiki.repo.git.config("--get", "core.hooksPath", with_exceptions=False).strip()
    if configured:
        raise ConfigError(f"core.hooksPath is set to {configured!r}: hooks are managed there; "
                          "call `wiki hook run` from your post-commit hook instead")
    return common_dir(wiki.repo) / "hooks"


def _script(python: str) -> str:
    runner = f"{shlex.quote(python)} -m wiki_cli.hook_runner"
    return f"""#!/bin/sh
{MARKER}
here="$(dirname "$0")"
if [ -x "$here/{LEGACY}" ]; then "$here/{LEGACY}" "$@"; fi
# never block or fail the commit: mark the changed sources' entries in the background
( {runner} </dev/null >/dev/null 2>&1 & ) >/dev/null 2>&1
exit 0
"""


def status(wiki: Wiki) -> HookStatus:
    """Whether the hook is installed (and chains a foreign one)."""
    folder = hooks_dir(wiki)
    hook = folder / HOOK
    installed = hook.exists() and MARKER in hook.read_text(errors="replace")
    return HookStatus(str(hook), installed, (folder / LEGACY).exists())


def install(wiki: Wiki, python: str | None = None) -> HookStatus:
    """Install the hook (idempotent); a foreign hook becomes ``post-commit.legacy``."""
    folder = hooks_dir(wiki)
    folder.mkdir(parents=True, exist_ok=True)
    hook = folder / HOOK
    text = _script(python or sys.executable)
    if hook.exists() and MARKER not in hook.read_text(errors="replace"):
        if (folder / LEGACY).exists():
            raise ConfigError(f"{hook} and {folder / LEGACY} both exist; merge them first")
        hook.rename(folder / LEGACY)
    if not hook.exists() or hook.read_text(errors="replace") != text:
        hook.write_text(text)
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return status(wiki)


def uninstall(wiki: Wiki) -> HookStatus:
    """Remove our hook and put a chained foreign hook back (idempotent)."""
    folder = hooks_dir(wiki)
    hook = folder / HOOK
    if hook.exists() and MARKER in hook.read_text(errors="replace"):
        hook.unlink()
        if (folder / LEGACY).exists():
            (folder / LEGACY).rename(hook)
    return status(wiki)


def in_progress(wiki: Wiki) -> bool:
    """True during a rebase, merge, cherry-pick or revert (the hook then does nothing)."""
    git_dir = Path(wiki.repo.git_dir)
    return any((git_dir / name).exists() for name in (
        "rebase-merge", "rebase-apply", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD"))


def mark_commit(wiki: Wiki, commit: str = "HEAD") -> list[str]:
    """Mark every entry citing a file changed by ``commit`` as needing revalidation;
    returns the marked entry paths (empty during a rebase/merge or without a wiki)."""
    if in_progress(wiki) or wiki.head() is None:
        return []
    try:  # resolved first, so a bad name is one clear error, never an option to git
        if commit.startswith("-"):
            raise git.GitCommandError("rev-parse", 1)
        sha = wiki.repo.git.rev_parse("--verify", "--quiet", f"{commit}^{{commit}}")
    except git.GitCommandError:
        raise NotFoundError(f"no commit {commit!r} in this repository") from None
    changed = wiki.repo.git.diff_tree("--no-commit-id", "-r", "--name-only", "-z",
                                      "--root", sha).split("\0")
    # a name that is not UTF-8 is cited by no entry (entries are UTF-8 text)
    uris = {f"git:{path}" for path in changed if path and is_text_name(path)}
    if not uris:
        return []
    index = open_synced(wiki).index
    try:
        with index.transaction():
            return index.mark_sources(uris, sha, now_iso())
    finally:
        index.close()
