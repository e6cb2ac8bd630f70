"""The child processes of tests/test_concurrency.py and tests/test_stress.py, in a module of
their own: a spawned process imports the module of its function, and this one brings only
the wiki's modules, not pytest, hypothesis, typer and the test's conftest."""

from __future__ import annotations

from wiki.answering.search import search_for
from wiki.errors import RefMovedError
from wiki.review.proposals import approve
from wiki.store.derived import rebuild
from wiki.store.gitrepo import Identity
from wiki.store.workspace import Wiki


def search_rounds(path: str, rounds: int, queue) -> None:
    """Search the wiki at ``path`` ``rounds`` times; put ``"ok"`` or the error on ``queue``."""
    try:
        wiki = Wiki(path)
        for _ in range(rounds):
            search_for(wiki, "alpha beta")
        queue.put("ok")
    except Exception as exc:  # reported to the parent, which fails the test
        queue.put(f"{type(exc).__name__}: {exc}")


def rebuild_rounds(path: str, rounds: int, queue) -> None:
    """Rebuild the wiki's index ``rounds`` times; put ``"ok"`` or the error on ``queue``."""
    try:
        wiki = Wiki(path)
        for _ in range(rounds):
            rebuild(wiki)
        queue.put("ok")
    except Exception as exc:
        queue.put(f"{type(exc).__name__}: {exc}")


def play_role(role: str, path: str, names: list[str], approver: Identity, queue) -> None:
    """One of the processes of W4: the approver lands proposals, the hook marks a commit,
    ``ask`` answers and a cron lint runs, all on the same repository at once."""
    try:
        from wiki.answering.ask import ask_for
        from wiki.lint import hook, run_lint
        wiki = Wiki(path)
        for round_ in range(max(len(names), 4)):
            if role == "approve" and round_ < len(names):
                approve(wiki, names[round_], approver=approver)
            elif role == "hook":
                hook.mark_commit(wiki)
            elif role == "ask":
                ask_for(wiki, "where is annual leave requested?")
            elif role == "lint":
                run_lint(wiki)
        queue.put((role, "ok"))
    except Exception as exc:  # reported to the parent, which fails the test
        queue.put((role, f"{type(exc).__name__}: {exc}"))


def approve_all(path: str, names: list[str], approver: Identity, queue) -> None:
    """Approve ``names`` as ``approver`` (a lost race retried), searching after each; put
    ``("ok", landed names)`` or ``("error", text)`` on ``queue``."""
    try:
        wiki = Wiki(path)
        landed = []
        for name in names:
            for _ in range(20):  # a lost compare-and-swap is retried, never overwritten
                try:
                    approve(wiki, name, approver=approver)
                    landed.append(name)
                    break
                except RefMovedError:
                    continue
            search_for(wiki, "stress")  # readers and index syncs interleave with the writes
        queue.put(("ok", landed))
    except Exception as exc:  # reported to the parent
        queue.put(("error", f"{type(exc).__name__}: {exc}"))
