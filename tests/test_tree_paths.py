"""No proposal makes an invalid tree, and two titles never share a file silently (issue 25,
items 3 and 9): a ``--category`` that is a file, an ``index.md`` or ``wiki.toml`` is refused
at propose (CLI, MCP, HTTP); approve runs git's own fsck over what it would land, also for
a branch made by hand with ``git mktree``; symbol-only titles get distinct, stable file
names and a different title that would take an entry's file is refused at propose."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import httpx
import pytest
from conftest import ALICE, BOB, acting_as, entry_text, git, write
from serve_helpers import WRITE_TOKEN, running, write_config

from wiki.errors import StaleProposalError, TreePathError
from wiki.review.check import check
from wiki.review.proposals import approve, get_proposal, list_proposals, propose
from wiki.store.slug import slugify
from wiki.store.workspace import Wiki

ENTRY = "---\ntitle: Parking permits\n---\nPermits are renewed every March.\n"


def land(wiki: Wiki, changes: dict[str, str]) -> None:
    proposal = propose(wiki, {p: t.encode() for p, t in changes.items()}, base=None,
                          kind="new", subject="setup", author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB)


def fsck_errors(repo: Path) -> str:
    done = subprocess.run(["git", "-C", str(repo), "fsck", "--strict", "--no-dangling"],
                          capture_output=True, text=True)
    return done.stdout + done.stderr if done.returncode else ""


def _build_pager(wiki: Wiki, repo: Path) -> None:
    land(wiki, {"ops/pager.md": entry_text("e1pager", "Pager", "The pager rotates on Mondays.")})


@pytest.fixture
def pager(from_template) -> Wiki:
    return from_template(_build_pager)


# -- item 3: no proposal makes an invalid tree ----------------------------------------------

@pytest.mark.parametrize("category", ["ops/pager.md", "ops/pager.md/more", "index.md",
                                      "ops/index.md", "wiki.toml", "OPS/Pager.md"])
def test_a_category_that_is_a_file_is_refused_on_the_cli(cli, pager: Wiki, repo: Path,
                                                         category: str) -> None:
    write(repo / "new.md", ENTRY)
    head = pager.head()
    result = cli("propose", str(repo / "new.md"), "--category", category)
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and f"category '{category}'" in result.stderr
    assert list_proposals(pager) == [] and pager.head() == head
    assert fsck_errors(repo) == ""


def test_a_category_that_is_a_file_is_refused_over_mcp_and_http(pager: Wiki, repo: Path,
                                                                tmp_path: Path) -> None:
    from wiki_cli.mcp_server import build_server

    server, _ = build_server(repo)

    async def call():
        return await server.call_tool("propose", {"kind": "new", "content": ENTRY,
                                                  "category": "ops/pager.md"})

    refused = anyio.run(call)
    assert refused.is_error and "category 'ops/pager.md'" in refused.content[0].text
    config = write_config(tmp_path / "serve.toml", {"handbook": repo})
    with running(config) as base, httpx.Client(base_url=base, timeout=60) as client:
        http = client.post("/v1/repos/handbook/propose",
                           headers={"Authorization": f"Bearer {WRITE_TOKEN}"},
                           json={"kind": "new", "content": ENTRY, "category": "index.md"})
    assert http.status_code >= 400 and "category 'index.md'" in http.json()["error"]
    assert list_proposals(pager) == [] and fsck_errors(repo) == ""


def test_a_new_entry_never_takes_the_name_of_a_folder(cli, wiki: Wiki, repo: Path) -> None:
    land(wiki, {"ops/pager.md/rota.md": entry_text("e1rota", "Rota", "Rotas change weekly.")})
    write(repo / "new.md", "---\ntitle: Pager\n---\nThe pager is orange.\n")
    result = cli("propose", str(repo / "new.md"), "--category", "ops")
    assert result.exit_code == 0, result.output
    proposal = list_proposals(wiki)[0]
    assert proposal.paths == ["ops/pager-2.md"] and fsck_errors(repo) == ""


def test_propose_never_writes_a_file_and_a_folder_of_one_name(pager: Wiki, repo: Path) -> None:
    text = entry_text("e1under", "Under", "Below a file.").encode()
    for path in ("ops/pager.md/under.md", "index.md/under.md", "wiki.toml/under.md"):
        with pytest.raises(TreePathError, match="both a file and a folder"):
            propose(pager, {path: text}, base=None, kind="new", subject="x", author=ALICE)
    with pytest.raises(TreePathError, match="'ops'"):  # a file where a folder is
        propose(pager, {"ops": b"x"}, base=None, kind="new", subject="x", author=ALICE)
    assert list_proposals(pager) == [] and fsck_errors(repo) == ""


def _mktree(repo: Path, lines: list[str]) -> str:
    return subprocess.run(["git", "-C", str(repo), "mktree", "--missing"], check=True,
                          input="".join(f"{line}\n" for line in lines), capture_output=True,
                          text=True).stdout.strip()


def _hand_made_tree(wiki: Wiki, repo: Path, name: str, extra: list[str]) -> str:
    """A proposal branch whose root tree is the head's plus ``extra`` ``git mktree`` lines
    (duplicates and all), committed with plain git."""
    head = wiki.require_head()
    lines = git(repo, "ls-tree", head).splitlines()
    tree = _mktree(repo, lines + extra)
    commit = git(repo, "commit-tree", tree, "-p", head, "-m", "hand-made tree")
    git(repo, "update-ref", f"refs/heads/wiki-proposals/{name}", commit)
    return commit


def test_a_hand_made_tree_git_refuses_is_flagged_and_never_lands(cli, pager: Wiki,
                                                                  repo: Path) -> None:
    one = git(repo, "hash-object", "-w", "--stdin", "--path", "x.md")  # empty stdin: empty blob
    two = subprocess.run(["git", "-C", str(repo), "hash-object", "-w", "--stdin"], check=True,
                         input=entry_text("e1dup", "Dup", "Twice."), capture_output=True,
                         text=True).stdout.strip()
    inner = _mktree(repo, [f"100644 blob {two}\tinner.md"])
    cases = {"dup": [f"100644 blob {one}\tdup.md", f"100644 blob {two}\tdup.md"],
             "same": [f"100644 blob {two}\tsame.md", f"040000 tree {inner}\tsame.md"],
             "dotgit": [f"040000 tree {inner}\t.git"],
             "mode": [f"100664 blob {two}\tmode.md"]}
    head = pager.head()
    for name, extra in cases.items():
        tip = _hand_made_tree(pager, repo, name, extra)
        flags = check(pager, head, tip)
        invalid = [f for f in flags if f.category == "invalid-tree"]
        assert invalid and invalid[0].rule == "R010" and not invalid[0].overridable, name
        with acting_as(BOB):
            refused = cli("approve", name, "--override-flags", "looks fine to me")
        assert refused.exit_code == 5, (name, refused.output)
        assert "git refuses the object" in refused.stderr and refused.stderr.count("\n") == 1
        assert pager.head() == head
    listed = cli("proposals").stdout
    assert all(f"{name} " in listed for name in cases) and listed.count("R010") == len(cases)


def test_a_merge_that_would_make_a_file_and_a_folder_is_stale(wiki: Wiki, repo: Path) -> None:
    under = entry_text("e1under", "Under", "Below the folder.").encode()
    over = entry_text("e1over", "Over", "The file.").encode()
    first = propose(wiki, {"x.md/under.md": under}, base=None, kind="new", subject="a",
                       author=ALICE).proposal
    second = propose(wiki, {"x.md": over}, base=None, kind="new", subject="b",
                        author=ALICE).proposal
    approve(wiki, second.name, approver=BOB)
    head = wiki.head()
    with pytest.raises(StaleProposalError, match="both a file and a folder"):
        approve(wiki, first.name, approver=BOB)
    assert wiki.head() == head and fsck_errors(repo) == ""
    assert get_proposal(wiki, first.name).tip == first.tip  # kept


# -- item 9: two titles never share a file silently -----------------------------------------

def test_symbol_only_titles_get_distinct_stable_files(cli, wiki: Wiki, repo: Path) -> None:
    titles = ["???", "!!!", "🚀🚀", "🎉", "{", "}"]
    slugs = [slugify(t) for t in titles]
    assert len(set(slugs)) == len(titles) and slugs == [slugify(t) for t in titles]
    assert slugify("???") == "entry-a03b221c" and slugify("   ") == "entry"
    for title, stem in [("My file", "my-file"), ("Café au lait", "café-au-lait"),
                        ("🚀 Launch!", "🚀-launch"), ("index", "index-entry"), ("C++", "c")]:
        assert slugify(title) == stem  # ordinary titles keep their file names
    names = []
    for i, title in enumerate(["???", "!!!"]):
        write(repo / f"{i}.md", f"---\ntitle: '{title}'\n---\nSymbol text number {i}.\n")
        result = cli("propose", str(repo / f"{i}.md"))
        assert result.exit_code == 0, result.output
        names.append(result.stdout.strip())
    for name in names:  # neither goes stale when the other lands
        approve(wiki, name, approver=BOB)
    files = set(wiki.snapshot().files)
    assert {f"{slugify('???')}.md", f"{slugify('!!!')}.md"} <= files


def test_a_different_title_at_the_same_file_is_said_at_propose(cli, wiki: Wiki,
                                                               repo: Path) -> None:
    write(repo / "c.md", "---\ntitle: C\n---\nThe C language.\n")
    write(repo / "cpp.md", "---\ntitle: C++\n---\nThe C++ language.\n")
    open_c = cli("propose", str(repo / "c.md"))
    assert open_c.exit_code == 0, open_c.output
    pending = cli("propose", str(repo / "cpp.md"))  # C's proposal is still open
    assert pending.exit_code == 2 and pending.stderr.count("\n") == 1
    assert "'C++'" in pending.stderr and "open proposal" in pending.stderr
    assert cli("propose", str(repo / "c.md")).stdout == open_c.stdout  # same proposal
    approve(wiki, open_c.stdout.strip(), approver=BOB)
    landed = cli("propose", str(repo / "cpp.md"))
    assert landed.exit_code == 2 and "'c.md'" in landed.stderr and "titled 'C'" in landed.stderr
    assert list_proposals(wiki) == []
    write(repo / "c2.md", "---\ntitle: c\n---\nAnother page about the C language.\n")
    again = cli("propose", str(repo / "c2.md"))  # the same title again: -2, as before
    assert again.exit_code == 0 and list_proposals(wiki)[0].paths == ["c-2.md"]
