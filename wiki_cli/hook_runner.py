"""What the installed post-commit hook runs, detached: ``python -m wiki_cli.hook_runner``.

Marks the entries citing files changed by HEAD and appends one line to
``<git dir>/wiki/hook.log``. Never raises: a hook must not disturb the user's commit.
"""

from __future__ import annotations

import datetime as dt
import traceback


def main() -> None:
    """Mark, log one line, exit 0 whatever happens."""
    line = ""
    log = None
    try:
        from wiki.lint.hook import mark_commit
        from wiki.store.workspace import Wiki

        wiki = Wiki(".")
        log = wiki.state_dir / "hook.log"
        marked = mark_commit(wiki)
        line = f"marked {len(marked)} entries: {', '.join(marked[:20])}"
    except Exception as exc:  # noqa: BLE001 - logged, never raised into git
        line = f"error: {type(exc).__name__}: {exc} | {traceback.format_exc(limit=1)!r}"
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(f"{dt.datetime.now(dt.UTC).isoformat()} {line}\n")


if __name__ == "__main__":
    main()
