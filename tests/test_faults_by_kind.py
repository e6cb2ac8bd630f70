"""Fault injection beyond the examples issue 15 was fixed with: new examples of each of its
kinds, run through the real CLI (in-process, and a few real ``python -m wiki_cli``
subprocesses). Each test names the kind (docs/robustness.md)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from conftest import BOB, acting_as, git, write
from test_faults_llm import QUESTION as FAULTS_QUESTION
from test_faults_llm import populated as populated  # fixtures, re-exported
from test_faults_llm import silent as silent
from test_faults_storage import _fill, _one_error, _refs, read_only
from test_faults_storage import small_disk as small_disk  # a fixture, re-exported

QUESTION = "how do I file a travel voucher?"


def _land(cli, repo: Path, **files: str) -> None:
    """Init, ingest ``docs/`` (two entries plus ``files``), approve as Bob, index."""
    write(repo / "docs" / "travel.md", "---\ntitle: Travel vouchers\n---\n"
          "File a travel voucher in Concur within five days of returning.\n")
    write(repo / "docs" / "leave.md", "# Annual leave\n\nRequest annual leave two weeks ahead.\n")
    for name, text in files.items():
        write(repo / "docs" / name, text)
    assert cli("init").exit_code == 0
    name = cli("ingest", str(repo / "docs")).stdout.strip()
    with acting_as(BOB):
        landed = cli("approve", name)
    assert landed.exit_code == 0, landed.output
    assert cli("index").exit_code == 0


def _db(repo: Path) -> Path:
    return repo / ".git" / "wiki" / "wiki.sqlite"


# -- kind 1: a damaged derived index ----------------------------------------------------------

@pytest.mark.parametrize("damage", [
    "UPDATE embeddings SET vector = substr(vector, 1, 10)",  # truncated blobs
    "UPDATE embeddings SET dim = 3",  # a dimension that is not the model's
    "UPDATE embeddings SET vector = 'not a vector'",  # text where a blob belongs
])
@pytest.mark.parametrize("command", [("search", "travel voucher"), ("ask", QUESTION)])
def test_damaged_vector_rows_are_embedded_again(cli, repo: Path, vectors_on, damage: str,
                                                command: tuple[str, ...]) -> None:
    _land(cli, repo)
    with sqlite3.connect(_db(repo)) as conn:  # two entries' chunks
        stored = conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
        assert stored >= 2
        conn.execute(damage)
    result = cli(*command)
    assert result.exit_code == 0, result.output
    assert "docs/travel.md" in result.stdout
    assert (f"warning: {stored} stored vectors of the search index were damaged; "
            "embedded again") in result.stderr
    with sqlite3.connect(_db(repo)) as conn:
        assert conn.execute("SELECT count(*), min(dim), min(length(vector)) FROM embeddings "
                            "WHERE text_hash IN (SELECT text_hash FROM chunks)"
                            ).fetchone() == (stored, 64, 256)
        # an answer also keeps the vectors of the sentences it read: sound ones too
        assert conn.execute("SELECT min(dim), max(dim), min(length(vector)) "
                            "FROM embeddings").fetchone() == (64, 64, 256)
    again = cli(*command)
    assert again.exit_code == 0 and "warning" not in again.stderr


@pytest.mark.parametrize("table", ["embeddings", "names", "docs_tri"])
def test_a_table_missing_from_the_index_is_a_damaged_index(cli, repo: Path, vectors_on,
                                                           table: str) -> None:
    _land(cli, repo)
    with sqlite3.connect(_db(repo)) as conn:
        conn.execute(f"DROP TABLE {table}")
    result = cli("search", "travel voucher")
    assert result.exit_code == 0, result.output
    assert "docs/travel.md" in result.stdout
    warning = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and f"{table}" in warning[0] and "missing" in warning[0]
    assert warning[0].endswith("rebuilt from the branch")
    assert len(list(_db(repo).parent.glob("wiki.sqlite.corrupt-*"))) >= 1
    assert cli("status").exit_code == 0


def test_a_dangling_symlink_in_place_of_the_index_is_named(cli, repo: Path) -> None:
    _land(cli, repo)
    db = _db(repo)
    db.unlink()
    db.symlink_to(repo / "gone" / "x.sqlite")
    found = cli("search", "travel voucher")
    assert found.exit_code == 0 and "docs/travel.md" in found.stdout
    assert "symbolic link to" in found.stderr and "does not exist" in found.stderr
    rebuilt = cli("index", "--rebuild")
    assert rebuilt.exit_code == 74
    assert rebuilt.stderr.count("\n") == 1 and "symbolic link to" in rebuilt.stderr
    assert db.is_symlink()  # the user's link is left as it is


def test_a_directory_in_place_of_the_index_is_one_line(cli, repo: Path) -> None:
    _land(cli, repo)
    db = _db(repo)
    db.unlink()
    db.mkdir()
    for command in (("search", "travel"), ("status",), ("index", "--rebuild")):
        result = cli(*command)
        assert result.exit_code not in (0, 70), result.output
        assert "is a directory" in result.stderr and result.stderr.count("\n") == 1
    assert db.is_dir()


# -- kind 2: read-only or full disk, new places --------------------------------------------

BADGE = "---\ntitle: Badges\n---\nBadges come from the security office.\n"


def _pending(cli, repo: Path) -> str:
    write(repo / "more" / "parking.md", "# Parking\n\nParking permits come from GSA.\n")
    name = cli("ingest", str(repo / "more")).stdout.strip()
    assert name.startswith("ingest-")
    return name


def test_read_only_refs_dir_alone(cli, repo: Path, tmp_path: Path) -> None:
    """Only ``.git/refs`` read-only: objects can be written but no ref can move. Every
    writer ends in one exit-74 line naming the ref; reads work; nothing moved."""
    _land(cli, repo)
    pending = _pending(cli, repo)
    badge = write(tmp_path / "badge.md", BADGE)
    before = _refs(repo)
    with read_only(repo / ".git" / "refs"):
        assert cli("search", "travel voucher").exit_code == 0
        _one_error(cli("reject", pending, "--reason", "not now"), ".git/refs/heads/wiki-rejected",
                   "Read-only file system")
        with acting_as(BOB):
            _one_error(cli("approve", pending), ".git/refs/heads/wiki", "Read-only file system")
        _one_error(cli("propose", str(badge), "--category", "docs"), ".git/refs/heads/",
                   "Read-only file system")
        _one_error(cli("facts", "set", "travel.days", "5", "--entry", "docs/travel.md"),
                   ".git/refs/heads/",
                   "Read-only file system")
    assert _refs(repo) == before
    assert cli("reject", pending, "--reason", "not now").exit_code == 0  # writable again


def test_read_only_objects_dir_alone(cli, repo: Path, tmp_path: Path) -> None:
    _land(cli, repo)
    badge = write(tmp_path / "badge.md", BADGE)
    before = _refs(repo)
    with read_only(repo / ".git" / "objects"):
        found = cli("search", "travel voucher")
        assert found.exit_code == 0 and "docs/travel.md" in found.stdout
        write(repo / "more" / "parking.md", "# Parking\n\nParking permits come from GSA.\n")
        _one_error(cli("ingest", str(repo / "more")), ".git/objects", "Read-only file system")
        _one_error(cli("propose", str(badge), "--category", "docs"), ".git/objects",
                   "Read-only file system")
    assert _refs(repo) == before


def _repo_on(disk: Path) -> Path:
    repo = disk / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo / "README.md", "# project\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "first")
    return repo


def test_full_disk_propose_reject_facts_lint_fix_sync(runner, small_disk: Path,
                                                     tmp_path: Path) -> None:
    from wiki_cli.app import app

    repo = _repo_on(small_disk)

    def run(*args: str):
        return runner.invoke(app, ["-C", str(repo), *args])

    _land(run, repo)
    pending = _pending(run, repo)
    # a hand edit of index.md on the branch: index drift, which lint --fix proposes to fix
    tree = tmp_path / "wikitree"
    git(repo, "worktree", "add", "-q", str(tree), "wiki")
    (tree / "index.md").write_text("# Index\n\nnothing here\n")
    git(tree, "commit", "-q", "-am", "hand edit")
    git(repo, "worktree", "remove", str(tree))
    assert "W005" in run("lint").stdout
    # a remote with one more commit to fetch
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    assert run("sync", "origin").exit_code == 0
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", "-b", "wiki", str(remote), str(other))
    write(other / "notes" / "big.md", "# Big\n\n" + "lorem ipsum dolor " * 40000 + "\n")
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "big")
    git(other, "push", "-q", "origin", "wiki")
    badge = write(tmp_path / "badge.md", BADGE)
    before = _refs(repo)
    _fill(small_disk)
    try:
        full = "No space left on device"
        _one_error(run("propose", str(badge), "--category", "docs"), str(repo / ".git"), full)
        _one_error(run("reject", pending, "--reason", "not now"), str(repo / ".git"), full)
        _one_error(run("facts", "set", "travel.days", "5", "--entry", "docs/travel.md"),
                   str(repo / ".git"), full)
        _one_error(run("lint", "--fix"), str(repo / ".git"), full)
        _one_error(run("sync", "origin"), str(repo / ".git" / "objects"), full)
        assert _refs(repo) == before
    finally:
        (small_disk / "filler").unlink()
    assert git(repo, "fsck", "--no-dangling") == ""
    assert run("sync", "origin").exit_code == 0


# -- kind 3: control characters, new places -------------------------------------------------

ESCAPED = ('---\ntitle: "Clip \\e]52;c;aGk=\\a board [bold]x[/bold] [link=https://e.x]y[/link]"\n'
           'tags: ["ok", "\\x9b2J"]\naliases: ["al\\u001b[31mred"]\n---\nClipboard board text.\n')


def test_control_characters_written_as_yaml_escapes_are_flagged_and_inert(cli, repo: Path) -> None:
    """The stored bytes hold ``\\e`` (YAML escape text), the value the tool reads holds ESC:
    review flags it (I007) on the field's line and every output shows it as escape text;
    rich markup in a title is printed as the literal text."""
    _land(cli, repo)
    write(repo / "docs" / "clip.md", ESCAPED)
    proposed = cli("ingest", str(repo / "docs" / "clip.md"))
    assert proposed.exit_code == 0, proposed.output
    flagged = [line for line in proposed.stderr.splitlines() if "I007" in line]
    assert len(flagged) == 3, proposed.stderr  # title, tags, aliases (lines of the entry)
    name = proposed.stdout.strip()
    with acting_as(BOB):
        refused = cli("approve", name)
        assert refused.exit_code == 5, refused.output
        assert cli("approve", name, "--override-flags", "test of inert output").exit_code == 0
    for command in (("search", "clipboard board"), ("show", "docs/clip.md"),
                    ("search", "clipboard", "--json"), ("lint", "--format", "markdown"),
                    ("log",), ("history", "docs/clip.md")):
        result = cli(*command)
        assert result.exit_code in (0, 1), (command, result.output)
        for raw in ("\x1b", "\x9b", "\x07"):
            assert raw not in result.output, (command, result.output)
    shown = cli("search", "clipboard board").stdout
    assert "[bold]x[/bold] [link=https://e.x]y[/link]" in shown and "\\x1b]52" in shown


# -- kind 5: what a deletion breaks ---------------------------------------------------------

def _entry_id(cli, path: str) -> str:
    return json.loads(cli("show", path, "--json").stdout)["id"]


def _hand_made_proposal(repo: Path, tmp_path: Path, name: str, *deleted: str) -> None:
    """A proposal branch made with git alone (as one pushed by a colleague would be)."""
    tree = tmp_path / "hand"
    git(repo, "worktree", "add", "-q", "-b", f"wiki-proposals/{name}", str(tree), "wiki")
    git(tree, "rm", "-q", *deleted)
    git(tree, "commit", "-q", "-m", f"delete {' '.join(deleted)}")
    git(repo, "worktree", "remove", str(tree))


def test_a_deletion_that_breaks_a_body_link_or_conflicts_with_is_flagged(cli, repo: Path,
                                                                         tmp_path: Path) -> None:
    _land(cli, repo)
    leave = _entry_id(cli, "docs/leave.md")
    travel = _entry_id(cli, "docs/travel.md")
    faq = write(tmp_path / "faq.md", f"---\ntitle: Leave FAQ\nrelations:\n  conflicts_with: "
                f"[{travel}]\n---\nSee [the leave rules](leave.md#how) and [x][r].\n\n"
                "[r]: ./leave.md\n")
    proposed = cli("propose", str(faq), "--category", "docs")
    assert proposed.exit_code == 0, proposed.output
    with acting_as(BOB):
        assert cli("approve", proposed.stdout.strip()).exit_code == 0
    _hand_made_proposal(repo, tmp_path, "del-1", "docs/leave.md", "docs/travel.md")
    diff = cli("diff", "del-1")
    flagged = [line for line in diff.stdout.splitlines() if line.startswith("flagged:")]
    assert any("deletes docs/leave.md" in f and "links to it ('leave.md#how')" in f
               for f in flagged), diff.stdout
    assert any(f"deletes {travel}" in f and "relations.conflicts_with" in f
               for f in flagged), diff.stdout
    assert not any(leave in f for f in flagged)  # leave.md is named by a link, not an id
    with acting_as(BOB):
        refused = cli("approve", "del-1")
    assert refused.exit_code == 5 and "breaks-dependency" in refused.stderr
    listed = cli("proposals").stdout
    assert "R005" in listed


# -- kind 7: shallow clones and conflict markers, new places ----------------------------------

def _approve_all(cli, repo: Path) -> None:
    for name in git(repo, "for-each-ref", "--format=%(refname:lstrip=3)",
                    "refs/heads/wiki-proposals/").split():
        with acting_as(BOB):
            assert cli("approve", name).exit_code == 0


def test_facts_history_in_a_shallow_clone_says_where_it_starts(cli, repo: Path,
                                                               tmp_path: Path) -> None:
    from test_faults_git import clone, run

    _land(cli, repo)
    assert cli("facts", "set", "travel.days", "5", "--entry", "docs/travel.md").exit_code == 0
    _approve_all(cli, repo)
    assert cli("facts", "set", "travel.days", "6").exit_code == 0
    _approve_all(cli, repo)
    full = cli("facts", "travel.days")
    assert full.exit_code == 0 and " set        5" in full.stdout and "shallow" not in full.stderr
    shallow = clone(repo, tmp_path / "shallow", 1)
    seen = run(shallow, "facts", "travel.days")
    assert seen.exit_code == 0, seen.output
    assert "travel.days = 6" in seen.stdout
    assert " set        5" not in seen.stdout  # the clone has not got that landing
    notes = [line for line in seen.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "this clone is shallow" in notes[0]
    assert "git fetch --unshallow" in notes[0]
    never = run(shallow, "facts", "travel.nights")  # cannot say "never held" from here
    assert never.exit_code == 1 and "this clone is shallow" in never.stderr
    assert "has ever held" not in never.stderr


@pytest.mark.parametrize("text", [
    "---\ntitle: Merge\n---\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> b\n",
    "---\r\ntitle: Merge\r\n---\r\nintro\r\n<<<<<<< HEAD\r\nours\r\n||||||| base\r\nold\r\n"
    "=======\r\ntheirs\r\n>>>>>>> b\r\n",
])
def test_propose_refuses_a_file_with_conflict_markers(cli, repo: Path, tmp_path: Path,
                                                      text: str) -> None:
    _land(cli, repo)
    before = git(repo, "for-each-ref")
    half = tmp_path / "half.md"
    half.write_bytes(text.encode())
    refused = cli("propose", str(half), "--category", "docs")
    assert refused.exit_code == 2, refused.output
    assert refused.stderr.strip().startswith("error: half.md:") and \
        "unresolved merge-conflict markers" in refused.stderr
    shown = cli("show", "docs/leave.md").stdout
    half.write_text(shown + "\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> b\n")
    edit = cli("propose", str(half), "--edit", "docs/leave.md")
    assert edit.exit_code == 2 and "unresolved merge-conflict markers" in edit.stderr
    assert git(repo, "for-each-ref") == before
    assert half.read_text().endswith(">>>>>>> b\n")  # the user's file untouched
    fenced = tmp_path / "fenced.md"
    fenced.write_text("---\ntitle: How a conflict looks\n---\n```\n<<<<<<< HEAD\nours\n"
                      "=======\ntheirs\n>>>>>>> b\n```\n")
    assert cli("propose", str(fenced), "--category", "docs").exit_code == 0


# -- kind 8: frontmatter types ----------------------------------------------------------------

@pytest.mark.parametrize(("name", "text", "line", "message"), [
    ("list-title.md", "---\ntitle: [a, b]\n---\nbody\n", 2, "field 'title': must be text, got a list"),
    ("map-title.md", "---\ntitle: {a: 1}\n---\nbody\n", 2, "field 'title': must be text, got a mapping"),
    ("set-tags.md", "---\ntitle: x\ntags: !!set {a, b}\n---\nbody\n", 3,
     "field 'tags': must be text or a list of text, got a set"),
    ("map-tag.md", "---\r\ntitle: x\r\ntags:\r\n  - a\r\n  - {b: 1}\r\n---\r\nbody\r\n", 3,
     "field 'tags': must be text or a list of text, got a mapping"),
    ("pyobj.md", "---\ntitle: !!python/object:os.system\n---\nbody\n", 2,
     "could not determine a constructor for the tag 'tag:yaml.org,2002:python/object:os.system'"),
    ("apply.md", "---\ntitle: !!python/object/apply:os.system ['touch PWNED']\n---\nbody\n", 2,
     "could not determine a constructor"),
    ("custom.md", "---\ntitle: x\naliases: [!custom y]\n---\nbody\n", 3,
     "could not determine a constructor for the tag '!custom'"),
])
def test_a_source_field_ingest_would_drop_is_reported_with_its_line(
        cli, repo: Path, name: str, text: str, line: int, message: str) -> None:
    _land(cli, repo)
    bad = repo / "src" / name
    bad.parent.mkdir()
    bad.write_bytes(text.encode())
    write(repo / "src" / "good.md", "# Good\n\nA good source.\n")
    result = cli("ingest", str(repo / "src"))
    skipped = [x for x in result.stderr.splitlines() if x.startswith("skipped")]
    assert skipped == [f"skipped src/{name}: src/{name}:{line}: " + skipped[0].split(
        f"src/{name}:{line}: ", 1)[-1]], result.stderr
    assert message in skipped[0]
    assert "good.md" not in result.stderr and result.stdout.strip().startswith("ingest-")
    assert bad.read_bytes() == text.encode()  # left as it is
    assert not (repo / "PWNED").exists()


def test_yaml_1_1_scalars_in_a_proposed_entry_keep_their_text(cli, repo: Path,
                                                              tmp_path: Path) -> None:
    _land(cli, repo)
    entry = write(tmp_path / "odd.md", "---\ntitle: 0x1F\ntags: yes\naliases: [on, off, 12:30, "
                  "!!int 7, 2026-01-01]\n---\nOdd scalars.\n")
    proposed = cli("propose", str(entry), "--category", "docs")
    assert proposed.exit_code == 0, proposed.output
    with acting_as(BOB):
        assert cli("approve", proposed.stdout.strip()).exit_code == 0
    shown = json.loads(cli("show", "docs/0x1f.md", "--json").stdout)
    assert shown["title"] == "0x1F"
    assert shown["tags"] == ["yes"]
    assert shown["meta"]["aliases"] == ["on", "off", "12:30", "7", "2026-01-01"]
    stored = git(repo, "show", "wiki:docs/0x1f.md")
    assert "title: 0x1F\ntags: yes\naliases: [on, off, 12:30, !!int 7, 2026-01-01]\n" in stored


# -- kind 9: queries ---------------------------------------------------------------------------

CORPUS = {
    "cpp.md": "---\ntitle: Using C++ templates\n---\nTemplates in C++ are compile-time.\n",
    "appc.md": "# Appendix C\n\nAppendix C lists vitamin C sources and C notes.\n",
    "cmm.md": "# Portable assembly\n\nC-- is a portable assembly language.\n",
    "astar.md": "# Pathfinding\n\nThe A* search algorithm finds shortest paths.\n",
    "appa.md": "# Appendix A\n\nAppendix A covers vitamin A and a search for A.\n",
    "tock.md": "# Tock\n\nTock line #670 is for time out of office.\n",
}


def _paths(cli, query: str) -> list[str]:
    result = cli("search", query, "--json")
    assert result.exit_code in (0, 1), result.output
    return [hit["path"] for hit in json.loads(result.stdout)["hits"]]


@pytest.mark.parametrize(("query", "first"), [
    ("C--", "docs/cmm.md"), ("A*", "docs/astar.md"), ("A* search", "docs/astar.md"),
    ("C/C++", "docs/cpp.md"), ("c++ templates", "docs/cpp.md")])
def test_more_code_like_names_outrank_the_letter(cli, repo: Path, query: str,
                                                 first: str) -> None:
    _land(cli, repo, **CORPUS)
    found = _paths(cli, query)
    assert found and found[0] == first, found


def test_no_leg_searches_a_word_past_the_limit(cli, repo: Path) -> None:
    """The note says the 65th word was ignored: the alias leg and the trigram path must
    not find an entry by it either (they did: Tock by its title, travel by 'voucher')."""
    _land(cli, repo, **CORPUS)
    filler = " ".join(f"w{i}" for i in range(64))
    for last in ("Tock", "voucher"):
        result = cli("search", f"{filler} {last}", "--json", "--explain")
        assert "only the first 64 were searched (1 ignored)" in result.stderr
        assert json.loads(result.stdout)["hits"] == [], result.stdout
        assert json.loads(result.stdout)["truncated"] == {"kept": 64, "dropped": 1}
    exactly = " ".join(["the"] * 5 + [f"w{i}" for i in range(63)]) + " the Tock"
    kept = cli("search", exactly, "--json")  # 64 words (stopwords do not count): all searched
    assert json.loads(kept.stdout)["truncated"] is None
    assert [h["path"] for h in json.loads(kept.stdout)["hits"]][0] == "docs/tock.md"


# -- kind 10: identity of renamed sources ------------------------------------------------------

SOURCES = {
    "alpha.md": "# Alpha\n\nAlpha is the first procedure for onboarding new staff quickly.\n",
    "beta.md": "# Beta\n\nBeta describes the badge pickup at the front desk on day one.\n",
    "gamma.md": "# Gamma\n\nGamma lists the parking rules for the north garage.\n",
}


def _ids_by_title(repo: Path) -> dict[str, tuple[str, str]]:
    """Title -> (entry id, source uri) of every entry under ``hr/`` on the wiki branch."""
    from wiki.store.entry import Entry

    out = {}
    for path in git(repo, "ls-tree", "-r", "--name-only", "wiki", "hr/").split():
        if path.endswith("index.md"):
            continue
        entry = Entry.parse(path, git(repo, "show", f"wiki:{path}").encode() + b"\n")
        out[entry.title] = (entry.id, entry.sources[0].uri)
    return out


def _ingest_hr(cli, repo: Path):
    result = cli("ingest", str(repo / "hr"))
    assert result.exit_code == 0, result.output
    with acting_as(BOB):
        assert cli("approve", result.stdout.strip()).exit_code == 0
    return result


def _cycle(repo: Path, *names: str) -> None:
    """git mv names[0] -> names[1] -> ... -> names[0] (each file takes the next's name)."""
    git(repo, "mv", f"hr/{names[-1]}", "hr/tmp.md")
    for source, target in reversed(list(zip(names, names[1:], strict=False))):
        git(repo, "mv", f"hr/{source}", f"hr/{target}")
    git(repo, "mv", "hr/tmp.md", f"hr/{names[0]}")
    git(repo, "commit", "-q", "-m", "names exchanged")


@pytest.mark.parametrize("names", [("alpha.md", "beta.md"),
                                   ("alpha.md", "beta.md", "gamma.md")])
def test_sources_that_exchanged_names_keep_their_entries(cli, repo: Path,
                                                         names: tuple[str, ...]) -> None:
    for name, text in SOURCES.items():
        write(repo / "hr" / name, text)
    git(repo, "add", "hr")
    git(repo, "commit", "-q", "-m", "sources")
    assert cli("init").exit_code == 0
    _ingest_hr(cli, repo)
    before = _ids_by_title(repo)
    _cycle(repo, *names)
    result = _ingest_hr(cli, repo)
    renamed = [line for line in result.stderr.splitlines() if line.startswith("renamed")]
    assert len(renamed) == len(names), result.stderr
    after = _ids_by_title(repo)
    for title, (entry_id, _) in before.items():
        assert after[title][0] == entry_id  # each entry follows its own text
        moved_to = (repo / "hr" / Path(after[title][1].removeprefix("git:")).name)
        assert title in moved_to.read_text()
    assert cli("ingest", str(repo / "hr")).stdout.strip() == ""  # nothing left to do


def test_a_copy_over_another_source_is_an_edit_not_a_rename(cli, repo: Path) -> None:
    """b.md overwritten with a.md's text while a.md stays: no cycle, no identity moves."""
    for name, text in SOURCES.items():
        write(repo / "hr" / name, text)
    git(repo, "add", "hr")
    git(repo, "commit", "-q", "-m", "sources")
    assert cli("init").exit_code == 0
    _ingest_hr(cli, repo)
    before = _ids_by_title(repo)
    write(repo / "hr" / "beta.md", SOURCES["alpha.md"])
    result = _ingest_hr(cli, repo)
    assert "renamed" not in result.stderr
    from wiki.store.entry import Entry

    alpha_id, beta_id = before["Alpha"][0], before["Beta"][0]
    by_id = {}
    for path in git(repo, "ls-tree", "-r", "--name-only", "wiki", "hr/").split():
        if not path.endswith("index.md"):
            entry = Entry.parse(path, git(repo, "show", f"wiki:{path}").encode() + b"\n")
            by_id[entry.id] = (entry.title, entry.sources[0].uri)
    assert by_id[alpha_id] == ("Alpha", "git:hr/alpha.md")  # untouched
    assert by_id[beta_id] == ("Alpha", "git:hr/beta.md")  # its source now says Alpha


def test_a_split_source_moved_to_another_folder_keeps_every_section(cli, repo: Path) -> None:
    words = lambda stem, n: " ".join(f"{stem}{i}" for i in range(n))  # noqa: E731
    write(repo / "hr" / "guide.md", f"# Guide\n\nIntro {words('intro', 50)}.\n\n## Setup\n\n"
          f"Install {words('setup', 300)}.\n\n## Usage\n\nRun {words('usage', 300)}.\n")
    git(repo, "add", "hr")
    git(repo, "commit", "-q", "-m", "guide")
    assert cli("init").exit_code == 0
    _ingest_hr(cli, repo)
    before = {title: entry_id for title, (entry_id, _) in _ids_by_title(repo).items()}
    assert len(before) == 3
    (repo / "ops").mkdir()
    git(repo, "mv", "hr/guide.md", "ops/Guide.md")
    git(repo, "commit", "-q", "-m", "moved, case changed")
    result = cli("ingest", str(repo / "ops"))
    assert "renamed git:hr/guide.md -> git:ops/Guide.md" in result.stderr
    with acting_as(BOB):
        assert cli("approve", result.stdout.strip()).exit_code == 0
    after = _ids_by_title(repo)
    assert {title: entry_id for title, (entry_id, _) in after.items()} == before
    assert {uri for _, uri in after.values()} == {"git:ops/Guide.md"}


# -- kind 4: retries (held; kept as tests) -----------------------------------------------------

def test_retried_writers_return_the_open_proposal(cli, repo: Path) -> None:
    _land(cli, repo)
    leave = _entry_id(cli, "docs/leave.md")
    first = cli("propose", "--retract", leave, "--reason", "obsolete")
    again = cli("propose", "--retract", leave, "--reason", "obsolete", "--json")
    assert first.exit_code == again.exit_code == 0
    assert json.loads(again.stdout)["created"] is False
    assert json.loads(again.stdout)["proposal"]["name"] == first.stdout.strip()
    third = cli("propose", "--retract", leave, "--reason", "obsolete")
    assert third.stdout.strip() == first.stdout.strip()
    assert "already proposed as" in third.stderr
    fact = cli("facts", "set", "travel.days", "5", "--entry", "docs/travel.md")
    fact_again = cli("facts", "set", "travel.days", "5", "--entry", "docs/travel.md")
    assert fact.stdout.strip() == fact_again.stdout.strip()
    names = git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/wiki-proposals/")
    assert len(names.split()) == 2


def test_concurrent_approvals_of_one_proposal_land_it_once(cli, repo: Path) -> None:
    """Three real ``wiki approve`` processes at once: one lands, the others say it
    landed (exit 1), the branch has one landing."""
    import os
    import subprocess
    import sys

    from conftest import identity_env

    _land(cli, repo)
    name = _pending(cli, repo)
    head = git(repo, "rev-parse", "wiki")
    env = {**os.environ, **identity_env(BOB),
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    runs = [subprocess.Popen([sys.executable, "-m", "wiki_cli", "-C", str(repo), "approve", name],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(3)]
    done = [(run.wait(timeout=120), run.stdout.read(), run.stderr.read()) for run in runs]
    for run in runs:
        run.stdout.close()
        run.stderr.close()
    codes = sorted(code for code, _, _ in done)
    assert codes == [0, 1, 1], done
    for code, _, err in done:
        if code:
            assert err.count("\n") == 1 and name in err and "internal error" not in err
    landings = git(repo, "rev-list", "--first-parent", f"{head}..wiki").split()
    assert len(landings) == 1


# -- kind 6: a model that never answers (held; kept as tests) ----------------------------------

def test_distill_and_mcp_ask_spend_one_deadline(populated, silent, cli, repo: Path) -> None:
    """``ingest --distill`` of three sources sends one request and falls back to the plain
    compile with a note; the MCP ``ask`` tool answers extractively; neither retries."""
    import anyio

    from wiki_cli.mcp_server import build_server

    for i in range(3):
        write(repo / "src" / f"rule{i}.md", f"# Rule {i}\n\nClaims under rule {i} are filed "
              f"within {i + 3} days of travel.\n")
    distilled = cli("ingest", str(repo / "src"), "--distill")
    assert distilled.exit_code == 0, distilled.output
    assert distilled.stdout.strip().startswith("ingest-")
    assert "note:" in distilled.stderr and "model" in distilled.stderr
    assert len(silent.accepted) == 1
    server, _ = build_server(repo)

    async def call():
        return await server.call_tool("ask", {"question": FAULTS_QUESTION})

    result = anyio.run(call)
    text = " ".join(c.text for c in result.content)
    assert not result.is_error and "75 percent of the daily rate" in text
    assert "did not answer" in text
    assert len(silent.accepted) == 2  # one more request for this call, not retried


# -- bytes that are not UTF-8: file names and arguments ------------------------------------------

def test_a_file_name_that_is_not_utf8_is_skipped_and_the_rest_ingested(cli, repo: Path) -> None:
    import os

    _land(cli, repo)
    latin1 = os.fsdecode(bytes(repo / "docs") + b"/caf\xe9.md")
    Path(latin1).write_text("# Cafe\n\nThe cafe opens at eight.\n")
    write(repo / "docs" / "badges.md", "# Badges\n\nBadges come from security.\n")
    result = cli("ingest", str(repo / "docs"))
    assert result.exit_code == 0, result.output
    assert "skipped" in result.stderr and "caf\\xe9.md: the file name is not valid UTF-8" \
        in result.stderr
    assert result.stdout.strip().startswith("ingest-")  # badges.md proposed
    as_json = cli("ingest", str(repo / "docs"), "--json", "--dry-run")
    assert as_json.exit_code == 0
    assert any("caf\\xe9.md" in s["path"] for s in json.loads(as_json.stdout)["skipped"])


@pytest.mark.parametrize("args", [
    ("show", "docs/\udcff.md"), ("history", "\udcff"),
    ("facts", "set", "k\udcff", "1", "--entry", "docs/leave.md"),
    ("propose", "--retract", "\udcff", "--reason", "x"), ("search", "voucher", "--tag", "\udcff"),
])
def test_an_argument_that_is_not_utf8_is_a_usage_error(cli, repo: Path,
                                                       args: tuple[str, ...]) -> None:
    """``wiki show $'\\xff'``: Python hands the byte over as a lone surrogate."""
    _land(cli, repo)
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: an argument or a file name is not valid UTF-8")
    assert result.stderr.count("\n") == 1 and "\\xff" in result.stderr


def test_mcp_tools_given_lone_surrogates_answer_one_line(cli, repo: Path) -> None:
    import anyio

    from wiki_cli.mcp_server import build_server

    _land(cli, repo)
    server, _ = build_server(repo)

    async def call(tool: str, arguments: dict):
        return await server.call_tool(tool, arguments)

    for tool, arguments in (("search", {"query": "voucher \udcff"}),
                            ("get", {"target": "\udcff"})):
        result = anyio.run(call, tool, arguments)
        text = " ".join(c.text for c in result.content)
        assert result.is_error and "internal error" not in text, text
        assert "is not valid Unicode text (a lone surrogate \\udcff)" in text, text


def test_a_directory_in_place_of_the_wal_file_is_named(cli, repo: Path) -> None:
    _land(cli, repo)
    wal = _db(repo).with_name("wiki.sqlite-wal")
    wal.unlink(missing_ok=True)
    wal.mkdir()
    found = cli("search", "travel voucher")
    assert found.exit_code == 0 and "docs/travel.md" in found.stdout
    assert "wiki.sqlite-wal beside it is a directory" in found.stderr
    indexed = cli("index")
    assert indexed.exit_code == 74 and "wiki.sqlite-wal beside it is a directory" in indexed.stderr
    assert wal.is_dir()
