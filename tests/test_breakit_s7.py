"""Adversary pass of session 7 (trust): a hostile teammate and a careless user against
review, sync, output and the user's setup. Each test names the kind of fault it holds;
the fix is in the shared path, not at the example."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


# -- kind: the process's own setup is user input (a deleted current folder) ------------------

def test_a_deleted_current_folder_is_a_usage_error_for_every_command(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    for command in (["status"], ["ask", "x"], ["ingest", "a.md"], ["init"]):
        result = subprocess.run(
            ["sh", "-c", 'rmdir "$PWD" && exec "$0" -m wiki_cli "$@"', sys.executable,
             *command], cwd=gone, env=os.environ, text=True, capture_output=True)
        gone.mkdir()
        assert result.returncode == 2, (command, result.stderr)
        assert result.stderr.startswith("error: the current folder no longer exists"), \
            result.stderr
        assert len(result.stderr.splitlines()) == 1
