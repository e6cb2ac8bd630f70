"""Entries: frontmatter round trip, validation, malformed files (ROBUSTNESS F3-F4)."""

from __future__ import annotations

import pytest

from wiki.errors import EntryError
from wiki.store.entry import Entry

HAND_WRITTEN = """---
# kept comment
id: dec-0054
title: "Use Postgres"   # inline comment
x-owner:   {team: data, since: 2024}
summary: We use Postgres.
custom_list:
  - b
  - a
sources:
- uri: git:docs/db.md
  fingerprint: sha256:abc
---

Body with **markdown**.

---

A thematic break above is not frontmatter.
"""


@pytest.mark.robustness("F4")
def test_untouched_entry_round_trips_byte_for_byte() -> None:
    data = HAND_WRITTEN.encode()
    entry = Entry.parse("d/x.md", data)
    assert entry.to_bytes() == data
    assert entry.body.startswith("\nBody with")
    assert "A thematic break" in entry.body


@pytest.mark.robustness("F4")
def test_edit_keeps_unknown_fields_and_order_byte_for_byte() -> None:
    entry = Entry.parse("d/x.md", HAND_WRITTEN.encode())
    edited = entry.updated_with(summary="We use Postgres 16.", status="active")
    text = edited.to_bytes().decode()
    assert text.count("\n---\n") == 2  # the closing fence + the thematic break in the body
    assert text.startswith("---\n") and text.count("---\n# kept") == 1  # one block only
    assert text.startswith("---\n# kept comment\nid: dec-0054\n")
    assert 'title: "Use Postgres"   # inline comment\n' in text
    assert "x-owner:   {team: data, since: 2024}\n" in text
    assert "custom_list:\n  - b\n  - a\n" in text
    assert "summary: We use Postgres 16.\n" in text
    assert text.index("summary:") < text.index("custom_list:")  # edited in place
    assert "status: active\n---\n\nBody with **markdown**." in text  # new key appended
    reparsed = Entry.parse("d/x.md", edited.to_bytes())
    assert reparsed.meta["x-owner"] == {"team": "data", "since": 2024}
    assert reparsed.status == "active" and reparsed.body == entry.body


def test_new_entry_has_canonical_field_order() -> None:
    entry = Entry("a.md", {"zeta": 1, "title": "T", "id": "abc", "tags": ["x"]}, "Body\n")
    text = entry.to_bytes().decode()
    assert text == "---\nid: abc\ntitle: T\ntags:\n- x\nzeta: 1\n---\nBody\n"


@pytest.mark.robustness("F3")
@pytest.mark.parametrize(("text", "line", "fragment"), [
    ("---\nid: a1\ntitle: x\n", 1, "never closed"),
    ("---\nid: a1\ntitle: *Italic*\n---\n", 3, "invalid YAML"),
    ("---\nid: a1\n\ttitle: x\n---\n", 3, "invalid YAML"),
    ('---\nid: a1\ntitle: x\npath: "C:\\Users\\me"\n---\n', 4, "invalid YAML"),
    ("---\nid: a1\ntitle: x\ntitle: y\n---\n", 4, "duplicate key 'title'"),
    ("---\nid: a1\ntitle: x\ntype: null\n---\n", 4, "field 'type': must be one of"),
    ("---\nid: a1\ntitle: x\nstatus: done\n---\n", 4, "field 'status'"),
    ("---\nid: a1\n---\n", None, "field 'title': missing required field"),
    ("---\n- a\n- b\n---\n", 2, "must be a mapping"),
    ("no frontmatter at all\n", 1, "no frontmatter"),
    ("---\nid: a1\ntitle: x\nconfidence: 2\n---\n", 4, "field 'confidence'"),
    ("---\nid: a1\ntitle: x\nsources: [{fingerprint: x}]\n---\n", 4, "needs a 'uri'"),
    ("---\nid: a1\ntitle: x\ncreated: yesterday\n---\n", 4, "field 'created'"),
    ("---\nid: 'has space'\ntitle: x\n---\n", 2, "field 'id'"),
])
def test_malformed_entries_name_path_line_and_field(text: str, line, fragment: str) -> None:
    with pytest.raises(EntryError) as info:
        Entry.parse("notes/bad.md", text.encode())
    message = str(info.value)
    assert message.startswith("notes/bad.md" + (f":{line}" if line else ""))
    assert fragment in message


def test_not_utf8_is_an_entry_error() -> None:
    with pytest.raises(EntryError, match="not UTF-8"):
        Entry.parse("bad.md", b"---\nid: a1\ntitle: \xff\n---\n")


@pytest.mark.robustness("F5")
def test_bom_and_crlf_are_read() -> None:
    entry = Entry.parse("w.md", "\ufeff---\r\nid: a1\r\ntitle: Win\r\n---\r\nBody\r\n".encode())
    assert entry.title == "Win" and entry.body == "Body\n"
    assert entry.to_bytes().startswith(b"\xef\xbb\xbf")  # untouched: original bytes


def test_defaults_for_optional_fields() -> None:
    entry = Entry.parse("a.md", b"---\nid: a1\ntitle: T\ntags: one\n---\n")
    assert (entry.type, entry.status, entry.tags, entry.aliases, entry.sources) == \
        ("note", "active", ["one"], [], [])
