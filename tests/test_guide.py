"""docs/guide.md, run: every example block marked ``<!-- run -->`` (or
``<!-- run: exit N -->``) on the line before its fence is executed, in the guide's order,
as a real ``bash`` subprocess in a fresh git repository, and must exit with the stated code
(0 when none is stated).

How the blocks run: each block is its own ``bash -c`` with ``set -e``, the tmp repository
as its working directory and ``wiki`` on ``PATH`` as a small script calling
``python -m wiki_cli`` of this checkout (PYTHONPATH = the project root). Shell variables a
block sets (``P=$(wiki ingest docs/)``) carry over to the next blocks, as in one terminal:
blocks run with ``set -a`` and their exported variables are saved on exit and read back
by the next block. The environment is pinned: a temp HOME with an empty git config and no
inherited ``GIT_*``/``WIKI_*`` variables, so identities are exactly what the guide sets
(Alice by ``git config`` in the first block, Bob in his clone's config; a block speaks for
Bob or Carol in Alice's repository by prefixing one command with their
``GIT_AUTHOR_*`` and ``GIT_COMMITTER_*`` variables); ``WIKI_EMBED_MODEL=none`` and
``WIKI_EMBED_SERVER=off`` (no model load); ``NO_COLOR=1``.

Not run (blocks without the marker): ``make setup`` (installs), ``wiki cron ...`` (edits the
real crontab), ``wiki mcp`` and ``claude mcp add`` (a stdio server that runs until its
client hangs up), ``wiki propose --edit ID`` without a file (opens an editor), and the
sample outputs and file formats (``text``, ``markdown``).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guide.md"
MARKER = re.compile(r"^<!-- run(?::\s*exit (\d+))? -->$")
FENCE = re.compile(r"^```(\w*)")
SKIPPED_STATE = re.compile(r"^declare -[a-zA-Z]*r|^declare -x (PWD|OLDPWD|SHLVL|_)=")


@dataclass(frozen=True)
class Block:
    """One runnable example: its line in the guide, the code and the expected exit code."""

    line: int
    code: str
    exit_code: int


def runnable_blocks(text: str) -> list[Block]:
    """The blocks marked ``<!-- run -->`` / ``<!-- run: exit N -->`` on the line just before
    their opening fence, in order."""
    lines = text.splitlines()
    blocks = []
    for number, line in enumerate(lines):
        marker = MARKER.match(line.strip())
        if not marker:
            continue
        fence = FENCE.match(lines[number + 1]) if number + 1 < len(lines) else None
        assert fence and fence.group(1) == "sh", (
            f"guide.md:{number + 1}: a run marker must be followed by a ```sh fence")
        end = next(i for i in range(number + 2, len(lines)) if lines[i].startswith("```"))
        blocks.append(Block(number + 3, "\n".join(lines[number + 2:end]),
                            int(marker.group(1) or 0)))
    return blocks


def test_guide_markers_are_well_formed() -> None:
    """Every marker precedes a sh block; a block expected to fail says so in its text; every
    command of the CLI has a section."""
    blocks = runnable_blocks(GUIDE.read_text(encoding="utf-8"))
    assert len(blocks) >= 30
    for block in blocks:
        if block.exit_code:
            assert f"exit {block.exit_code}" in block.code, (
                f"guide.md:{block.line}: say 'exit {block.exit_code}' in the block")
    headings = "\n".join(line for line in GUIDE.read_text(encoding="utf-8").splitlines()
                          if line.startswith("### "))
    from typer.main import get_command

    from wiki_cli.app import app
    for command in get_command(app).commands:  # type: ignore[attr-defined]
        assert f"`wiki {command}" in headings, f"docs/guide.md: no section for wiki {command}"


def _wiki_script(folder: Path) -> Path:
    folder.mkdir()
    script = folder / "wiki"
    script.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m wiki_cli \"$@\"\n",
                      encoding="utf-8")
    script.chmod(0o755)
    return folder


def _environment(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    bin_dir = _wiki_script(tmp_path / "bin")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("GIT_", "WIKI_"))}
    env.update({
        "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT), "NO_COLOR": "1",
        "WIKI_EMBED_MODEL": "none", "WIKI_EMBED_SERVER": "off", "WIKI_CRONTAB": "false",
        "GUIDE_STATE": str(tmp_path / "state.sh"),
    })
    return env


PRELUDE = """set -a
if [ -f "$GUIDE_STATE" ]; then . "$GUIDE_STATE"; fi
trap 'export -p > "$GUIDE_STATE.new"' EXIT
set -e
"""


def _carry_state(state: Path) -> None:
    """Keep the variables a block exported for the next one, minus bash's own."""
    new = state.with_name(state.name + ".new")
    if new.exists():
        kept = [line for line in new.read_text(encoding="utf-8").splitlines()
                if not SKIPPED_STATE.match(line)]
        state.write_text("\n".join(kept) + "\n", encoding="utf-8")
        new.unlink()


@pytest.mark.slow
def test_every_runnable_example_in_the_guide(tmp_path: Path) -> None:
    """Run the guide's examples in order; each exits with the code the guide states."""
    env = _environment(tmp_path)
    repo = tmp_path / "team-kb"
    repo.mkdir()
    blocks = runnable_blocks(GUIDE.read_text(encoding="utf-8"))
    for block in blocks:
        result = subprocess.run(["bash", "-c", PRELUDE + block.code], cwd=repo, env=env,
                                text=True, capture_output=True, timeout=120)
        _carry_state(Path(env["GUIDE_STATE"]))
        if result.returncode != block.exit_code:
            pytest.fail(f"docs/guide.md:{block.line}: exit {result.returncode}, the guide "
                        f"says {block.exit_code}\n--- block\n{block.code}\n--- stdout\n"
                        f"{result.stdout}\n--- stderr\n{result.stderr}")
        assert "Traceback" not in result.stderr, result.stderr
