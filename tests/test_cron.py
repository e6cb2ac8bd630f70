"""``wiki cron``: one line per repository, idempotent, other lines untouched. The
``crontab`` program is replaced by a small stand-in script (an external program, not
ours) that keeps the table in a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from wiki.errors import ConfigError
from wiki.lint import cron
from wiki.store.workspace import Wiki

FAKE = """#!/bin/sh
if [ "$1" = "-l" ]; then
  if [ -f "$CRONTAB_FILE" ]; then cat "$CRONTAB_FILE"; else echo "no crontab for user" >&2; exit 1; fi
elif [ "$1" = "-" ]; then
  cat > "$CRONTAB_FILE"
fi
"""


@pytest.fixture
def crontab(tmp_path: Path, monkeypatch) -> Path:
    program = tmp_path / "crontab"
    program.write_text(FAKE)
    program.chmod(0o755)
    table = tmp_path / "table"
    monkeypatch.setenv("WIKI_CRONTAB", str(program))
    monkeypatch.setenv("CRONTAB_FILE", str(table))
    return table


def test_install_twice_keeps_one_line_and_other_lines(wiki: Wiki, crontab: Path) -> None:
    crontab.write_text("0 1 * * * backup.sh\n")
    first = cron.install(wiki, python="/usr/bin/python3")
    second = cron.install(wiki, python="/usr/bin/python3")
    assert first == second and first.installed
    lines = crontab.read_text().splitlines()
    assert lines[0] == "0 1 * * * backup.sh" and len(lines) == 2
    assert lines[1].startswith("17 6 * * 1 cd ")
    assert lines[1].endswith(f"# wiki-lint: {wiki.root}")
    assert "-m wiki_cli lint --format markdown" in lines[1]
    assert cron.uninstall(wiki).installed is False
    assert crontab.read_text() == "0 1 * * * backup.sh\n"


def test_show_without_a_crontab(wiki: Wiki, crontab: Path) -> None:
    assert cron.show(wiki) == cron.CronStatus(False, None)


def test_missing_crontab_program_is_a_clear_error(wiki: Wiki, monkeypatch) -> None:
    monkeypatch.setenv("WIKI_CRONTAB", "/nonexistent/crontab")
    with pytest.raises(ConfigError, match="not found"):
        cron.install(wiki)


def test_cli_cron(cli, wiki: Wiki, crontab: Path) -> None:
    assert cli("cron", "install").exit_code == 0
    shown = cli("cron", "show")
    assert shown.exit_code == 0 and "wiki-lint:" in shown.stdout
    assert cli("cron", "uninstall").exit_code == 0
