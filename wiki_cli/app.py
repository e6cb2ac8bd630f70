"""The ``wiki`` command: parse, call one function of ``wiki``, render. Nothing else.

Commands live in one module per group (admin, review, query); importing them registers
them on the shared typer app (:data:`wiki_cli.common.app`).

Starting fast (docs/decisions.md, "Start time"): this module imports nothing heavy. The
app is built on first use (``from wiki_cli.app import app`` still works: :func:`__getattr__`
builds it); :func:`main` answers a bare ``wiki --version`` without building it, and for a
command named on the command line imports only the module that defines it
(:data:`COMMANDS`; tests/test_start_time.py checks the table against the full app).
"""

from __future__ import annotations

import os
import sys

from wiki_cli import __version__

__all__ = ["COMMANDS", "MODULES", "build", "main"]  # and `app`, see __getattr__

MODULES = ("admin", "authoring", "cron", "doctor", "gaps", "hooks", "lint", "memory",
           "query", "review", "mcp_command", "serve_command")
"""The command modules, in the order their commands are listed by ``wiki --help``."""

COMMANDS = {
    "admin": ("init", "ingest", "index", "status"),
    "authoring": ("propose",),
    "cron": ("cron",),
    "doctor": ("doctor",),
    "gaps": ("gaps",),
    "hooks": ("hook",),
    "lint": ("lint",),
    "memory": ("facts", "feedback"),
    "query": ("search", "ask", "show"),
    "review": ("proposals", "approve", "diff", "reject", "log", "history", "rebase", "sync"),
    "mcp_command": ("mcp",),
    "serve_command": ("serve",),
}
"""Command module -> the top-level commands (and command groups) it registers."""

_GLOBAL_WITH_VALUE = {"--repo", "-C", "--branch"}
"""Global options (:func:`wiki_cli.common.main_options`) that take a value."""


def build(modules: tuple[str, ...] = MODULES):
    """Import the command ``modules`` (registering their commands) and return the typer
    app. Loading the rest later keeps ``wiki --help``'s order: commands are listed in
    :data:`MODULES` order whatever order the modules were imported in."""
    for name in modules:  # __import__, not importlib: `-X importtime` lists these then
        __import__(f"wiki_cli.{name}")
    from wiki_cli.common import app
    from wiki_cli.help_text import set_summaries

    if modules == MODULES:
        rank = {f"wiki_cli.{name}": i for i, name in enumerate(MODULES)}
        app.registered_commands.sort(key=lambda info: rank.get(info.callback.__module__, -1))
        app.registered_groups.sort(
            key=lambda info: rank.get(_group_module(info), -1))
    set_summaries(app)  # whole first sentences in `wiki --help`, never cut with "..."
    return app


def _group_module(info) -> str:
    """The module that registered the sub-app of ``info`` (its first command's module)."""
    commands = info.typer_instance.registered_commands
    return commands[0].callback.__module__ if commands else ""


def __getattr__(name: str):
    """``app``: the typer app with every command registered (built on first access)."""
    if name == "app":
        return build()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def command_module(argv: list[str]) -> str | None:
    """The module defining the command that ``argv`` (without the program name) runs,
    or ``None`` when it names none of :data:`COMMANDS` (no command, ``--help``, a typo:
    the whole app is built and click says what is wrong, as before)."""
    words = iter(argv)
    for word in words:
        if word in _GLOBAL_WITH_VALUE:
            next(words, None)
        elif word.startswith("-"):
            if word in ("--help", "--install-completion", "--show-completion"):
                return None
        else:
            return next((module for module, names in COMMANDS.items() if word in names),
                        None)
    return None


def main() -> None:
    """Console-script entry point. Ctrl-C while the command's modules are still being
    imported (before the app's own handler, :class:`wiki_cli.errors.WikiGroup`, is in
    place) ends as a handled one does: ``interrupted`` on stderr, exit 130, no traceback.
    So does Ctrl-C landing inside a finalizer (:func:`_unraisable`)."""
    sys.unraisablehook = _unraisable
    try:
        _main()
    except KeyboardInterrupt:
        interrupted()


def _unraisable(unraisable) -> None:
    """``sys.unraisablehook``: a Ctrl-C that lands while a ``__del__`` runs (GitPython's
    config readers have one) cannot propagate, so Python printed "Exception ignored in"
    with a traceback and went on as if no key was pressed. Here it ends the process as
    any Ctrl-C does: ``interrupted``, exit 130, at once (``os._exit``: the frames above
    cannot be unwound from a finalizer; SQLite and git refs are crash-safe). Anything
    else goes to Python's own hook."""
    if issubclass(unraisable.exc_type, KeyboardInterrupt):
        try:
            sys.stdout.flush()
            sys.stderr.write("interrupted\n")
            sys.stderr.flush()
        except (OSError, ValueError, KeyboardInterrupt):
            pass
        os._exit(130)
    sys.__unraisablehook__(unraisable)


def interrupted() -> None:
    """Say ``interrupted`` on stderr and exit 130 (``wiki_cli.errors.INTERRUPTED``; not
    imported from there: this runs before the heavy imports are done)."""
    try:
        sys.stderr.write("interrupted\n")
        sys.stderr.flush()
    except (OSError, ValueError, KeyboardInterrupt):  # stderr closed, or a second Ctrl-C
        pass
    sys.exit(130)


def _main() -> None:
    argv = sys.argv[1:]
    if argv == ["--version"]:  # what the eager --version option prints, without the app
        sys.stdout.write(f"wiki {__version__}\n")  # or rich: ~40 ms of imports for a line
        return
    module = command_module(argv)
    completing = any(key.startswith("_") and key.endswith("_COMPLETE") for key in os.environ)
    app = build((module,) if module and not completing else MODULES)
    app(prog_name="wiki")
