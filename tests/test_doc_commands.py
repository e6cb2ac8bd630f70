"""Every `wiki ...` command line in README.md's and docs/guide.md's shell code blocks still
parses (issue 17.4): each is parsed by the real typer app through click's own parser (typer's vendored copy)
(``make_context``, resilient parsing off, down to the subcommand), so an unknown command,
an unknown option or a missing or extra argument fails here. Nothing is executed.

Extraction: fenced blocks tagged ``sh``, ``bash``, ``shell``, ``console`` or untagged; a
line continued with ``\\`` is joined; each ``$(wiki ...)`` substitution is a command line,
other ``$(...)`` stand for one word, a placeholder ``<name>`` for the word ``NAME``; the
line is split by ``shlex`` (comments dropped) into
commands at ``;``, ``&&``, ``||``, ``|`` and redirections; a command is a wiki command when
its first word after ``NAME=value`` assignments (and a ``$`` prompt) is ``wiki``.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer
import typer.main

from wiki_cli.app import app

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = ("README.md", "docs/guide.md")
SHELL_BLOCKS = {"", "sh", "bash", "shell", "console"}
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
SUBSTITUTION = re.compile(r"\$\(([^()]*)\)")
PLACEHOLDER = re.compile(r"<([A-Za-z][\w-]*)>")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _commands(line: str) -> list[list[str]]:
    """The wiki command lines (argument lists after ``wiki``) in one shell line."""
    found: list[list[str]] = []
    for inner in SUBSTITUTION.findall(line):
        found += _commands(inner)
    line = PLACEHOLDER.sub(lambda m: m[1].upper(), SUBSTITUTION.sub("WORD", line))
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    segment: list[str] = []
    for token in [*lexer, ";"]:
        if token and set(token) <= set(";&|<>()"):
            words = [w for w in segment if not ASSIGNMENT.match(w)] if segment else []
            if words[:1] == ["$"]:
                words = words[1:]
            if words[:1] == ["wiki"]:
                found.append(words[1:])
            segment = []
        else:
            segment.append(token)
    return found


def documented_commands() -> list[tuple[str, list[str]]]:
    """``(where, args)`` for every wiki command line in the documents' shell blocks."""
    found = []
    for name in DOCUMENTS:
        text = (ROOT / name).read_text(encoding="utf-8")
        for block in FENCE.finditer(text):
            if block.group(1) not in SHELL_BLOCKS:
                continue
            first = text.count("\n", 0, block.start()) + 2
            lines = block.group(2).replace("\\\n", " ").splitlines()
            for offset, line in enumerate(lines):
                for args in _commands(line):
                    found.append((f"{name}:{first + offset}", args))
    return found


def refusal(args: list[str]) -> str | None:
    """Parse ``wiki ARGS`` with click (typer's copy) as the app would, down to the leaf
    command, without invoking anything: ``None`` when it parses (``--help`` and
    ``--version`` stop after parsing), else click's usage message."""
    try:
        _parse(args)
    except typer.Exit:
        return None
    except Exception as exc:  # typer vendors click: its UsageError is not importable as such
        if getattr(exc, "exit_code", None) == 2 and hasattr(exc, "format_message"):
            return exc.format_message()
        raise
    return None


def _parse(args: list[str]) -> None:
    command = typer.main.get_command(app)
    context = command.make_context("wiki", list(args), resilient_parsing=False)
    while hasattr(command, "resolve_command"):  # a group: on to its subcommand
        rest = [*context._protected_args, *context.args]
        if not rest:
            break
        name, command, rest = command.resolve_command(context, rest)
        context = command.make_context(name, rest, parent=context, resilient_parsing=False)


COMMANDS = documented_commands()


def test_the_documents_have_command_lines() -> None:
    wheres = {where.split(":")[0] for where, _ in COMMANDS}
    assert wheres == set(DOCUMENTS) and len(COMMANDS) > 80
    assert ["facts", "set", "travel.receipt_threshold", "100", "--unit", "USD", "--entry",
            "docs/travel.md"] in [
        args for _, args in COMMANDS]  # found inside P=$(...)


@pytest.mark.parametrize(("where", "args"), COMMANDS, ids=[w for w, _ in COMMANDS])
def test_documented_command_line_parses(where: str, args: list[str]) -> None:
    problem = refusal(args)
    assert problem is None, f"{where}: `wiki {shlex.join(args)}` does not parse: {problem}"


@pytest.mark.parametrize("args", [["serach", "x"], ["search", "x", "--bogus"],
                                  ["approve"], ["diff", "a", "b"], ["hook", "instal"]])
def test_the_check_catches_what_the_app_refuses(args: list[str]) -> None:
    assert refusal(args)
