"""Trust settings of wiki.toml (issue 25, item 4): every setting is classified as trust or
neutral; a change of a trust setting, either way, is flagged (R008 for a weakened
[review], R009 otherwise) and lands only by a recorded override; `wiki diff` shows a
wiki.toml change setting by setting (also --json); a deleted wiki.toml is flagged; a
wiki.toml whose TOML is valid but holds what the schema does not know is invalid (R004),
never half-read."""

from __future__ import annotations

import json
import re
from dataclasses import fields

import pytest
from conftest import BOB, acting_as, git, write
from test_review_check import hand_made

from wiki.config import WikiConfig, parse_config
from wiki.errors import ConfigError, ReviewFlaggedError
from wiki.review.proposals import approve, get_proposal
from wiki.store.workspace import Wiki

TRUST_CHANGES = {  # setting -> (value on the wiki first or None, value proposed)
    "ingest.extensions": (None, '[".md", ".markdown", ".txt", ".env"]'),
    "ingest.max_bytes": (None, "900000000"),
    "sources.git_ref": (None, '"origin/main"'),
    "sources.ignore_frontmatter": (None, "false"),
    "sources.ignore_whitespace": (None, "false"),
    "review.approvals_required": (None, "2"),  # stricter: flagged too
    "review.allow_self_approval": ("true", "false"),  # stricter: flagged too
    "review.require_signatures": (None, "true"),
    "search.legs": (None, '["alias", "bm25", "vector", "llm"]'),
    "llm.model": (None, '"openai/gpt-4o"'),
    "llm.gap_judge": (None, '"on"'),
}


def with_setting(text: str, setting: str, value: str) -> str:
    """``text`` (a wiki.toml) with ``setting`` (``section.key``) set to ``value`` (TOML),
    replacing its line in that section, else adding it (and the section)."""
    section, key = setting.split(".")
    lines = text.splitlines()
    current, header = None, None
    for i, line in enumerate(lines):
        if line.startswith("["):
            current = line.strip("[] ")
            header = i if current == section else header
        elif current == section and re.match(rf"{key}\s*=", line):
            lines[i] = f"{key} = {value}"
            return "\n".join(lines) + "\n"
    if header is None:
        return text + f"\n[{section}]\n{key} = {value}\n"
    lines.insert(header + 1, f"{key} = {value}")
    return "\n".join(lines) + "\n"


def config_text(wiki: Wiki) -> str:
    return wiki.snapshot().read("wiki.toml").decode()


def push_setting(wiki: Wiki, setting: str, value: str) -> None:
    """Set ``setting`` straight on the wiki branch (a direct push, no review)."""
    head = wiki.require_head()
    commit = hand_made(wiki, "pushed", {"wiki.toml": with_setting(config_text(wiki), setting,
                                                                   value).encode()})
    git(wiki.root, "update-ref", f"refs/heads/{wiki.branch}", commit, head)
    git(wiki.root, "update-ref", "-d", "refs/heads/wiki-proposals/pushed")


def setting_flags(wiki: Wiki, name: str) -> list[tuple[str, str, str]]:
    return [(f.rule, f.kind, f.category) for f in get_proposal(wiki, name).flags
            if f.path == "wiki.toml"]


# -- the classification ---------------------------------------------------------------

def all_settings() -> set[str]:
    config = WikiConfig()
    return {f"{section.name}.{key.name}" for section in fields(config)
            for key in fields(getattr(config, section.name))}


def test_every_setting_is_classified_as_trust_or_neutral() -> None:
    """A new field of wiki.toml fails here until it is put in one table (and, if it is a
    trust setting, given an example change below)."""
    from wiki.review import settings

    assert len(all_settings()) == 57
    assert set(settings.TRUST) | set(settings.NEUTRAL) == all_settings()
    assert not set(settings.TRUST) & set(settings.NEUTRAL)
    assert set(settings.TRUST) == set(TRUST_CHANGES)


# -- a trust setting changed, either way ----------------------------------------------

@pytest.mark.parametrize("setting", sorted(TRUST_CHANGES))
def test_a_change_of_a_trust_setting_is_flagged_with_its_name(wiki: Wiki, setting: str) -> None:
    before, after = TRUST_CHANGES[setting]
    if before is not None:
        push_setting(wiki, setting, before)
    hand_made(wiki, "s", {"wiki.toml": with_setting(config_text(wiki), setting,
                                                     after).encode()})
    assert setting_flags(wiki, "s") == [("R009", setting, "trust-setting")]
    with pytest.raises(ReviewFlaggedError, match="trust-setting"):
        approve(wiki, "s", approver=BOB)
    approve(wiki, "s", approver=BOB, override="agreed in the team meeting")
    assert parse_config(config_text(wiki)) == parse_config(
        with_setting(config_text(wiki), setting, after))


def test_a_weakened_review_is_r008_only_and_a_neutral_change_is_not_flagged(
        cli, wiki: Wiki) -> None:
    text = with_setting(config_text(wiki), "review.allow_self_approval", "true")
    text = with_setting(text, "search.rrf_k", "30")
    hand_made(wiki, "weak", {"wiki.toml": text.encode()})
    assert setting_flags(wiki, "weak") == [("R008", "self-approval-allowed", "review-policy")]
    neutral = with_setting(config_text(wiki), "search.rrf_k", "30")
    neutral = with_setting(neutral, "llm.max_calls", "10")
    hand_made(wiki, "neutral", {"wiki.toml": neutral.encode()})
    assert get_proposal(wiki, "neutral").flags == []
    shown = json.loads(cli("diff", "neutral", "--json").stdout)
    assert shown["changes"][0]["fields"] == [
        {"field": "search.rrf_k", "old": 60, "new": 30},
        {"field": "llm.max_calls", "old": 45, "new": 10}]
    with acting_as(BOB):
        assert cli("approve", "neutral").exit_code == 0


