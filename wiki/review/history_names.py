"""Secrets in the *names* a proposal's history carries (:mod:`wiki.review.check`).

A file name is screened when it is new in the tip, and a blob of an earlier commit is read
for secrets, but a name can live in an earlier commit only (``ops/ghp_....md`` added, then
renamed before the tip): approve's merge lands that tree object too, so the name is
pushed to every clone. :func:`tree_name_flags` reads every tree object ``base..tip`` adds
and screens each entry name no tree of the base or the tip already holds.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable

from wiki.errors import WikiError
from wiki.review.check import SECRET_FLAG, ReviewFlag, content_flags
from wiki.store.gitcli import objects_of_type
from wiki.store.workspace import Wiki

_SECRETS = frozenset({SECRET_FLAG})


def tree_name_flags(wiki: Wiki, base: str, tip: str,
                    paths: Iterable[str]) -> list[ReviewFlag]:
    """``secret`` flags for entry names of the tree objects reachable from ``tip`` and not
    from ``base`` that are no component of ``paths`` (the base's and the tip's paths,
    screened as file names already). The flag's path names the folder, never the name
    itself (its detail shows the secret masked). Raises :class:`WikiError` when git
    fails."""
    known = {part for path in paths for part in path.split("/")}
    done = subprocess.run(["git", f"--git-dir={wiki.repo.git_dir}", "rev-list", "--objects",
                           tip, "--not", base], capture_output=True)
    if done.returncode != 0:
        raise WikiError(f"git rev-list {base[:12]}..{tip[:12]} failed: "
                        f"{done.stderr.decode().strip()}")
    folders: dict[str, str] = {}
    for line in done.stdout.decode("utf-8", "surrogateescape").splitlines():
        sha, _, path = line.partition(" ")
        folders.setdefault(sha, path)
    trees = objects_of_type(wiki.repo.git_dir, set(folders), "tree")
    flags: list[ReviewFlag] = []
    for sha, raw in wiki.store.read_many(sorted(trees)).items():
        where = f"{folders[sha] or '(root)'} (a name in an earlier commit of the proposal)"
        for name in _names(raw, len(sha) // 2):
            if name not in known:
                flags += [ReviewFlag(f.rule, f.kind, where, 0, 0, f.category,
                                     "in a file name: " + f.detail)
                          for f in content_flags(name, where, None, _SECRETS)]
    return flags



def _names(raw: bytes, hash_size: int) -> list[str]:
    """The entry names of a raw tree object (``<mode> <name>\\0<hash>`` records)."""
    names, pos = [], 0
    while pos < len(raw):
        space, nul = raw.index(b" ", pos), raw.index(b"\0", pos)
        names.append(raw[space + 1:nul].decode("utf-8", "surrogateescape"))
        pos = nul + 1 + hash_size
    return names
