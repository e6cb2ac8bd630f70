"""Proposing by hand: new, edit, retract, supersede; near-duplicates; --as-of (W1, W5)."""

from __future__ import annotations

import datetime as dt

import pytest
from conftest import ALICE, BOB, write

from wiki.answering.search import filters_for, search_for
from wiki.errors import ConfigError, EntryError, NotFoundError, UsageError
from wiki.knowledge import authoring
from wiki.review.proposals import approve
from wiki.store.workspace import Wiki

PER_DIEM_59 = b"---\ntitle: Per diem rate\nsummary: The per diem rate is $59.\n---\n" \
              b"The per diem rate is $59 per day.\n"
PER_DIEM_68 = b"---\ntitle: Per diem rate 2026\nsummary: The per diem rate is $68.\n---\n" \
              b"The per diem rate is $68 per day.\n"


def _raw(year: int, month: int, day: int) -> str:
    """A git raw date ("<unix seconds> +0000") at noon UTC."""
    return f"{int(dt.datetime(year, month, day, 12, tzinfo=dt.UTC).timestamp())} +0000"


def _land(wiki: Wiki, result: authoring.Authored) -> None:
    assert result.proposal is not None
    approve(wiki, result.proposal.name, approver=BOB)


def test_new_entry_gets_an_id_a_path_and_lands(wiki: Wiki) -> None:
    result = authoring.new_entry(wiki, PER_DIEM_59, category="Travel & Leave", author=ALICE)
    assert result.created and result.proposal.paths == ["travel-leave/per-diem-rate.md"]
    _land(wiki, result)
    entry = wiki.snapshot().entry("travel-leave/per-diem-rate.md")
    assert entry.id.startswith("e") and len(entry.id) == 13
    assert entry.meta["created"] == entry.meta["updated"]


@pytest.mark.robustness("W1")
def test_same_entry_twice_is_a_noop_naming_the_first(wiki: Wiki) -> None:
    _land(wiki, authoring.new_entry(wiki, PER_DIEM_59, category="travel", author=ALICE))
    again = authoring.new_entry(wiki, PER_DIEM_59, category="travel", author=ALICE)
    assert again.proposal is None and again.existing == "travel/per-diem-rate.md"


def test_near_duplicates_are_flagged_for_the_reviewer(wiki: Wiki, repo) -> None:
    _land(wiki, authoring.new_entry(wiki, PER_DIEM_59, category="travel", author=ALICE))
    similar = b"---\ntitle: per-diem RATE\n---\nSomething else entirely.\n"
    result = authoring.new_entry(wiki, similar, category="other", author=ALICE)
    assert result.near_duplicates == ["travel/per-diem-rate.md"]
    from conftest import git
    message = git(repo, "log", "-1", "--format=%B", result.proposal.tip)
    assert "Near-duplicate of: travel/per-diem-rate.md" in message


def test_edit_keeps_the_id_and_refuses_an_id_change(wiki: Wiki) -> None:
    _land(wiki, authoring.new_entry(wiki, PER_DIEM_59, category="travel", author=ALICE))
    current = wiki.snapshot().entry("travel/per-diem-rate.md")
    edited = current.to_bytes().replace(b"$59 per day", b"$59 per day, $44 on travel days")
    result = authoring.edit_entry(wiki, current.id, edited, author=ALICE)
    _land(wiki, result)
    assert b"$44" in wiki.snapshot().read("travel/per-diem-rate.md")
    with pytest.raises(ConfigError, match="cannot change the id"):
        authoring.edit_entry(wiki, current.id, edited.replace(current.id.encode(), b"other1"))
    assert authoring.edit_entry(wiki, current.id, wiki.snapshot().read(
        "travel/per-diem-rate.md")).proposal is None  # unchanged: nothing to propose


def test_retract_needs_a_reason_and_hides_the_entry(wiki: Wiki) -> None:
    _land(wiki, authoring.new_entry(wiki, PER_DIEM_59, category="travel", author=ALICE))
    with pytest.raises(UsageError, match="reason"):
        authoring.retract_entry(wiki, "travel/per-diem-rate.md", " ")
    _land(wiki, authoring.retract_entry(wiki, "travel/per-diem-rate", "wrong", author=ALICE))
    assert search_for(wiki, "per diem rate").hits == []


