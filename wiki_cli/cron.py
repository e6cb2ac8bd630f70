"""``wiki cron install|uninstall|show``: the weekly lint in the user's crontab."""

from __future__ import annotations

from wiki_cli.common import JsonOption, WikiTyper, app, open_wiki
from wiki_cli.errors import report
from wiki_cli.render import out, print_json

cron_app = WikiTyper(help="A weekly `wiki lint` in your crontab.", no_args_is_help=True)
app.add_typer(cron_app, name="cron")


def _show(result, json_output: bool) -> None:
    if json_output:
        print_json(result)
    elif result.installed:
        out.print(result.line, highlight=False, markup=False)
    else:
        report("no wiki lint line in the crontab for this repository")


@cron_app.command("install")
def install(json_output: JsonOption = False) -> None:
    """Add the weekly lint line (idempotent)."""
    from wiki.lint.cron import install as run

    _show(run(open_wiki()), json_output)


@cron_app.command("uninstall")
def uninstall(json_output: JsonOption = False) -> None:
    """Remove this repository's line."""
    from wiki.lint.cron import uninstall as run

    _show(run(open_wiki()), json_output)


@cron_app.command("show")
def show(json_output: JsonOption = False) -> None:
    """Print this repository's line."""
    from wiki.lint.cron import show as run

    _show(run(open_wiki()), json_output)
