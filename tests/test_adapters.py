"""Source adapters (DESIGN.md §4): the registry, ``git:`` by blob ids (work tree and ref),
``file://``, and ``http(s)://`` against a server this test starts on 127.0.0.1."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tests.conftest import git, write
from tests.loopback import Page, Site, site_fixture  # noqa: F401  (fixture)
from wiki.adapters import ADAPTERS, Check, Recorded, SourceEnv, SourcePolicy, Sources, register
from wiki.adapters.sources import fingerprint
from wiki.config import IngestConfig, SourcesConfig, WikiConfig
from wiki.errors import SourceError
from wiki.store.gitrepo import open_repository


def env(repo: Path | None, policy: SourcePolicy | None = None, **settings) -> SourceEnv:
    """Adapters over ``repo`` under ``policy`` (default: the reader's, from the
    environment: the loopback fixture allows its own server there)."""
    config = WikiConfig(sources=SourcesConfig(**settings))
    return SourceEnv(open_repository(repo) if repo else None, repo, config,
                     policy or SourcePolicy.load())


def fp(text: str) -> str:
    return fingerprint(text, ignore_frontmatter=True, ignore_whitespace=True)


# -- registry --------------------------------------------------------------------------------

def test_registry_dispatches_by_scheme_and_skips_unknown_schemes(repo: Path) -> None:
    assert {"git", "file", "http", "https"} <= set(ADAPTERS)

    @register("memo")
    class Memo:
        def __init__(self, env):
            self.closed = False

        def fingerprint(self, uri, recorded):
            return Check(uri, fp(uri[5:]))

        def read(self, uri):
            return uri[5:]

        def close(self):
            self.closed = True

    try:
        with Sources(env(repo)) as sources:
            assert sources.check("memo:hello").fingerprint == fp("hello")
            assert sources.read("MEMO:hi") == "hi"  # schemes are case-insensitive
            assert sources.check("notion:abc") is None  # no adapter: not checked
            with pytest.raises(SourceError, match="no source adapter for the scheme 'notion'"):
                sources.read("notion:abc")
            memo = sources.adapter("memo:x")
        assert memo.closed
    finally:
        ADAPTERS.pop("memo")
    with pytest.raises(ValueError, match="already registered"):
        register("git")(Memo)


# -- git: ------------------------------------------------------------------------------------

def test_git_source_unchanged_by_blob_id_then_read_when_it_differs(repo: Path) -> None:
    write(repo / "docs" / "a.md", "---\ntitle: A\n---\nPer diem is 50.\n")
    git(repo, "add", "docs/a.md")
    git(repo, "commit", "-qm", "a")
    blob = git(repo, "rev-parse", "HEAD:docs/a.md")
    sources = Sources(env(repo))
    recorded = Recorded(fp("---\ntitle: A\n---\nPer diem is 50.\n"), blob=blob)
    check = sources.check("git:docs/a.md", recorded)
    assert check.unchanged and check.fingerprint == recorded.fingerprint
    assert check.validators == {"blob": blob}
    # a wrong recorded fingerprint is believed while the blob is the same: nothing was read
    assert Sources(env(repo)).check("git:docs/a.md", Recorded("sha256:x", blob)).unchanged
    # frontmatter-only edit: a new blob id, read, same canonical fingerprint
    write(repo / "docs" / "a.md", "---\ntitle: A\nkeywords: [x]\n---\nPer diem is 50.\n")
    again = Sources(env(repo)).check("git:docs/a.md", recorded)
    assert not again.unchanged and again.fingerprint == recorded.fingerprint
    assert again.validators == {}  # not committed: the work tree file has no blob id yet
    write(repo / "docs" / "a.md", "Per diem is 60.\n")
    assert Sources(env(repo)).check("git:docs/a.md", recorded).fingerprint != \
        recorded.fingerprint


def test_git_source_at_a_ref_ignores_the_work_tree(repo: Path) -> None:
    write(repo / "docs" / "a.md", "Committed text.\n")
    git(repo, "add", "docs/a.md")
    git(repo, "commit", "-qm", "a")
    (repo / "docs" / "a.md").write_text("Edited, not committed.\n")
    at_head = Sources(env(repo, git_ref="HEAD"))
    assert at_head.check("git:docs/a.md").fingerprint == fp("Committed text.\n")
    assert at_head.read("git:docs/a.md") == "Committed text.\n"
    assert at_head.check("git:docs/gone.md").error == "no longer exists at HEAD"
    assert Sources(env(repo)).check("git:docs/a.md").fingerprint == fp("Edited, not committed.\n")
    from wiki.errors import ConfigError
    with pytest.raises(ConfigError, match="git_ref: 'nope' names no commit"):
        Sources(env(repo, git_ref="nope")).check("git:docs/a.md")


def test_git_source_errors_are_reported_not_raised(repo: Path) -> None:
    write(repo / "big.md", "x\n" * 100)
    (repo / "bin.md").write_bytes(b"a\x00b")
    git(repo, "add", "big.md", "bin.md")
    git(repo, "commit", "-qm", "files")
    config = WikiConfig(ingest=IngestConfig(max_bytes=50), sources=SourcesConfig(git_ref="HEAD"))
    sources = Sources(SourceEnv(open_repository(repo), repo, config))
    assert "too large: 200 bytes" in sources.check("git:big.md").error
    assert "binary" in sources.check("git:bin.md").error
    assert sources.check("git:../outside.md").error == \
        "is unverifiable (not allowed: the path leaves the repository)"


def test_git_rename_detection_follows_a_chain(repo: Path) -> None:
    text = "# Travel\n\n" + "Per diem rules for every trip, with receipts.\n" * 5
    write(repo / "docs" / "a.md", text)
    write(repo / "docs" / "gone.md", "bye\n")
    git(repo, "add", "docs")
    git(repo, "commit", "-qm", "add")
    git(repo, "mv", "docs/a.md", "docs/b.md")
    git(repo, "rm", "-q", "docs/gone.md")
    git(repo, "commit", "-qm", "rename and delete")
    (repo / "guide").mkdir()
    git(repo, "mv", "docs/b.md", "guide/c.md")
    git(repo, "commit", "-qm", "move again")
    adapter = Sources(env(repo)).adapter("git:")
    assert adapter.renamed(["docs/a.md", "docs/gone.md", "never/was.md"]) == \
        {"docs/a.md": "guide/c.md"}
    git(repo, "mv", "guide/c.md", "guide/d.md")  # staged, not committed: seen in work-tree mode
    assert Sources(env(repo)).adapter("git:").renamed(["docs/a.md"]) == {"docs/a.md": "guide/d.md"}
    assert Sources(env(repo, git_ref="HEAD")).adapter("git:").renamed(["docs/a.md"]) == \
        {"docs/a.md": "guide/c.md"}


def test_file_source(tmp_path: Path) -> None:
    page = write(tmp_path / "café note.md", "\ufeffText.\r\n")
    allowed = SourcePolicy(roots=(tmp_path.resolve(),))
    sources = Sources(env(None, allowed))
    assert sources.check(page.as_uri()).fingerprint == fp("Text.")
    page.unlink()
    assert Sources(env(None, allowed)).check(page.as_uri()).error == "no longer exists"


# -- http(s): a real server on loopback -------------------------------------------------------

def test_http_etag_unchanged_answers_304_without_a_body(site: Site) -> None:
    site.pages["/a"] = Page(b"Per diem is 50.\n", etag='"v1"')
    with Sources(env(None)) as sources:
        first = sources.check(f"{site.url}/a")
        assert first.fingerprint == fp("Per diem is 50.\n") and first.validators == {"etag": '"v1"'}
        again = sources.check(f"{site.url}/a", Recorded(first.fingerprint, etag='"v1"'))
    assert again.unchanged and again.fingerprint == first.fingerprint
    assert site.answered == [("/a", 200), ("/a", 304)]


def test_http_changed_body_and_changed_etag(site: Site) -> None:
    recorded = Recorded(fp("Per diem is 50.\n"), etag='"v1"')
    site.pages["/a"] = Page(b"Per diem is 60.\n", etag='"v2"')
    site.pages["/b"] = Page(b"Per  diem is 50.\r\n", etag='"v9"')  # new etag, same text
    with Sources(env(None)) as sources:
        changed = sources.check(f"{site.url}/a", recorded)
        same = sources.check(f"{site.url}/b", recorded)
    assert changed.fingerprint == fp("Per diem is 60.\n") and not changed.unchanged
    assert changed.validators == {"etag": '"v2"'}
    assert same.fingerprint == recorded.fingerprint and not same.unchanged


def test_http_404_and_server_error_are_errors(site: Site) -> None:
    site.pages["/boom"] = Page(b"oops", status=500)
    with Sources(env(None)) as sources:
        assert sources.check(f"{site.url}/missing").error == "answers HTTP 404"
        assert sources.check(f"{site.url}/boom").error == "answers HTTP 500"
        with pytest.raises(SourceError, match="answers HTTP 404"):
            sources.read(f"{site.url}/missing")


def test_http_timeout_and_refused_connection(site: Site) -> None:
    site.pages["/slow"] = Page(b"late", slow=True)
    with Sources(env(None, SourcePolicy(private=True), timeout=0.2)) as sources:
        assert sources.check(f"{site.url}/slow").error == "timed out after 0.2 s"
        site.release.set()
        refused = sources.check("http://127.0.0.1:9/none")
    assert refused.fingerprint is None and refused.error.startswith("unreachable")


def test_http_sources_are_checked_concurrently_then_answered_from_memory(site: Site) -> None:
    for name in ("s1", "s2", "s3"):
        site.pages[f"/{name}"] = Page(f"Page {name}.\n".encode(), slow=True)
    uris = [(f"{site.url}/{name}", Recorded()) for name in ("s1", "s2", "s3")]
    with Sources(env(None, timeout=20)) as sources:
        worker = threading.Thread(target=sources.check_all, args=([*uris, uris[0]],))
        worker.start()
        # every slow page waits for `release`: checked one by one, only one would arrive
        for _ in range(400):
            if len(site.arrived) == 3:
                break
            threading.Event().wait(0.025)
        together = sorted(site.arrived)
        site.release.set()
        worker.join(20)
        assert together == ["/s1", "/s2", "/s3"]
        assert [sources.check(uri).fingerprint for uri, _ in uris] == \
            [fp(f"Page {name}.\n") for name in ("s1", "s2", "s3")]
    assert len(site.answered) == 3  # check() answered from memory, each page fetched once


def test_sources_settings_are_checked() -> None:
    from wiki.config import parse_config
    from wiki.config_template import TEMPLATE
    from wiki.errors import ConfigError
    assert parse_config(TEMPLATE).sources == SourcesConfig()
    for bad, message in (("timeout = 0", "timeout must be more than 0"),
                         ("timeout = 'x'", "must be a non-negative number"),
                         ("git_ref = '--all'", "git_ref must be a ref name")):
        with pytest.raises(ConfigError, match=message):
            parse_config(f"[sources]\n{bad}\n")


def _blob(repo_path: Path, path: str) -> str:
    return git(repo_path, "hash-object", path)


def test_a_kept_work_tree_listing_sees_every_later_edit(repo: Path, monkeypatch) -> None:
    """``work_tree_blobs`` is reused between calls (``KeptListings``) only while the git
    index and every tracked file are as they were before git listed them: an edit, even
    one that keeps the size and puts the modification time back, a ``git add`` and a
    removal are each seen by the next call."""
    import git as gitpython

    from wiki.adapters import git_source
    from wiki.adapters.git_source import work_tree_blobs

    monkeypatch.setattr(git_source, "SETTLED_NS", 0)  # this test's files count as settled
    listed = []
    real = git_source._list_work_tree_files
    monkeypatch.setattr(git_source, "_list_work_tree_files",
                        lambda handle: listed.append(1) or real(handle))
    write(repo / "docs" / "policy.md", "Travel needs approval.\n")
    git(repo, "add", "docs/policy.md")
    handle = gitpython.Repo(repo)
    for _ in range(4):  # the first learns the paths, the second is kept, then reused
        assert work_tree_blobs(handle)["docs/policy.md"][1] == _blob(repo, "docs/policy.md")
    assert len(listed) == 2
    policy = repo / "docs" / "policy.md"
    old = policy.stat()
    policy.write_text("Travel needs consent.\n")  # same size
    os.utime(policy, ns=(old.st_atime_ns, old.st_mtime_ns))  # same modification time
    assert "docs/policy.md" not in work_tree_blobs(handle)  # changed, not staged: no id
    git(repo, "add", "docs/policy.md")
    assert work_tree_blobs(handle)["docs/policy.md"][1] == _blob(repo, "docs/policy.md")
    policy.unlink()
    assert "docs/policy.md" not in work_tree_blobs(handle)
    copy = work_tree_blobs(handle)
    copy.clear()  # a caller's copy: the kept listing is untouched
    assert "README.md" in work_tree_blobs(handle)


def test_a_kept_listing_sees_a_folder_swapped_for_a_link_and_flagged_files(
        repo: Path, tmp_path: Path, monkeypatch) -> None:
    """Found by an adversarial review: a tracked file's folder moved out and replaced by a
    symbolic link keeps the file's own status, so the kept listing must watch folders
    too (git then calls the file deleted); a file marked assume-unchanged or skip-worktree
    is never called clean (``git diff-files`` does not look at it)."""
    import shutil

    import git as gitpython

    from wiki.adapters import git_source
    from wiki.adapters.git_source import work_tree_blobs

    monkeypatch.setattr(git_source, "SETTLED_NS", 0)
    write(repo / "docs" / "a.md", "Travel needs approval.\n")
    write(repo / "flags" / "b.md", "Lodging is booked by the traveller.\n")
    git(repo, "add", "docs", "flags")
    handle = gitpython.Repo(repo)
    work_tree_blobs(handle)
    assert "docs/a.md" in work_tree_blobs(handle)  # kept from here on
    shutil.move(repo / "docs", tmp_path / "outside")
    (repo / "docs").symlink_to(tmp_path / "outside")
    assert "D\tdocs/a.md" in git(repo, "diff-files", "--name-status")
    assert "docs/a.md" not in work_tree_blobs(handle)
    for flag in ("--assume-unchanged", "--skip-worktree"):
        git(repo, "update-index", flag, "flags/b.md")
        (repo / "flags" / "b.md").write_text("Lodging is booked by the office.\n")
        assert "flags/b.md" not in work_tree_blobs(handle), flag
        git(repo, "update-index", flag.replace("--", "--no-"), "flags/b.md")



def test_a_repository_of_many_files_is_listed_by_git_every_time(repo: Path,
                                                                monkeypatch) -> None:
    """Above ``KeptListings.MAX_PATHS`` tracked files, checking a kept listing would cost
    more than git's own listing: nothing is kept, and an edit is still seen."""
    import git as gitpython

    from wiki.adapters import git_source
    from wiki.adapters.git_source import LISTINGS, work_tree_blobs

    monkeypatch.setattr(git_source, "SETTLED_NS", 0)
    monkeypatch.setattr(git_source.KeptListings, "MAX_PATHS", 2)
    for name in ("a", "b", "c"):
        write(repo / f"{name}.md", f"{name} text\n")
    git(repo, "add", ".")
    handle = gitpython.Repo(repo)
    for _ in range(3):
        assert "a.md" in work_tree_blobs(handle)
    assert os.path.realpath(handle.git_dir) not in LISTINGS._kept
    (repo / "a.md").write_text("a changed\n")
    assert "a.md" not in work_tree_blobs(handle)
