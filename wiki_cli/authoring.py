"""``wiki propose``: a new entry, an edit, a retraction or a supersession, as a proposal."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from wiki.errors import UsageError, quoted
from wiki_cli.common import JsonOption, RedactOption, app, open_wiki, report_proposal
from wiki_cli.errors import report
from wiki_cli.render import print_json


@app.command()
def propose(
    file: Annotated[str | None, typer.Argument(
        help="Markdown file, with frontmatter or plain (titled from its first '# ' "
        "heading); '-' reads stdin.")] = None,
    edit: Annotated[str | None, typer.Option(
        "--edit", help="Entry id or path to edit (opens $EDITOR without FILE).")] = None,
    retract: Annotated[str | None, typer.Option("--retract", help="Entry id or path.")] = None,
    supersede: Annotated[str | None, typer.Option(
        "--supersede", help="Entry id or path that FILE replaces.")] = None,
    reason: Annotated[str, typer.Option("--reason", help="Why (for --retract).")] = "",
    category: Annotated[str, typer.Option("--category", help="Folder of a new entry.")] = "",
    base: Annotated[str | None, typer.Option(
        "--base", help="The wiki commit FILE was written against (`wiki show` reports it); "
        "for --edit FILE it is otherwise inferred from the entry's history.")] = None,
    redact: RedactOption = False,
    json_output: JsonOption = False,
) -> None:
    """Propose a change to the wiki; someone else lands it with `wiki approve`."""
    from wiki.knowledge.authoring import ProposeRequest, file_limit, propose_change

    wiki = open_wiki()
    chosen = [o for o in (edit, retract, supersede) if o]
    if len(chosen) > 1:
        raise UsageError("use one of --edit, --retract, --supersede")
    kind = "edit" if edit else "retract" if retract else "supersede" if supersede else "new"
    target = edit or retract or supersede
    name = None
    if kind == "edit" and file is None:
        text, base = _edited(wiki, edit, base)
    elif kind == "retract":
        text = None
    elif file is None:
        raise UsageError("give a FILE (or --edit ID to use $EDITOR, or --retract ID)")
    else:
        text = _read(file, file_limit(wiki))
        name = Path(file).name if file != "-" else "-"
    changed = propose_change(wiki, ProposeRequest(
        kind, content=text, target=target, reason=reason, category=category, redact=redact,
        base=base, source_name=name))
    if changed.inferred is not None and not changed.inferred.current:
        _say_behind(target, changed.inferred.commit)
    result = changed.authored
    if result.titled_from is not None:
        report(f"note: {file} has no frontmatter: titled {quoted(result.titled_from, 80)} "
               "from its first '#' heading")
    if category and not (edit or retract or supersede):
        _say_folder(category)
    if json_output:
        print_json(result)
        return
    for path in result.near_duplicates:
        report(f"warning: near-duplicate of {path} (flagged in the proposal)")
    report_proposal(result.proposal, result.created, result.existing)


def _say_folder(category: str) -> None:
    """A note when ``--category`` is not used as written: its segments are slugged and
    ``.``/``..``/empty ones dropped (``../Ops`` is the folder ``ops``, ``..`` the root), so
    the person sees where the entry goes instead of finding it elsewhere."""
    from wiki.store.slug import slug_path

    folder = slug_path(category)
    if folder != category:
        where = f"the folder {quoted(folder)}" if folder else "the wiki's root folder"
        report(f"note: --category {quoted(category)} is {where}")


def _edited(wiki, target: str, base: str | None) -> tuple[bytes, str]:
    """``(text, base)``: the entry ``target`` as read at ``base`` (default: the head),
    edited in $VISUAL/$EDITOR; the base is the commit it was read at."""
    from wiki.knowledge.authoring import file_limit, read_base
    from wiki.store.lookup import find_entry

    read = read_base(wiki, base)  # the editor edits what was read here
    return _edit_in_editor(find_entry(wiki, target, read), file_limit(wiki)), read.commit


def _say_behind(target: str, commit: str) -> None:
    """On stderr: the edited file is of an older revision than the head's."""
    report(f"note: the file matches {target} as of {commit[:12]}, not as it is "
           "now; the proposal is behind and lands only where nobody else changed the "
           "entry (pass --base COMMIT to say which version you edited)")


def _read(file: str, limit: int) -> bytes:
    """FILE's bytes (``-``: stdin), at most ``limit``: a regular file only, never a FIFO or
    a device (:mod:`wiki.files`); a file that cannot be read is a :class:`UsageError`."""
    from wiki.files import read_regular, read_stream

    hint = "split it, or raise [ingest] max_bytes in wiki.toml"
    if file == "-":
        return read_stream(sys.stdin.buffer, "stdin", limit, hint=hint)
    try:
        return read_regular(Path(file), limit, hint=hint)
    except OSError as exc:
        raise UsageError(f"{file}: {exc.strerror}") from None


def _edit_in_editor(entry, limit: int) -> bytes:
    """Open the entry in $VISUAL/$EDITOR (argument list, no shell) and return the result."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / Path(entry.path).name
        path.write_bytes(entry.to_bytes())
        try:
            code = subprocess.call([*shlex.split(editor), str(path)])
        except OSError as exc:
            raise UsageError(f"cannot run the editor {editor!r} ($VISUAL/$EDITOR): "
                             f"{exc.strerror}") from None
        if code != 0:
            raise UsageError(f"the editor exited with {code}; nothing proposed")
        return _read(str(path), limit)
