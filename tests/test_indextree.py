"""index.md: generated, byte-stable, regenerated with every change (ROBUSTNESS I4)."""

from __future__ import annotations

import pytest
from conftest import ALICE, entry_text

from wiki.store import indextree
from wiki.store.snapshot import write_commit
from wiki.store.workspace import Wiki


def _land(wiki: Wiki, changes: dict[str, bytes | None]) -> str:
    head = wiki.require_head()
    commit = write_commit(wiki.snapshot(head), changes, "change", author=ALICE)
    wiki.store.update_ref(wiki.ref, commit, head, "test")
    return commit


def _listed(text: str) -> list[str]:
    return [line.split("](", 1)[1].split(")", 1)[0] for line in text.splitlines()
            if line.startswith("- [")]


def test_render_is_sorted_and_byte_stable() -> None:
    entries = {"b.md": indextree.Listing("beta", "Second."),
               "a.md": indextree.Listing("Alpha [x]", "First\nline.")}
    first = indextree.render("notes", "# notes\n\n", {"sub": 2, "one": 1}, entries)
    again = indextree.render("notes", "# notes\n\n", {"one": 1, "sub": 2}, dict(reversed(
        list(entries.items()))))
    assert first == again
    assert first.splitlines() == [
        "# notes", "", indextree.MARKER, "", "## Folders", "",
        "- [one/](one/index.md) — 1 entry",
        "- [sub/](sub/index.md) — 2 entries", "",
        "## Entries", "",
        "- [Alpha \\[x\\]](a.md) — First line.",
        "- [beta](b.md) — Second."]
    assert first.endswith("Second.\n")


@pytest.mark.robustness("I4")
def test_hundred_entries_then_ten_deleted_and_ten_added(wiki: Wiki) -> None:
    changes = {f"team/e{i:03}.md": entry_text(f"id{i:03}", f"Entry {i}", "b").encode()
               for i in range(100)}
    _land(wiki, changes)
    deleted = {f"team/e{i:03}.md": None for i in range(0, 100, 10)}
    added = {f"team/sub/n{i}.md": entry_text(f"new{i}", f"New {i}", "b").encode()
             for i in range(10)}
    _land(wiki, {**deleted, **added})
    snapshot = wiki.snapshot()
    expected = sorted(p for p in snapshot.entry_paths())
    listed = []
    for path in snapshot.files:
        if path.endswith("index.md"):
            folder = indextree.parent(path)
            prefix = f"{folder}/" if folder else ""
            listed += [prefix + t for t in _listed(snapshot.read(path).decode())
                       if not t.endswith("index.md")]
    assert sorted(listed) == expected
    assert len(expected) == 100
    root = snapshot.read("index.md").decode()
    assert "- [team/](team/index.md) — 100 entries" in root
    assert "- [sub/](sub/index.md) — 10 entries" in snapshot.read("team/index.md").decode()


@pytest.mark.robustness("I4")
def test_robustness_i4_hundred_then_ten_deleted_ten_added_lint_reports_no_drift(
        wiki: Wiki) -> None:
    from wiki.lint import run_lint
    _land(wiki, {f"t/e{i:03}.md": entry_text(f"id{i:03}", f"Entry {i}", "b").encode()
                 for i in range(100)})
    _land(wiki, {**{f"t/e{i:03}.md": None for i in range(0, 100, 10)},
                 **{f"t/new/n{i}.md": entry_text(f"new{i}", f"New {i}", "b").encode()
                    for i in range(10)}})
    snapshot = wiki.snapshot()
    assert sorted(_listed(snapshot.read("t/index.md").decode())) == \
        [f"e{i:03}.md" for i in range(100) if i % 10] + ["new/index.md"]
    assert sorted(_listed(snapshot.read("t/new/index.md").decode())) == \
        [f"n{i}.md" for i in range(10)]
    report = run_lint(wiki, {"W005"})
    assert report.findings == [] and report.errors == 0


def test_overview_is_kept_and_empty_folders_lose_their_index(wiki: Wiki) -> None:
    _land(wiki, {"ops/a.md": entry_text("a1", "A", "x").encode()})
    index = wiki.snapshot().read("ops/index.md").decode()
    custom = index.replace("# ops\n", "# Operations\n\nHow we run things.\n")
    _land(wiki, {"ops/index.md": custom.encode()})  # a hand edit is not regenerated away...
    _land(wiki, {"ops/b.md": entry_text("b1", "B", "x").encode()})
    text = wiki.snapshot().read("ops/index.md").decode()
    assert text.startswith("# Operations\n\nHow we run things.\n")
    assert _listed(text) == ["a.md", "b.md"]
    _land(wiki, {"ops/a.md": None, "ops/b.md": None})
    assert "ops/index.md" not in wiki.snapshot().files
    assert "ops/" not in wiki.snapshot().read("index.md").decode()


def test_unchanged_tree_gives_identical_index_bytes(wiki: Wiki) -> None:
    _land(wiki, {"k/a.md": entry_text("a1", "A", "x").encode()})
    first = wiki.snapshot().read("k/index.md")
    _land(wiki, {"k/a.md": entry_text("a1", "A", "y").encode()})  # body only
    assert wiki.snapshot().read("k/index.md") == first
