"""``wiki hook install|uninstall|status|run``: the post-commit hook."""

from __future__ import annotations

from typing import Annotated

import typer

from wiki_cli.common import JsonOption, WikiTyper, app, open_wiki
from wiki_cli.errors import report
from wiki_cli.render import out, print_json

hook_app = WikiTyper(help="The post-commit hook that marks entries whose sources changed.",
                       no_args_is_help=True)
app.add_typer(hook_app, name="hook")


def _show(result, json_output: bool, verb: str, state: str | None = None) -> None:
    """``VERB: STATE`` on stderr (``state`` defaults to ``hook installed`` / ``hook not
    installed``), the hook's path on stdout; ``--json``: the status object."""
    if json_output:
        print_json(result)
        return
    if state is None:
        state = "hook installed" if result.installed else "hook not installed"
    chained = " (chains post-commit.legacy)" if result.installed and result.chained else ""
    report(f"{verb}: {state}{chained}")
    out.print(result.path)


@hook_app.command("install")
def install(json_output: JsonOption = False) -> None:
    """Install the hook (idempotent; a foreign hook is kept and chained)."""
    from wiki.lint.hook import install as run

    _show(run(open_wiki()), json_output, "install")


@hook_app.command("uninstall")
def uninstall(json_output: JsonOption = False) -> None:
    """Remove the hook and restore a chained foreign hook."""
    from wiki.lint.hook import status as current
    from wiki.lint.hook import uninstall as run

    wiki = open_wiki()
    before = current(wiki)
    after = run(wiki)
    if not before.installed:
        state = "no wiki hook was installed; nothing removed"
    elif before.chained:
        state = "hook removed; your own post-commit hook is back in place"
    else:
        state = "hook removed"
    _show(after, json_output, "uninstall", state)


@hook_app.command("status")
def hook_status(json_output: JsonOption = False) -> None:
    """Whether the hook is installed."""
    from wiki.lint.hook import status as run

    _show(run(open_wiki()), json_output, "status")


@hook_app.command("run")
def run_now(
    commit: Annotated[str, typer.Argument(help="Commit whose changes to mark.")] = "HEAD",
) -> None:
    """Mark the entries citing files changed by COMMIT (what the hook does)."""
    from wiki.lint.hook import mark_commit

    marked = mark_commit(open_wiki(), commit)
    report(f"marked {len(marked)} entries as needing revalidation")
    for path in marked:
        out.print(path)
