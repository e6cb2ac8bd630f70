"""What a new user met on a clean clone (session 8), kept as tests: an error about the
file a user gave names that file, not the entry it was meant for; ``wiki search --help``
shows a plain placeholder for ``--legs``."""

from __future__ import annotations

from pathlib import Path

from conftest import BOB, acting_as, write


def _landed(cli, repo: Path) -> None:
    write(repo / "docs" / "policy.md", "# Smoothie policy\n\nPenguins get smoothies on Fridays.\n")
    assert cli("init").exit_code == 0
    name = cli("ingest", "docs").stdout.strip()
    with acting_as(BOB):
        assert cli("approve", name).exit_code == 0


def test_an_edit_or_supersede_from_a_bad_file_names_that_file(cli, repo: Path,
                                                             tmp_path: Path) -> None:
    _landed(cli, repo)
    entry = next(line.split()[-1] for line in cli("search", "smoothie").stdout.splitlines()
                 if line.strip().startswith("1 "))
    note = tmp_path / "my-note.md"
    note.write_text("# Smoothie policy\n\nPenguins get smoothies on Thursdays.\n")
    edited = cli("propose", str(note), "--edit", entry)
    assert edited.exit_code == 2
    assert edited.stderr.startswith("error: my-note.md:1: no frontmatter")
    assert f"the new text of {entry}" in edited.stderr
    superseded = cli("propose", str(note), "--supersede", entry)
    assert superseded.exit_code == 2
    assert superseded.stderr.startswith("error: my-note.md")
    assert "new.md" not in superseded.stderr


def test_search_help_shows_a_plain_placeholder_for_legs(cli, repo: Path) -> None:
    shown = cli("search", "--help").stdout
    assert "--legs LEGS" in " ".join(shown.split())
    assert "parse_legs" not in shown


def test_a_sentence_does_not_end_inside_brackets_or_quotes_that_close_later() -> None:
    """make demo's answer on evidence gaps quoted half a sentence: the splitter cut at a
    question mark inside ``("...? ...")``, leaving the bracket open."""
    from wiki.store.markdown_text import sentences

    text = ('The judge asks whether the opening sentence answers the question ("Does this '
            'evidence answer the question? Answer yes or no."). The answer is a gap then.')
    assert sentences(text) == [
        'The judge asks whether the opening sentence answers the question ("Does this '
        'evidence answer the question? Answer yes or no.").', "The answer is a gap then."]
    assert sentences("See [Is it? Yes. Really.] here. Next one.") == [
        "See [Is it? Yes. Really.] here.", "Next one."]
    # an opening never closed joins nothing; a stray one joins at most three pieces
    assert sentences('A stray " quote. Then more. End here.') == [
        'A stray " quote.', "Then more.", "End here."]
    assert sentences("Smile :( now. One. Two. Three. (Aside.) Four.") == [
        "Smile :( now. One. Two.", "Three.", "(Aside.) Four."]


def test_a_citation_names_the_section_a_merged_entry_quotes(cli, repo: Path) -> None:
    """make demo's third answer quoted README's "Where things live" but cited the entry
    by the section it was merged into ("Measured"): a short section joins the one before
    it (wiki/ingest/sections.py), so the citation also names the heading above the
    quoted sentence."""
    filler = " ".join(f"Benchmark row {i} reports latency and recall numbers." for i in range(70))
    write(repo / "docs" / "guide.md",
          "# Guide\n\n## Setup\n\n" + filler.replace("Benchmark", "Setup") +
          "\n\n## Measured results\n\n" + filler + "\n\n## Where things live\n\n"
          "The derived state lives in the git common dir under the wiki folder.\n")
    assert cli("init").exit_code == 0
    name = cli("ingest", "docs").stdout.strip()
    with acting_as(BOB):
        assert cli("approve", name).exit_code == 0
    answer = cli("ask", "where does the derived state live?")
    assert answer.exit_code == 0, answer.output
    assert "The derived state lives in the git common dir" in answer.stdout
    cited = next(line for line in answer.stdout.splitlines() if line.startswith("[1]"))
    assert "Guide: Measured results › Where things live" in cited
    import json

    data = json.loads(cli("ask", "--json", "where does the derived state live?").stdout)
    assert data["citations"][0]["section"] == "Where things live"
    # a sentence under the heading the title names: no section added
    plain = json.loads(cli("ask", "--json", "what does benchmark row 3 report?").stdout)
    assert plain["citations"] and plain["citations"][0]["section"] is None


def test_a_huge_bracketed_paragraph_is_split_in_one_pass() -> None:
    """An entry is untrusted: one paragraph of 20,000 sentences inside one bracket pair
    (each piece would look open to the end) is split with at most 3 pieces joined; the
    first version joined the rest of the block for every piece (quadratic: gigabytes of
    copying at index time)."""
    from wiki.store.markdown_text import sentences

    body = " ".join(f"Sentence number {i} is here." for i in range(20_000))
    found = sentences(f"({body})")
    assert len(found) == 19_998
    assert found[0] == "(Sentence number 0 is here. Sentence number 1 is here. " \
                       "Sentence number 2 is here."
    assert found[-1] == "Sentence number 19999 is here.)"