@pytest.mark.robustness("W5")
def test_superseded_fact_is_hidden_but_kept_and_found_as_of_then(wiki: Wiki,
                                                                monkeypatch) -> None:
    monkeypatch.setenv("GIT_COMMITTER_DATE", _raw(2026, 1, 10))
    _land(wiki, authoring.new_entry(wiki, PER_DIEM_59, category="travel", author=ALICE))
    monkeypatch.setenv("GIT_COMMITTER_DATE", _raw(2026, 3, 1))
    result = authoring.supersede_entry(wiki, "travel/per-diem-rate.md", PER_DIEM_68,
                                       author=ALICE)
    _land(wiki, result)
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    snapshot = wiki.snapshot()
    old = snapshot.entry("travel/per-diem-rate.md")
    new = snapshot.entry("travel/per-diem-rate-2026.md")
    assert old.status == "superseded" and old.meta["superseded_by"] == [new.id]
    assert new.meta["supersedes"] == [old.id]
    now = [h.key for h in search_for(wiki, "per diem rate").hits]
    assert now == ["travel/per-diem-rate-2026.md"]
    both = [h.key for h in search_for(wiki, "per diem rate",
                                  filters=filters_for(include_superseded=True)).hits]
    assert set(both) == {"travel/per-diem-rate.md", "travel/per-diem-rate-2026.md"}
    then = search_for(wiki, "per diem rate", as_of=dt.datetime(2026, 2, 1, tzinfo=dt.UTC))
    assert [h.key for h in then.hits] == ["travel/per-diem-rate.md"]
    with pytest.raises(NotFoundError, match="did not exist yet"):
        search_for(wiki, "per diem", as_of=dt.datetime(2000, 1, 1, tzinfo=dt.UTC))


@pytest.mark.robustness("W5")
def test_robustness_w5_cli_hides_the_superseded_entry_unless_asked(cli, wiki: Wiki) -> None:
    import json
    _land(wiki, authoring.new_entry(wiki, PER_DIEM_59, category="travel", author=ALICE))
    _land(wiki, authoring.supersede_entry(wiki, "travel/per-diem-rate.md", PER_DIEM_68,
                                          author=ALICE))
    old, new = "travel/per-diem-rate.md", "travel/per-diem-rate-2026.md"

    def paths(*args: str) -> list[str]:
        result = cli("search", "per diem rate", "--json", *args)
        assert result.exit_code == 0, result.output
        return [hit["path"] for hit in json.loads(result.stdout)["hits"]]

    assert paths() == [new]
    assert set(paths("--include-superseded")) == {old, new}
    answer = cli("ask", "what is the per diem rate?", "--json")
    assert answer.exit_code == 0, answer.output
    assert [c["path"] for c in json.loads(answer.stdout)["citations"]] == [new]
    assert "$59" not in answer.stdout  # the old fact is not in the default answer
    shown = cli("show", old)  # still on the branch, marked superseded
    assert shown.exit_code == 0 and "status: superseded" in shown.stdout
    history = cli("history", old, "--json")
    assert history.exit_code == 0 and len(json.loads(history.stdout)["revisions"]) == 2


def test_malformed_file_is_one_error(wiki: Wiki) -> None:
    with pytest.raises(EntryError, match="no frontmatter"):
        authoring.new_entry(wiki, b"just text\n", author=ALICE)


def test_cli_propose_new_edit_in_editor_and_retract(cli, wiki: Wiki, repo, tmp_path,
                                                    monkeypatch) -> None:
    source = write(tmp_path / "rate.md", PER_DIEM_59.decode())
    result = cli("propose", str(source), "--category", "travel")
    assert result.exit_code == 0 and result.stdout.startswith("new-")
    approve(wiki, result.stdout.strip(), approver=BOB)
    script = write(tmp_path / "ed.py", "import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
                   "p.write_text(p.read_text().replace('$59 per day', '$61 per day'))\n")
    monkeypatch.setenv("EDITOR", f"python3 {script}")
    edited = cli("propose", "--edit", "travel/per-diem-rate.md")
    assert edited.exit_code == 0 and edited.stdout.startswith("edit-")
    assert cli("propose", "--retract", "travel/per-diem-rate.md").exit_code == 2
    retracted = cli("propose", "--retract", "travel/per-diem-rate.md", "--reason", "old")
    assert retracted.exit_code == 0
    assert cli("search", "per diem", "--as-of", "not-a-date").exit_code == 2


def test_new_entry_with_a_taken_id_is_refused(wiki: Wiki) -> None:
    from wiki.errors import DuplicateIdError
    _land(wiki, authoring.new_entry(wiki, b"---\nid: per-diem\ntitle: Per diem\n---\nx\n",
                                    author=ALICE))
    with pytest.raises(DuplicateIdError, match="use --edit per-diem"):
        authoring.new_entry(wiki, b"---\nid: per-diem\ntitle: Other\n---\ny\n", author=ALICE)


def test_missing_editor_is_a_usage_error(cli, wiki: Wiki, monkeypatch) -> None:
    _land(wiki, authoring.new_entry(wiki, PER_DIEM_59, category="travel", author=ALICE))
    monkeypatch.setenv("EDITOR", "/nonexistent/editor")
    monkeypatch.delenv("VISUAL", raising=False)
    result = cli("propose", "--edit", "travel/per-diem-rate.md")
    assert result.exit_code == 2 and "cannot run the editor" in result.stderr
