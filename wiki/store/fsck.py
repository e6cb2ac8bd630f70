"""git's own object checks over the objects a range adds, as a remote running
``receive.fsckObjects`` checks a push.

The objects reachable from some commits and not from others are packed (``git
pack-objects --revs``) and the pack is indexed by ``git index-pack --strict`` into a
temporary folder (nothing is added to the repository): git runs its fsck checks on every
object of the pack (duplicate entries, a blob and a folder of the same name, entries out of
order, ``.``/``..``/``.git`` names, bad or zero-padded modes, malformed commits) and checks
that whatever the pack names exists. The tree checks git only warns about are raised to
errors (:data:`STRICT`), as ``git fsck --strict`` and most hosting services treat them.
Only the new objects are read, so the cost follows the size of the change, not of the
repository (docs/decisions.md, "Trees git accepts").
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

from wiki.errors import WikiError

STRICT = ("badFilemode", "zeroPaddedFilemode", "emptyName", "fullPathname", "hasDot",
          "hasDotdot", "hasDotgit", "duplicateEntries", "treeNotSorted",
          "nullSha1")
"""fsck message ids treated as errors (some are only warnings by default)."""
_PROBLEM = re.compile(r"^(?:error|warning): object ([0-9a-f]{40,64}): (\w+): (.*)$")


def object_problems(git_dir: str, include: Iterable[str], exclude: Iterable[str] = ()
                    ) -> list[tuple[str, str, str]]:
    """``(object id, fsck message id, message)`` for each problem git's fsck finds in the
    objects reachable from the commits ``include`` and not from ``exclude`` (empty: none).
    Raises :class:`WikiError` when git fails for another reason (a missing object, no
    git)."""
    revs = "".join(f"{c}\n" for c in include) + "".join(f"^{c}\n" for c in exclude)
    with tempfile.TemporaryDirectory(prefix="wiki-fsck-") as folder:
        pack = Path(folder) / "new.pack"
        with pack.open("wb") as out:
            packed = subprocess.run(["git", f"--git-dir={git_dir}", "pack-objects", "--revs",
                                     "--stdout", "-q", "--window=0"], input=revs.encode(),
                                    stdout=out, stderr=subprocess.PIPE)
        if packed.returncode != 0:
            raise WikiError("git pack-objects failed: "
                            + packed.stderr.decode("utf-8", "replace").strip())
        levels = ",".join(f"{name}=error" for name in STRICT)
        done = subprocess.run(["git", f"--git-dir={git_dir}", "index-pack",
                               f"--strict={levels}", "-o", str(Path(folder) / "new.idx"),
                               str(pack)], capture_output=True)
    if done.returncode == 0:
        return []
    lines = done.stderr.decode("utf-8", "replace").splitlines()
    found = [m.groups() for m in map(_PROBLEM.match, lines) if m]
    if not found:
        reason = next((line for line in reversed(lines) if line.strip()), "no reason given")
        raise WikiError(f"git index-pack could not check the new objects: {reason}")
    return [(sha, msg, text) for sha, msg, text in found]
