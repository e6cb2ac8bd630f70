"""Faults of the disk under the wiki (issue 15, parts 1 and 2), each made for real:

* a damaged derived index (zeroed, truncated, a foreign header, a b-tree page overwritten)
  is set aside as ``.corrupt-<time>``, rebuilt from the branch, and said in one line;
* a read-only git dir (a read-only bind mount) leaves reads working on a temporary index
  (one note) and makes writes fail with one line naming the path and cause, exit 74;
* a full disk (a tiny tmpfs, filled) does the same for ingest, index and approve;
* after a refused write the wiki branch and every ref are exactly as before.

Mounts need root (CI and the dev container run as root); without them the mount tests
are skipped with the reason.
"""

from __future__ import annotations

import gc
import json
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from conftest import BOB, acting_as, git, write

from wiki.store.notices import collect_notices
from wiki_cli.errors import STORAGE

QUESTION = "how do I file a travel voucher?"


def _land(cli, repo: Path) -> str:
    """A wiki with three entries landed and indexed; returns the database path's name."""
    write(repo / "docs" / "travel.md", "---\ntitle: Travel vouchers\n---\n"
          "File a travel voucher in Concur within five days of returning.\n")
    write(repo / "docs" / "tock.md", "# Tock\n\nTock line #670 is for time out of office.\n")
    write(repo / "docs" / "leave.md", "# Annual leave\n\nRequest annual leave in GovTrip "
          "two weeks ahead. " + "Leave rules differ by agency. " * 200 + "\n")
    assert cli("init").exit_code == 0
    name = cli("ingest", str(repo / "docs")).stdout.strip()
    with acting_as(BOB):
        landed = cli("approve", name)
    assert landed.exit_code == 0, landed.output
    assert cli("index").exit_code == 0
    return name


def _db(repo: Path) -> Path:
    return repo / ".git" / "wiki" / "wiki.sqlite"


def _refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname) %(objectname)")


def _root_page(db: Path, table: str) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?",
                            (table,)).fetchone()[0]