# -- wiki diff, wiki proposals and wiki approve through the CLI -------------------------

def test_a_model_change_slipped_into_an_entry_proposal_is_shown_and_needs_an_override(
        cli, wiki: Wiki, tmp_path) -> None:
    source = write(tmp_path / "rate.md", "---\ntitle: Per diem\n---\nThe rate is $59.\n")
    name = cli("propose", str(source), "--category", "travel").stdout.strip()
    tip = wiki.store.resolve(wiki.proposal_prefix + name)
    text = with_setting(config_text(wiki), "llm.model", '"openai/gpt-4o"')
    text = with_setting(text, "ingest.extensions", '[".md", ".env"]')
    hand_made(wiki, name, {"wiki.toml": text.encode()}, "tidy\n", parent=tip)

    listed = json.loads(cli("proposals", "--json").stdout)
    assert {(f["rule"], f["kind"]) for f in listed[0]["flags"]} == {
        ("R009", "ingest.extensions"), ("R009", "llm.model")}
    shown = cli("diff", name)
    assert ("flagged: wiki.toml: llm.model (R009) trust-setting: changes which model wiki "
            "text is sent to: '' -> 'openai/gpt-4o'") in shown.stdout
    assert '  llm.model: "" -> openai/gpt-4o' in shown.stdout
    assert "  +- .env" in shown.stdout and "  -- .txt" in shown.stdout
    as_json = json.loads(cli("diff", name, "--json").stdout)
    toml = next(c for c in as_json["changes"] if c["path"] == "wiki.toml")
    assert toml["fields"] == [
        {"field": "ingest.extensions", "old": [".md", ".markdown", ".txt"],
         "new": [".md", ".env"]},
        {"field": "llm.model", "old": "", "new": "openai/gpt-4o"}]
    with acting_as(BOB):
        refused = cli("approve", name)
        assert refused.exit_code == 5 and "2 trust-setting" in refused.stderr
        assert cli("approve", name, "--override-flags", "we move to gpt-4o").exit_code == 0
    message = git(wiki.root, "log", "-1", "--format=%B", wiki.branch)
    assert "Wiki-Overridden-Flag: R009 llm.model wiki.toml:0:0" in message
    assert parse_config(config_text(wiki)).llm.model == "openai/gpt-4o"


# -- deletion -------------------------------------------------------------------------

def test_deleting_wiki_toml_is_flagged_and_shown_as_a_return_to_the_defaults(
        cli, wiki: Wiki) -> None:
    hand_made(wiki, "plain", {"wiki.toml": None})  # the defaults: nothing else changes
    assert setting_flags(wiki, "plain") == [("R009", "config-deleted", "trust-setting")]
    push_setting(wiki, "review.approvals_required", "2")
    push_setting(wiki, "llm.model", '"local/qwen"')
    hand_made(wiki, "gone", {"wiki.toml": None})
    assert setting_flags(wiki, "gone") == [
        ("R008", "approvals-lowered", "review-policy"),
        ("R009", "config-deleted", "trust-setting"), ("R009", "llm.model", "trust-setting")]
    shown = cli("diff", "gone")
    assert "  wiki.toml deleted: every setting returns to its default" in shown.stdout
    assert "  review.approvals_required: 2 -> 1" in shown.stdout
    assert '  llm.model: local/qwen -> ""' in shown.stdout
    with acting_as(BOB):
        assert cli("approve", "gone").exit_code == 5


# -- valid TOML the schema does not know ----------------------------------------------

@pytest.mark.parametrize("text, said", [
    ('[wiki]\nversion = 1\ntrusted_sources = ["https://evil.example"]\n',
     "[wiki]: unknown key 'trusted_sources'"),
    ("[wiki.sources]\nextra = 1\n", "[wiki]: unknown key 'sources'"),
    ("wiki = 5\n", "[wiki] must be a table"),
    ("[wiki]\nversion = true\n", "version True is not supported"),
    ("[wiki]\nversion = 1.0\n", "version 1.0 is not supported"),
    ("review = 5\n", "[review] must be a table of settings, got 5"),
    ("[[review]]\napprovals_required = 2\n", "[review] must be a table of settings"),
    ('[ingest]\nextensions = [1, 2]\n', "'extensions' must be a list of strings"),
])
def test_toml_the_schema_does_not_know_is_an_error_never_ignored(text: str, said: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(text)
    assert said in str(raised.value)


def test_a_proposal_of_unknown_settings_is_invalid_config_and_cannot_be_overridden(
        cli, wiki: Wiki) -> None:
    for name, text in (("extra", config_text(wiki) + "\n[wiki.trust]\nall = true\n"),
                       ("table", "review = 5\n[wiki]\nversion = 1\n")):
        hand_made(wiki, name, {"wiki.toml": text.encode()})
        listed = cli("proposals", "--json")
        assert listed.exit_code == 0, listed.stderr  # no crash for everyone's listing
        assert setting_flags(wiki, name) == [("R004", "invalid-config", "schema")]
        with acting_as(BOB):
            refused = cli("approve", name, "--override-flags", "looks fine")
        assert refused.exit_code == 5
        assert "an invalid wiki.toml cannot be overridden" in refused.stderr
