"""`wiki lint`, the rules added with the source adapters: http sources through W001/W002,
W011 renamed-source (and its fix), W012 orphan, W013 conflicting-subject, W010's quiet
case, and a doc section for every rule."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import BOB, entry_text, git, ingest_and_land, write
from tests.loopback import Page, Site, site_fixture  # noqa: F401  (fixture)
from tests.test_lint import codes, commit, entries
from wiki.adapters.sources import fingerprint
from wiki.config_template import TEMPLATE
from wiki.lint import RULES, run_lint
from wiki.review.proposals import approve
from wiki.store.workspace import Wiki

ROOT = Path(__file__).parent.parent
TRAVEL = "# Travel\n\n" + "".join(f"Rule {n}: keep the receipt for every trip.\n"
                                  for n in range(8))


def fp(text: str) -> str:
    return fingerprint(text, ignore_frontmatter=True, ignore_whitespace=True)


def settings(w: Wiki, **values: str) -> None:
    text = TEMPLATE
    for key, value in values.items():
        text = re.sub(rf"^{key} = .*$", f"{key} = {value}", text, flags=re.MULTILINE)
    commit(w, {"wiki.toml": text.encode()})


def test_every_rule_has_a_doc_section() -> None:
    doc = (ROOT / "docs" / "lint.md").read_text()
    for code, found in RULES.items():
        assert f"\n### {code} {found.name} (" in doc, f"{code} {found.name} is not in docs/lint.md"


# -- http sources through the registry -------------------------------------------------------

def test_http_sources_stale_missing_and_unchanged(wiki: Wiki, site: Site) -> None:
    settings(wiki, timeout="0.3")
    site.pages.update({"/same": Page(b"Per diem is 50.\n", etag='"v1"'),
                       "/moved": Page(b"Per diem is 60.\n", etag='"v2"'),
                       "/slow": Page(b"late", slow=True)})
    record = f"fingerprint: '{fp('Per diem is 50.')}', etag: '\"v1\"'"
    entries(wiki, a=entry_text("e-a", "A", "x", sources=f"[{{uri: '{site.url}/same', {record}}}]"),
            b=entry_text("e-b", "B", "x", sources=f"[{{uri: '{site.url}/moved', {record}}}]"),
            c=entry_text("e-c", "C", "x", sources=f"[{{uri: '{site.url}/gone', {record}}}]"),
            d=entry_text("e-d", "D", "x", sources=f"[{{uri: '{site.url}/slow', {record}}}]"))
    report = run_lint(wiki, {"W001", "W002"})
    site.release.set()
    found = sorted((f.code, f.entry_id, f.message.split(" ", 2)[2]) for f in report.findings)
    assert found == [("W001", "e-b", "changed since it was compiled: re-ingest it"),
                     ("W002", "e-c", "answers HTTP 404"),
                     ("W002", "e-d", "timed out after 0.3 s")]
    assert ("/same", 304) in site.answered


def test_fix_records_an_http_fingerprint_with_its_etag(wiki: Wiki, site: Site) -> None:
    site.pages["/a"] = Page(b"Per diem is 50.\n", etag='"v1"')
    entries(wiki, a=entry_text("e-a", "A", "x", sources=f"[{{uri: '{site.url}/a'}}]"))
    report = run_lint(wiki, {"W001"}, fix=True)
    approve(wiki, report.proposal.name, approver=BOB)
    (source,) = wiki.snapshot().entry("a.md").meta["sources"]
    assert source["fingerprint"] == fp("Per diem is 50.") and source["etag"] == '"v1"'
    assert codes(wiki, "W001") == [] and site.answered[-1] == ("/a", 304)


# -- git sources: blob ids, W011 --------------------------------------------------------------

def _ingest_committed(wiki: Wiki, repo: Path, name: str = "docs/travel.md", text: str = TRAVEL):
    src = write(repo / name, text)
    git(repo, "add", name)
    git(repo, "commit", "-qm", f"add {name}")
    ingest_and_land(wiki, src)
    return src


def test_ingest_records_the_blob_and_an_unchanged_source_is_not_read(wiki: Wiki,
                                                                     repo: Path) -> None:
    _ingest_committed(wiki, repo)
    (source,) = wiki.snapshot().entry("docs/travel.md").meta["sources"]
    assert source["blob"] == git(repo, "rev-parse", "HEAD:docs/travel.md")
    from wiki.lint.model import LintContext
    from wiki.lint.sources import source_checks
    snap = wiki.snapshot()
    ctx = LintContext(wiki, snap, snap.config(), *snap.entries())
    ((_, _, uri, _, check),) = source_checks(ctx)
    assert uri == "git:docs/travel.md" and check.unchanged


def test_w011_renamed_source_and_fix(wiki: Wiki, repo: Path) -> None:
    _ingest_committed(wiki, repo)
    assert codes(wiki, "W011") == []
    (repo / "guide").mkdir()
    git(repo, "mv", "docs/travel.md", "guide/trips.md")
    git(repo, "commit", "-qm", "move")
    report = run_lint(wiki)
    assert [(f.code, f.fixable) for f in report.findings] == [("W011", True)]
    assert report.findings[0].message == ("source git:docs/travel.md was renamed to "
                                          "git:guide/trips.md (content unchanged)")
    before = wiki.snapshot().entry("docs/travel.md").sources[0]
    fixed = run_lint(wiki, fix=True)
    assert [f.code for f in fixed.fixed] == ["W011"]
    approve(wiki, fixed.proposal.name, approver=BOB)
    entry = wiki.snapshot().entry("docs/travel.md")
    (source,) = entry.meta["sources"]
    assert source["uri"] == "git:guide/trips.md" and source["fingerprint"] == before.fingerprint
    assert source["blob"] == git(repo, "rev-parse", "HEAD:guide/trips.md")
    assert entry.body.rstrip().endswith("[1]: git:guide/trips.md")
    assert run_lint(wiki).findings == []


def test_w011_renamed_and_edited_then_stale(wiki: Wiki, repo: Path) -> None:
    src = _ingest_committed(wiki, repo)
    src.write_text(TRAVEL.replace("Rule 7", "Rule seven, changed"))
    git(repo, "mv", "docs/travel.md", "docs/trips.md")
    git(repo, "commit", "-qam", "move and edit")
    (finding,) = run_lint(wiki).findings
    assert finding.code == "W011" and "content changed too" in finding.message
    approve(wiki, run_lint(wiki, fix=True).proposal.name, approver=BOB)
    (stale,) = run_lint(wiki).findings
    assert stale.code == "W001" and "git:docs/trips.md changed" in stale.message


def test_w011_a_deleted_source_is_missing_not_renamed(wiki: Wiki, repo: Path) -> None:
    _ingest_committed(wiki, repo)
    write(repo / "docs" / "other.md", "Something else entirely.\n")
    git(repo, "rm", "-q", "docs/travel.md")
    git(repo, "add", "docs/other.md")
    git(repo, "commit", "-qm", "delete")
    assert codes(wiki, "W011") == []
    (missing,) = codes(wiki, "W002")
    assert missing.message == "source git:docs/travel.md no longer exists"


# -- W010 (quiet case), W012 -------------------------------------------------------------------

def test_w010_nothing_marked(wiki: Wiki, repo: Path) -> None:
    _ingest_committed(wiki, repo)
    assert codes(wiki, "W010") == []


def test_w012_orphan(wiki: Wiki) -> None:
    entries(wiki, lone=entry_text("e-lone", "Lone note", "Nobody links here."),
            hub=entry_text("e-hub", "Hub", "See [linked](linked.md).",
                           relations="{related_to: e-related}"),
            linked=entry_text("e-linked", "Linked", "x"),
            related=entry_text("e-related", "Related", "x"),
            self_ref=entry_text("e-self", "Self", "Only [me](self_ref.md)."),
            gone=entry_text("e-gone", "Gone", "x", status="retracted"))
    assert sorted(f.entry_id for f in codes(wiki, "W012")) == ["e-hub", "e-lone", "e-self"]


def test_w012_sourced_or_reached_is_not_an_orphan(wiki: Wiki) -> None:
    entries(wiki, a=entry_text("e-a", "A", "x", sources="[{uri: 'notion:page-1'}]"),
            b=entry_text("e-b", "B", "Back to [a](a.md).", supersedes="[e-c]"),
            c=entry_text("e-c", "C", "x", status="superseded", superseded_by="e-b"),
            d=entry_text("e-d", "D", "x", relations="{depends_on: e-b}"),
            e=entry_text("e-e", "E", "x", sources="[{uri: 'notion:page-2'}]",
                         relations="{refines: e-d}"))
    assert codes(wiki, "W012") == []


# -- W013 ------------------------------------------------------------------------------------

def _summaries(wiki: Wiki, **items: tuple[str, str]) -> None:
    entries(wiki, **{name: entry_text(f"e-{name}", title, "x", summary=f"'{summary}'")
                     for name, (title, summary) in items.items()})


def test_w013_planted_conflicts_are_all_flagged(wiki: Wiki) -> None:
    _summaries(wiki,
               a1=("Per diem in Denver", "The Denver per diem rate is $68 per day."),
               a2=("Denver per diem", "Per diem in Denver: the rate is $59 per day."),
               b1=("Open season deadline", "Open season ends on December 9, 2024."),
               b2=("Open season deadline", "Open season ends on 2024-12-13."),
               c1=("Relocation allowance for staff", "The allowance is $1,250 for staff."),
               c2=("Staff relocation allowance", "The allowance for staff is 1500 dollars."),
               d1=("Remote work stipend", "The stipend is 75% of costs up to $500."),
               d2=("Remote work stipend", "The stipend is 50% of costs up to $500."))
    found = codes(wiki, "W013")
    assert sorted(f.entry_id for f in found) == sorted(
        f"e-{g}{n}" for g in "abcd" for n in "12")
    message = next(f.message for f in found if f.entry_id == "e-b1")
    assert message == ("same subject as b2.md ('Open season deadline') but states "
                       "2024-12-09 where it states 2024-12-13")


def test_w013_no_conflict_without_a_contradiction(wiki: Wiki) -> None:
    _summaries(wiki,
               same1=("Relocation allowance", "The relocation allowance is $1,250.00."),
               same2=("Relocation allowance", "Relocation allowance: 1250 dollars."),
               less1=("Per diem in Denver", "The Denver per diem is $68 per day."),
               less2=("Denver per diem", "Denver per diem is $68 per day since 2024-10-01."),
               place1=("Per diem rates", "The Boston per diem is $79."),
               place2=("Per diem rates", "The Denver per diem is $68."),
               word1=("Lodging in Denver", "Denver lodging is capped at $150 per night."),
               sprint1=("Sprint 12 retro", "Sprint 12 closed 14 stories."),
               sprint2=("Sprint 13 retro", "Sprint 13 closed 9 stories."),
               form1=("Form SF-1012 travel voucher", "Form SF-1012 is due within 5 days."),
               form2=("Form SF-1038 travel voucher", "Form SF-1038 is due within 30 days."),
               old=("Per diem in Denver", "The Denver per diem is $51 per day."))
    commit(wiki, {"old.md": entry_text("e-old", "Per diem in Denver", "x",
                                       summary="'The Denver per diem is $51 per day.'",
                                       status="retracted").encode()})
    assert codes(wiki, "W013") == []


def test_fixes_of_two_rules_to_one_entry_add_up(wiki: Wiki, repo: Path) -> None:
    _ingest_committed(wiki, repo)
    write(repo / "docs" / "new.md", "New page.\n")
    entry = wiki.snapshot().entry("docs/travel.md")
    sources = [*entry.meta["sources"], {"uri": "git:docs/new.md"}]
    commit(wiki, {"docs/travel.md": entry.updated_with(sources=sources).to_bytes()})
    git(repo, "mv", "docs/travel.md", "docs/trips.md")
    git(repo, "commit", "-qm", "move")
    report = run_lint(wiki, fix=True)
    assert sorted(f.code for f in report.fixed) == ["W001", "W011"]
    approve(wiki, report.proposal.name, approver=BOB)
    first, second = wiki.snapshot().entry("docs/travel.md").meta["sources"]
    assert first["uri"] == "git:docs/trips.md" and second["fingerprint"] == fp("New page.")
    assert run_lint(wiki).findings == []