def _damage(db: Path, kind: str) -> None:
    """Damage the index the way a disk or a careless hand does."""
    size = db.stat().st_size
    if kind == "zeroed":
        db.write_bytes(b"\0" * size)
    elif kind == "truncated":
        with open(db, "r+b") as handle:
            handle.truncate(size // 2)
    elif kind == "foreign":
        db.write_bytes(b"this is a text file, not a database\n" * 100)
    else:  # a page of a b-tree overwritten in its middle, header included
        page = _root_page(db, kind)
        with open(db, "r+b") as handle:
            handle.seek((page - 1) * 4096)
            handle.write(bytes([0xFF, 0x13, 0x37, 0x00]) * 256)


def _one_warning(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("warning:")]
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.mark.parametrize("kind", ["zeroed", "truncated", "foreign", "docs", "names_key"])
@pytest.mark.parametrize("command", [("search", "travel voucher"), ("ask", QUESTION),
                                     ("status",), ("doctor",), ("index", "--rebuild"),
                                     ("index",)])
def test_a_damaged_index_is_kept_aside_and_rebuilt(cli, repo: Path, kind: str,
                                                   command: tuple[str, ...]) -> None:
    _land(cli, repo)
    db = _db(repo)
    _damage(db, kind)
    damaged = db.read_bytes()
    result = cli(*command)
    assert result.exit_code == 0, result.output
    warning = _one_warning(result.stderr)
    kept = sorted(db.parent.glob("wiki.sqlite.corrupt-*"))
    assert [k.name for k in kept if not k.name.endswith(("-wal", "-shm"))] == \
        [warning.split("kept as ")[1].split(";")[0]]
    assert warning.startswith("warning: the search index was damaged (")
    assert warning.endswith("; rebuilt from the branch")
    assert kept[0].read_bytes() == damaged  # kept as it was, for a post-mortem
    found = cli("search", "travel voucher", "--json")
    assert found.exit_code == 0 and "warning" not in found.stderr  # said once, then healthy
    assert json.loads(found.stdout)["hits"][0]["path"] == "docs/travel.md"
    assert cli("status").exit_code == 0


def test_a_deleted_index_is_rebuilt_quietly(cli, repo: Path) -> None:
    """Deleting derived state is how a person asks for a rebuild (DESIGN.md §3): no
    warning, nothing kept aside, the same answers."""
    _land(cli, repo)
    _db(repo).unlink()
    result = cli("search", "tock #670")
    assert result.exit_code == 0 and "docs/tock.md" in result.stdout
    assert "warning" not in result.stderr and "index" not in result.stderr
    assert not list(_db(repo).parent.glob("*.corrupt-*"))
    assert cli("status").exit_code == 0


def test_damage_found_by_a_statement_not_by_the_check(cli, repo: Path) -> None:
    """A file that opens and passes quick_check but fails on the first write of the sync
    is recovered the same way (the catch in open_synced, not only the check at open)."""
    _land(cli, repo)
    db = _db(repo)
    with sqlite3.connect(db) as conn:  # a newer schema than this wiki knows
        conn.execute("PRAGMA user_version = 999")
    result = cli("search", "tock")
    assert result.exit_code == 0, result.output
    assert "newer than this wiki" in _one_warning(result.stderr)


def test_mcp_search_recovers_and_says_so(cli, repo: Path) -> None:
    from wiki_cli.mcp_server import build_server

    _land(cli, repo)
    _damage(_db(repo), "docs")
    server, _ = build_server(repo)

    async def call():
        return await server.call_tool("search", {"query": "tock #670"})

    result = anyio.run(call)
    data = result.structured_content if hasattr(result, "structured_content") else result
    text = json.dumps(data) if not hasattr(result, "content") else \
        " ".join(c.text for c in result.content)
    assert not getattr(result, "is_error", False), text
    assert "docs/tock.md" in text and "the search index was damaged" in text
    assert list(_db(repo).parent.glob("wiki.sqlite.corrupt-*"))


def test_mcp_unexpected_error_is_one_clear_line(cli, repo: Path, monkeypatch) -> None:
    """Not "Error executing tool search": the agent reads what went wrong."""
    from wiki_cli.mcp_server import build_server

    _land(cli, repo)
    server, _ = build_server(repo)

    def boom(*args, **kwargs):
        raise OSError(28, "No space left on device", str(_db(repo)))

    monkeypatch.setattr("wiki.answering.search.open_synced", boom)

    async def call():
        return await server.call_tool("search", {"query": "tock"})

    result = anyio.run(call)
    assert result.is_error
    text = result.content[0].text
    assert text.startswith(f"error: cannot write {_db(repo)}: No space left on device")
    assert result.structured_content["exit_code"] == STORAGE


# -- read-only and full disks (real mounts) --------------------------------------------------

def _mount(*args: str) -> str | None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True)
    return None if done.returncode == 0 else (done.stderr.strip() or f"exit {done.returncode}")


