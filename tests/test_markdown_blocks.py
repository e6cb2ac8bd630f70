"""Markdown structure comes from a CommonMark parser (wiki/store/markdown_blocks.py): the
blocks, answer sentences, indexed text, ``##`` sections and headings of a page, the code
that hides merge-conflict markers and the links lint checks. Each case is one the old
line scanner got wrong: a fence line of the other kind or a shorter one inside a fence,
an unclosed fence, indented code, fences inside list items and blockquotes, setext
headings against thematic breaks, tables without outer pipes, HTML blocks."""

from __future__ import annotations

from pathlib import Path

from conftest import BOB, acting_as, write

from wiki.ingest.merge_markers import conflict_line
from wiki.store.markdown_blocks import links
from wiki.store.markdown_text import (
    blocks,
    first_heading,
    heading_above,
    plain_text,
    sentences,
    split_sections,
    summary,
)

LATER = "\n\n## Later part\n\nThe later paragraph answers the question.\n"


def test_a_fence_line_of_another_kind_inside_a_fence_is_code() -> None:
    """A ```` ``` ```` line inside ``~~~`` (and ``~~~`` inside ```` ``` ````, and ```` ``` ````
    inside ```` ```` ````) neither closes the fence nor hides what follows it."""
    for opening, inner in (("~~~", "```"), ("```", "~~~"), ("````", "```")):
        page = (f"Intro sentence here.\n\n{opening}\n{inner}\necho secret code line.\n"
                f"{opening}{LATER}")
        assert blocks(page) == ["Intro sentence here.", "Later part",
                                "The later paragraph answers the question."], opening
        assert sentences(page) == ["Intro sentence here.",
                                   "The later paragraph answers the question."], opening
        assert [s.heading for s in split_sections(page)] == ["", "Later part"], opening
        assert heading_above(page, "The later paragraph answers the question.") == \
            "Later part"
        # the index keeps code, one line each, fence lines are not text
        assert plain_text(page).splitlines() == [
            "Intro sentence here.", inner, "echo secret code line.", "Later part",
            "The later paragraph answers the question."], opening


def test_an_unclosed_fence_runs_to_the_end_and_only_there() -> None:
    page = ("~~~\n```\nnot a sentence.\n~~~\n\nText after the fence.\n\n```\n"
            "unclosed code line.\n")
    assert sentences(page) == ["Text after the fence."]
    assert plain_text(page).splitlines() == ["```", "not a sentence.",
                                             "Text after the fence.", "unclosed code line."]


def test_indented_code_is_code_not_prose() -> None:
    page = "A paragraph here.\n\n    $ make clean. Then build.\n    # a comment\n\nNext one."
    assert sentences(page) == ["A paragraph here.", "Next one."]
    assert blocks(page) == ["A paragraph here.", "Next one."]
    assert "$ make clean. Then build." in plain_text(page).splitlines()
    assert first_heading(page) is None
    # indented continuation of a paragraph or a list item is still text
    assert sentences("First line\n    continues here.\n\n- item\n\n    more of the item.") == [
        "First line continues here.", "item", "more of the item."]


def test_fences_inside_list_items_and_blockquotes() -> None:
    page = ("- Step one:\n\n  ````\n  ```\n  ## Not a heading\n  ```\n  ````\n\n"
            "- Step two is here.\n\n> ```\n> # not a heading either\n> quoted code line.\n"
            "> ```\n>\n> Quoted prose line.\n")
    assert blocks(page) == ["Step one:", "Step two is here.", "Quoted prose line."]
    assert sentences(page) == ["Step one:", "Step two is here.", "Quoted prose line."]
    assert "quoted code line." in plain_text(page).splitlines()


def test_setext_headings_and_thematic_breaks() -> None:
    page = ("Leave policy\n============\n\nIntro text is here.\n\nCarry over\n----------\n\n"
            "Body words are here.\n\n---\n\nAfter the break comes text.\n\n***\n")
    assert first_heading(page) == "Leave policy"
    assert [s.heading for s in split_sections(page)] == ["", "Carry over"]
    assert "".join(s.text for s in split_sections(page)) == page
    assert sentences(page) == ["Intro text is here.", "Body words are here.",
                               "After the break comes text."]
    assert blocks(page)[:2] == ["Leave policy", "Intro text is here."]
    assert heading_above(page, "Body words are here.") == "Carry over"
    assert summary(page) == "Intro text is here."


