"""What the new-user trial of issue 7 stumbled on: a locked search index is a one-line
conflict (exit 4), not an internal error; a plain markdown file given to `wiki propose`
says what a new entry needs; a wrong `--expect` hash may be a typo."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import BOB, acting_as, write

from indexes.errors import IndexBusyError
from indexes.sqlite.engine import SearchIndex
from wiki_cli.errors import CONFLICT, exit_code_for


def test_a_write_lock_held_too_long_is_index_busy_with_exit_4(tmp_path: Path) -> None:
    path = tmp_path / "wiki.sqlite"
    holder = SearchIndex(path)
    waiter = SearchIndex(path, busy_timeout_ms=50)
    try:
        with holder.transaction(), \
                pytest.raises(IndexBusyError, match="locked by another process") as caught, \
                waiter.transaction():
            pass
        assert str(path) in str(caught.value) and "\n" not in str(caught.value)
        assert exit_code_for(caught.value) == CONFLICT
        with waiter.transaction():  # once the other process is done, it works again
            waiter.set_meta("k", "v")
    finally:
        holder.close()
        waiter.close()


def test_propose_plain_markdown_says_what_a_new_entry_needs(cli, repo: Path) -> None:
    assert cli("init").exit_code == 0  # with a '# ' heading it is an entry (test_cli_everyday_output.py)
    write(repo / "note.md", "The guest wifi password is on the fridge.\n")
    result = cli("propose", str(repo / "note.md"), "--category", "ops")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "note.md:1: no frontmatter and no '# ' heading to take the title from" \
        in result.stderr
    write(repo / "note.md", "---\ntitle: Wifi\n---\nThe guest wifi password is on the fridge.\n")
    assert cli("propose", str(repo / "note.md"), "--category", "ops").exit_code == 0


def test_a_wrong_expect_hash_may_be_a_typo(cli, repo: Path) -> None:
    assert cli("init").exit_code == 0
    write(repo / "docs" / "a.md", "# A\n\nAlpha is the first letter.\n")
    name = cli("ingest", str(repo / "docs")).stdout.strip()
    with acting_as(BOB):
        assert cli("approve", name, "--expect", "HASH").exit_code == 2  # not a review hash
        refused = cli("approve", name, "--expect", "0123456789ab")
    assert refused.exit_code == 4
    assert "changed since it was reviewed, or the hash is mistyped" in refused.stderr