def _umount(path: Path) -> None:
    """Unmount ``path``; lazily when a git process the test's ``Wiki`` objects started
    still holds a file there (it goes with them)."""
    gc.collect()  # closes gitpython's persistent cat-file processes of dropped repos
    if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, check=True)


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """``path`` made read-only by a read-only bind mount over itself (chmod does not
    stop root); skips the test, with the reason, where mounting is not allowed."""
    failed = _mount("--bind", str(path), str(path))
    if failed:
        pytest.skip(f"read-only bind mount not allowed here ({failed}); run as root")
    try:
        failed = _mount("-o", "remount,ro,bind", str(path))
        if failed:
            pytest.skip(f"read-only remount not allowed here ({failed}); run as root")
        yield
    finally:
        _umount(path)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs; skips, with the reason, where mounting is not allowed."""
    mount = tmp_path / "disk"
    mount.mkdir()
    failed = _mount("-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount))
    if failed:
        pytest.skip(f"tmpfs mount not allowed here ({failed}); run as root")
    try:
        yield mount
    finally:
        _umount(mount)


def _fill(disk: Path) -> None:
    """Write a file until the disk is full (the write that fails is the proof)."""
    with open(disk / "filler", "wb", buffering=0) as handle, \
            pytest.raises(OSError, match="No space left"):
        while True:
            handle.write(b"x" * 65536)


def _one_error(result, path_part: str, cause: str) -> None:
    assert result.exit_code == STORAGE, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and path_part in errors[0] and cause in errors[0], result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.output


def _new_sources(repo: Path) -> Path:
    write(repo / "more" / "parking.md", "# Parking\n\nParking permits come from GSA.\n")
    return repo / "more"


def test_read_only_git_dir_reads_work_writes_fail_cleanly(cli, repo: Path) -> None:
    proposal = _land(cli, repo)
    write(repo / "docs" / "tock.md", "# Tock\n\nTock line #671 is for time off.\n")
    with acting_as(BOB):
        pending = cli("ingest", str(repo / "docs")).stdout.strip()
    assert pending and pending != proposal
    before = _refs(repo)
    with read_only(repo / ".git"):
        found = cli("search", "tock #670")
        assert found.exit_code == 0 and "docs/tock.md" in found.stdout, found.output
        notes = [line for line in found.stderr.splitlines() if "temporary index" in line]
        assert len(notes) == 1 and "Read-only file system" in notes[0], found.stderr
        assert cli("status").exit_code == 0
        assert cli("doctor").exit_code == 0
        answered = cli("ask", QUESTION)
        assert answered.exit_code == 0 and "Concur" in answered.stdout
        gap = cli("ask", "zzqx plugh frobnicate")  # the gap log cannot be written: a note
        assert gap.exit_code == 3 and "was not recorded" in gap.stderr
        _one_error(cli("index"), ".git/wiki/wiki.sqlite", "Read-only file system")
        _one_error(cli("index", "--rebuild"), ".git/wiki/wiki.sqlite", "Read-only file system")
        _one_error(cli("ingest", str(_new_sources(repo))), ".git", "Read-only file system")
        _one_error(cli("approve", pending), ".git", "Read-only file system")
        assert _refs(repo) == before
    assert _refs(repo) == before  # the branch and every ref untouched
    assert git(repo, "fsck", "--no-dangling") == ""


def test_read_only_git_dir_without_an_index_yet(cli, repo: Path) -> None:
    _land(cli, repo)
    _db(repo).unlink()
    with read_only(repo / ".git"):
        found = cli("search", "travel voucher")
        assert found.exit_code == 0 and "docs/travel.md" in found.stdout, found.output
        assert "temporary index" in found.stderr
    assert not _db(repo).exists()


def test_full_disk_ingest_index_approve_fail_cleanly(cli, runner, small_disk: Path) -> None:
    from wiki_cli.app import app

    repo = small_disk / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo / "README.md", "# project\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "first")

    def run(*args: str):
        return runner.invoke(app, ["-C", str(repo), *args])

    proposal = _land(run, repo)
    write(repo / "docs" / "tock.md", "# Tock\n\nTock line #671 is for time off.\n")
    pending = run("ingest", str(repo / "docs")).stdout.strip()
    assert pending and pending != proposal
    sources = _new_sources(repo)
    before = _refs(repo)
    _fill(small_disk)
    _one_error(run("ingest", str(sources)), str(repo / ".git"), "No space left on device")
    _one_error(run("index", "--rebuild"), ".git/wiki/wiki.sqlite", "No space left on device")
    with acting_as(BOB):
        _one_error(run("approve", pending), str(repo / ".git"), "No space left on device")
    assert _refs(repo) == before
    found = run("search", "tock #670")  # reads still work, on a temporary index if need be
    assert found.exit_code == 0 and "docs/tock.md" in found.stdout, found.output
    (small_disk / "filler").unlink()
    assert git(repo, "fsck", "--no-dangling") == ""
    with acting_as(BOB):  # with room again, the same approve lands
        assert run("approve", pending).exit_code == 0


def test_read_only_derived_dir_alone_lets_proposals_through(cli, repo: Path) -> None:
    """Only ``.git/wiki`` read-only (objects and refs writable): ingest still proposes and
    search reads a temporary index; only the commands that write the index refuse."""
    _land(cli, repo)
    with read_only(repo / ".git" / "wiki"):
        proposed = cli("ingest", str(_new_sources(repo)))
        assert proposed.exit_code == 0, proposed.output
        assert proposed.stdout.strip().startswith("ingest-")
        found = cli("search", "tock #670")
        assert found.exit_code == 0 and "temporary index" in found.stderr, found.output
        _one_error(cli("index", "--rebuild"), ".git/wiki/wiki.sqlite", "Read-only file system")


def test_llm_cache_on_a_read_only_dir_caches_in_memory(tmp_path: Path) -> None:
    from wiki.llm.cache import ResponseCache

    folder = tmp_path / "state"
    folder.mkdir()
    with read_only(folder), collect_notices() as notices:
        cache = ResponseCache(folder / "llm-cache.sqlite")
        cache.put("k", "fake/model", {"text": "an answer"})
        assert cache.get("k") == {"text": "an answer"} and cache.path is None
        cache.close()
    assert len(notices) == 1, notices
    assert "LLM response cache" in notices[0] and "in memory" in notices[0]
    assert not (folder / "llm-cache.sqlite").exists()