def test_tables_without_outer_pipes_and_a_task_list() -> None:
    page = ("Kind | Days\n--- | ---:\nAnnual | 13\nSick | 13\n\n"
            "- [ ] file the form\n- [x] ask the lead\n")
    assert blocks(page) == ["Kind | Days", "Annual | 13", "Sick | 13", "file the form",
                            "ask the lead"]
    assert sentences(page) == ["Annual | 13", "Sick | 13", "file the form", "ask the lead"]


def test_html_blocks_are_text_and_hold_no_headings_templates_are_parsed_in_place() -> None:
    """An HTML block's text is kept (tags removed) but a ``#`` line inside it is no
    heading; a shortcode alone on a line inside an HTML table does not end the table,
    so the indented cell below it stays text rather than turning into code; a template
    over two lines inside a link leaves the link's text."""
    page = ("<details>\n<summary>More</summary>\n## Not a section\n</details>\n\n"
            "<table>\n  <tr>\n    <td>\n      {% slack_channel \"x\" %}\n    </td>\n"
            "    <td>\n      The office is on the fifth floor.\n    </td>\n  </tr>\n"
            "</table>\n\n## Real section\n\nReal text is here.\n")
    assert [s.heading for s in split_sections(page)] == ["", "Real section"]
    assert first_heading(page, level=2) == "Real section"
    assert "The office is on the fifth floor." in sentences(page)
    assert "Not a section" not in blocks(page)  # literal text of the block, no heading
    assert "More ## Not a section" in blocks(page)
    # templates are parsed in place, then removed from the text as before
    page = 'We have a [guide to the handbook]({% page "updating/"\n%}), written here.\n'
    assert blocks(page) == ["We have a guide to the handbook, written here."]
    assert blocks("# Title {{ site.name }}\n\nText.") == ["Title", "Text."]


def test_conflict_markers_hidden_only_by_real_code() -> None:
    conflict = "<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> b\n"
    # a <pre> block and a ``` line whose info string has a backtick are not fences
    assert conflict_line("<pre>\n```\n</pre>\n\n" + conflict) == 5
    assert conflict_line("``` not`a fence\n" + conflict) == 2
    # a conflict inside real code is text, also inside a longer fence and in a list item
    assert conflict_line("````\n```\n" + conflict + "```\n````\n") is None
    assert conflict_line("- example:\n\n  ~~~\n" + conflict.replace("\n", "\n  ")) is None
    # a fence opened inside one side of a conflict does not hide the rest of it
    assert conflict_line("<<<<<<< HEAD\n```\nours\n=======\ntheirs\n>>>>>>> b\n") == 1


def test_links_inside_code_are_not_links() -> None:
    body = ("````\n```\n[in code](gone.md)\n```\n````\n\nUse ``[span](nope.md)`` here.\n\n"
            "    [indented](also-gone.md)\n\nSee [real](missing.md).\n\n[ref]: other.md\n")
    assert links(body) == ["missing.md", "other.md"]


def test_ask_quotes_the_paragraph_after_a_mixed_fence(cli, repo: Path) -> None:
    """End to end: the page is ingested, indexed and asked through the CLI; before the
    parser the ``~~~`` fence holding a ```` ``` ```` line swallowed the rest of the page."""
    write(repo / "docs" / "deploy.md",
          "# Deploying\n\nThe deploy runs from the release branch.\n\n~~~\n```\n"
          "rollback steps are in the script.\n~~~\n\n## Rollback\n\n"
          "A rollback takes about twelve minutes on the staging cluster.\n")
    assert cli("init").exit_code == 0
    name = cli("ingest", "docs").stdout.strip()
    with acting_as(BOB):
        assert cli("approve", name).exit_code == 0
    answer = cli("ask", "how many minutes does a rollback take on the staging cluster?")
    assert answer.exit_code == 0, answer.output
    assert "A rollback takes about twelve minutes on the staging cluster." in answer.stdout
    assert "rollback steps are in the script" not in answer.stdout
