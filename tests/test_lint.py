"""`wiki lint`: each rule on a real wiki branch (one case that fires, one that does not),
selection, --fix as one proposal, and the CLI's formats and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ALICE, BOB, entry_text, ingest_and_land, write
from wiki.lint import RULES, report_dict, run_lint, select_rules
from wiki.review.proposals import approve, get_proposal, list_proposals
from wiki.store.snapshot import write_commit
from wiki.store.workspace import Wiki


def commit(w: Wiki, changes: dict[str, bytes | None], *, indexes: bool = True) -> str:
    """Put ``changes`` straight on the wiki branch (with regenerated indexes unless told)."""
    head = w.require_head()
    snap = w.snapshot(head)
    if indexes:
        new = write_commit(snap, changes, "test\n", author=ALICE)
    else:
        tree = w.store.write_tree(snap.files, changes)
        new = w.store.commit(tree, [head], "test\n", author=ALICE)
    w.store.update_ref(w.ref, new, head, "test")
    return new


def entries(w: Wiki, **texts: str) -> None:
    commit(w, {f"{name.replace('__', '/')}.md": text.encode() for name, text in texts.items()})


def codes(w: Wiki, code: str) -> list:
    return run_lint(w, {code}).findings


def test_clean_wiki_has_no_findings(wiki: Wiki) -> None:
    entries(wiki, a=entry_text("e-a", "Alpha", "See [beta](b.md)."),
            b=entry_text("e-b", "Beta", "Body.", relations="{related_to: e-a}"))
    report = run_lint(wiki)
    assert report.findings == [] and report.errors == 0
    assert report.rules == sorted(RULES)


# -- W001 / W002 ---------------------------------------------------------------------------

def test_w001_stale_source(wiki: Wiki, repo: Path) -> None:
    src = write(repo / "docs" / "travel.md", "# Travel\n\nPer diem is 50 dollars.\n")
    ingest_and_land(wiki, src)
    assert codes(wiki, "W001") == []
    src.write_text("# Travel\n\nPer diem is 60 dollars.\n")
    (finding,) = codes(wiki, "W001")
    assert finding.severity == "warning" and "git:docs/travel.md changed" in finding.message
    assert finding.entry_id and not finding.fixable


def test_w001_whitespace_only_change_is_not_stale(wiki: Wiki, repo: Path) -> None:
    src = write(repo / "docs" / "travel.md", "# Travel\n\nPer diem is 50 dollars.\n")
    ingest_and_land(wiki, src)
    src.write_text("# Travel\n\n\n\nPer diem   is 50 dollars.   \n")
    assert codes(wiki, "W001") == []


def test_w002_missing_source(wiki: Wiki, repo: Path) -> None:
    src = write(repo / "docs" / "travel.md", "# Travel\n\nPer diem is 50 dollars.\n")
    ingest_and_land(wiki, src)
    assert codes(wiki, "W002") == []
    src.unlink()
    (finding,) = codes(wiki, "W002")
    assert finding.severity == "error" and "no longer exists" in finding.message


def test_w002_file_uri_and_escape(wiki: Wiki, tmp_path: Path, monkeypatch) -> None:
    outside = write(tmp_path / "outside.md", "text\n")
    monkeypatch.setenv("WIKI_SOURCE_ROOTS", str(tmp_path))  # the reader reads file: there
    entries(wiki, a=entry_text("e-a", "A", "x", sources=f"[{{uri: '{outside.as_uri()}'}}]"),
            b=entry_text("e-b", "B", "x", sources="[{uri: 'git:../../etc/passwd'}]"))
    found = codes(wiki, "W002")
    assert [f.entry_id for f in found] == ["e-b"] and "leaves the repository" in found[0].message
    outside.unlink()
    assert {f.entry_id for f in codes(wiki, "W002")} == {"e-a", "e-b"}


# -- W003 / W004 ---------------------------------------------------------------------------

def test_w003_contradiction(wiki: Wiki) -> None:
    entries(wiki, a=entry_text("e-a", "A", "x", facts="{per_diem: 50}"),
            b=entry_text("e-b", "B", "y", facts="{per_diem: 60}"))
    found = codes(wiki, "W003")
    assert [f.entry_id for f in found] == ["e-a", "e-b"]
    assert "'per_diem' is '50' here but e-b says '60'" in found[0].message


def test_w003_same_value_or_inactive_is_fine(wiki: Wiki) -> None:
    entries(wiki, a=entry_text("e-a", "A", "x", facts="{per_diem: 50}"),
            b=entry_text("e-b", "B", "y", facts="{per_diem: 50}"),
            c=entry_text("e-c", "C", "z", facts="{per_diem: 70}", status="retracted"))
    assert codes(wiki, "W003") == []


def test_w004_near_duplicate(wiki: Wiki) -> None:
    entries(wiki, a=entry_text("e-a", "Per Diem", "x"),
            b=entry_text("e-b", "Travel", "y", aliases="[per-diem]"))
    found = codes(wiki, "W004")
    assert {f.entry_id for f in found} == {"e-a", "e-b"}
    assert "'per diem' is also used by b.md" in found[0].message


def test_w004_distinct_names(wiki: Wiki) -> None:
    entries(wiki, a=entry_text("e-a", "Per Diem", "x"), b=entry_text("e-b", "Per Diem 2", "y"),
            c=entry_text("e-c", "Per Diem", "z", status="superseded", superseded_by="e-a"))
    assert codes(wiki, "W004") == []


# -- W005 ----------------------------------------------------------------------------------

def test_w005_index_drift_and_fix(wiki: Wiki) -> None:
    entries(wiki, travel__a=entry_text("e-a", "A", "x", summary="Old."))
    assert codes(wiki, "W005") == []
    commit(wiki, {"travel/a.md": entry_text("e-a", "A", "x", summary="New.").encode(),
                  "travel/index.md": None, "gone/index.md": b"# gone\n"}, indexes=False)
    found = codes(wiki, "W005")
    assert [(f.path, f.fixable) for f in found] == [
        ("gone/index.md", True), ("travel/index.md", True)]
    assert [f.message for f in found] == ["index.md of a folder without entries",
                                          "index.md is missing"]
    report = run_lint(wiki, {"W005"}, fix=True)
    assert report.findings == [] and len(report.fixed) == 2 and report.proposal_created
    assert report.proposal.name.startswith("lint-fix-")
    assert run_lint(wiki, {"W005"}).errors == 2  # lint itself never writes to the branch
    again = run_lint(wiki, {"W005"}, fix=True)
    assert again.proposal.name == report.proposal.name and not again.proposal_created
    approve(wiki, report.proposal.name, approver=BOB)
    assert codes(wiki, "W005") == []


# -- W006 ----------------------------------------------------------------------------------

def test_w006_broken_link(wiki: Wiki) -> None:
    body = ("See [b](../b.md), [c](c.md#part), [web](https://x.org/a.md), "
            "`[code](nope.md)` and [up](../../etc.md).\n\n[1]: git:pages/x.md")
    entries(wiki, b=entry_text("e-b", "B", "y"),
            t__a=entry_text("e-a", "A", body, relations="{related_to: [e-b, e-zz]}",
                            supersedes="e-gone"))
    found = codes(wiki, "W006")
    messages = sorted(f.message for f in found)
    assert messages == ["link '../../etc.md': leaves the wiki",
                        "link 'c.md#part': no such file on the branch",
                        "relations.related_to names 'e-zz', which no entry has",
                        "supersedes names 'e-gone', which no entry has"]


def test_w006_good_links(wiki: Wiki) -> None:
    entries(wiki, b=entry_text("e-b", "B", "y"),
            t__a=entry_text("e-a", "A", "See [b](../b.md) and [<i>](<../index.md>).",
                            relations="{depends_on: e-b}"))
    assert codes(wiki, "W006") == []


# -- W007 ----------------------------------------------------------------------------------

def test_w007_schema_error_and_duplicate_id(wiki: Wiki) -> None:
    entries(wiki, a=entry_text("e-a", "A", "x", type="memo"),
            b=entry_text("e-b", "B", "y"), c=entry_text("e-b", "C", "z"))
    found = codes(wiki, "W007")
    assert [(f.path, f.line) for f in found] == [("a.md", 4), ("b.md", None), ("c.md", None)]
    assert found[0].message.startswith("field 'type': must be one of")
    assert "duplicate id 'e-b', also in c.md" in found[1].message


def test_w007_valid_entries(wiki: Wiki) -> None:
    entries(wiki, a=entry_text("e-a", "A", "x", type="fact", tags="[t]"))
    assert codes(wiki, "W007") == []


# -- W008 / W009 ---------------------------------------------------------------------------

def test_w008_expired(wiki: Wiki) -> None:
    entries(wiki, a=entry_text("e-a", "A", "x", valid_until="2020-01-01"),
            b=entry_text("e-b", "B", "y", valid_until="2999-01-01"),
            c=entry_text("e-c", "C", "z", valid_until="2020-01-01", status="retracted"))
    assert [f.entry_id for f in codes(wiki, "W008")] == ["e-a"]


def test_w009_broken_supersession(wiki: Wiki) -> None:
    entries(wiki, old=entry_text("e-old", "Old", "x", status="superseded",
                                 superseded_by="e-new"),
            new=entry_text("e-new", "New", "y"), lone=entry_text("e-lone", "L", "z",
                                                                 status="superseded"))
    found = codes(wiki, "W009")
    assert sorted(f.message for f in found) == [
        "status is superseded but superseded_by is missing",
        "superseded_by 'e-new', but new.md has no supersedes 'e-old'"]


def test_w009_consistent_supersession(wiki: Wiki) -> None:
    entries(wiki, old=entry_text("e-old", "Old", "x", status="superseded",
                                 superseded_by="e-new"),
            new=entry_text("e-new", "New", "y", supersedes="[e-old]"))
    assert codes(wiki, "W009") == []


# -- selection, W001 fix --------------------------------------------------------------------

def test_select_and_ignore() -> None:
    assert select_rules({"W00"}, {"W001", "near-duplicate"}) == \
        ["W002", "W003", "W005", "W006", "W007", "W008", "W009"]
    from wiki.errors import ConfigError
    with pytest.raises(ConfigError, match="unknown lint rule 'W999'"):
        select_rules({"W999"})


def test_fix_fills_a_missing_fingerprint(wiki: Wiki, repo: Path) -> None:
    write(repo / "docs" / "a.md", "Alpha text.\n")
    text = entry_text("e-a", "A", "x", sources="[{uri: 'git:docs/a.md'}]") + "# kept\n"
    entries(wiki, a=text)
    (finding,) = codes(wiki, "W001")
    assert finding.fixable and "no recorded fingerprint" in finding.message
    report = run_lint(wiki, fix=True)
    assert [f.code for f in report.fixed] == ["W001"] and report.errors == 0
    approve(wiki, report.proposal.name, approver=BOB)
    fixed = wiki.snapshot().entry("a.md")
    assert fixed.sources[0].fingerprint.startswith("sha256:") and fixed.body.endswith("# kept\n")
    assert run_lint(wiki).findings == []
    assert list_proposals(wiki) == []


# -- CLI -----------------------------------------------------------------------------------

@pytest.fixture
def lint_cli(cli, wiki: Wiki):
    import wiki_cli.lint  # noqa: F401  (registers the command)
    return cli


def test_cli_exit_codes_and_formats(lint_cli, wiki: Wiki) -> None:
    entries(wiki, a=entry_text("e-a", "A", "x", facts="{k: 1}"),
            b=entry_text("e-b", "A", "y", facts="{k: 2}"))
    result = lint_cli("lint")
    assert result.exit_code == 1, result.output
    assert "W003" in result.stdout and "W004" in result.stdout
    assert lint_cli("lint", "--ignore", "W003").exit_code == 0  # warnings only
    data = json.loads(lint_cli("lint", "--format", "json", "--select", "W003,W004").stdout)
    assert data["summary"]["counts"] == {"W003": 2, "W004": 2} and data["summary"]["errors"] == 2
    assert {"code", "severity", "path", "entry_id", "message", "fixable"} <= \
        set(data["findings"][0])
    md = lint_cli("lint", "--format", "markdown").stdout
    assert md.startswith("# wiki lint") and "| `a.md` | W003 | error |" in md
    saved = sorted((wiki.state_dir / "lint").glob("*.json"))
    assert len(saved) == 4 and json.loads(saved[-1].read_text())["commit"] == wiki.head()


def test_cli_usage_errors_and_fix(lint_cli, wiki: Wiki) -> None:
    assert lint_cli("lint", "--select", "W999").exit_code == 2
    assert lint_cli("lint", "--format", "xml").exit_code == 2
    commit(wiki, {"index.md": b"stale\n"}, indexes=False)
    result = lint_cli("lint", "--fix")
    assert result.exit_code == 0, result.output
    (proposal,) = list_proposals(wiki)
    assert proposal.name.startswith("lint-fix-") and proposal.name in result.stderr
    assert get_proposal(wiki, proposal.name).subject.startswith("lint: fix 1 finding")


def test_report_dict_shape(wiki: Wiki) -> None:
    data = report_dict(run_lint(wiki))
    assert data["findings"] == [] and data["proposal"] is None and data["commit"] == wiki.head()
