"""``wiki cron``: a weekly ``wiki lint`` line in the user's crontab, found again by its marker.

The line runs lint in the repository and writes nothing to the terminal; every run's report
is saved under ``<git dir>/wiki/lint/``. Installing twice leaves one line; other crontab
lines are never touched. The ``crontab`` program is ``$WIKI_CRONTAB`` or ``crontab``, run
with argument lists (no shell). A CI scheduler runs the same command (docs/cron.md).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass

from wiki.errors import ConfigError
from wiki.store.workspace import Wiki

SCHEDULE = "17 6 * * 1"
"""Mondays at 06:17 local time (an odd minute, so many wikis do not all run at :00)."""
MARK = "# wiki-lint:"


@dataclass
class CronStatus:
    """The crontab line for this repository, if installed."""

    installed: bool
    line: str | None


def _crontab() -> str:
    program = os.environ.get("WIKI_CRONTAB", "crontab")
    if shutil.which(program) is None:
        raise ConfigError(f"{program!r} not found: install cron, or schedule `wiki lint` in "
                          "CI (docs/cron.md)")
    return program


def _read() -> list[str]:
    done = subprocess.run([_crontab(), "-l"], capture_output=True, text=True)
    if done.returncode != 0:
        if "no crontab" in done.stderr.lower():
            return []
        raise ConfigError(f"crontab -l failed: {done.stderr.strip() or done.returncode}")
    return done.stdout.splitlines()


def _write(lines: list[str]) -> None:
    text = "\n".join(lines) + ("\n" if lines else "")
    done = subprocess.run([_crontab(), "-"], input=text, capture_output=True, text=True)
    if done.returncode != 0:
        raise ConfigError(f"crontab - failed: {done.stderr.strip() or done.returncode}")


def cron_line(wiki: Wiki, python: str | None = None) -> str:
    """The line for this repository (its marker names the repository path)."""
    root = str(wiki.root or wiki.state_dir.parent)
    command = (f"cd {shlex.quote(root)} && {shlex.quote(python or sys.executable)} "
               "-m wiki_cli lint --format markdown >/dev/null 2>&1")
    return f"{SCHEDULE} {command} {MARK} {root}"


def _ours(wiki: Wiki, line: str) -> bool:
    root = str(wiki.root or wiki.state_dir.parent)
    return line.rstrip().endswith(f"{MARK} {root}")


def show(wiki: Wiki) -> CronStatus:
    """This repository's line, if any."""
    mine = [line for line in _read() if _ours(wiki, line)]
    return CronStatus(bool(mine), mine[0] if mine else None)


def install(wiki: Wiki, python: str | None = None) -> CronStatus:
    """Add (or refresh) this repository's line; idempotent."""
    lines = [line for line in _read() if not _ours(wiki, line)]
    lines.append(cron_line(wiki, python))
    _write(lines)
    return show(wiki)


def uninstall(wiki: Wiki) -> CronStatus:
    """Remove this repository's line; other lines stay as they were."""
    lines = _read()
    kept = [line for line in lines if not _ours(wiki, line)]
    if kept != lines:
        _write(kept)
    return show(wiki)
