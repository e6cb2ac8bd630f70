"""A ``wiki.toml`` change as review sees it: which settings change what readers trust,
the change key by key, and its flags.

Every setting of :class:`wiki.config.WikiConfig` is classified here, once: a **trust
setting** (:data:`TRUST`) widens or narrows what is read as a source, what is sent to a
model, or who may land what; a **neutral** one (:data:`NEUTRAL`) only ranks, budgets or
ages what is already read. A setting in neither table counts as a trust setting (fail
closed); ``tests/test_review_settings.py`` fails until it is put in one.

Flags (:mod:`wiki.review.check` adds them for a changed ``wiki.toml``):

- ``R008`` (``review-policy``): a change that weakens ``[review]`` (fewer
  ``approvals_required``, ``allow_self_approval`` turned on, ``require_signatures``
  turned off), kinds ``approvals-lowered``, ``self-approval-allowed``,
  ``signatures-dropped``.
- ``R009`` (``trust-setting``): any other change of a trust setting, either way (a
  tightening too: the reviewer sees it and the override records it); the kind is the
  setting's name (``llm.model``). Also ``config-deleted`` when the proposal deletes
  ``wiki.toml``.

A side that does not parse counts as the defaults when it is the base; when it is the
proposal's, no setting flag is computed (its ``R004 invalid-config`` flag, which no
override lands, says why).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from wiki.config import CONFIG_PATH, WikiConfig, parse_config
from wiki.errors import ConfigError
from wiki.review.check import POLICY, TRUST_SETTING, ReviewFlag

TRUST: dict[str, str] = {
    "ingest.extensions": "which files are ingested as sources",
    "ingest.max_bytes": "how large a source is read; also the review check's size cap "
                        "and scan limit",
    "sources.git_ref": "which ref is read as the current source of git: entries",
    "sources.ignore_frontmatter": "whether a source's frontmatter change makes its "
                                  "entries stale",
    "sources.ignore_whitespace": "whether a source's whitespace change makes its entries "
                                 "stale",
    "review.approvals_required": "how many people must approve a proposal",
    "review.allow_self_approval": "whether an author may approve their own proposal",
    "review.require_signatures": "whether proposals and approvals must be signed",
    "search.legs": "which retrieval legs run (llm: every search sends the question and "
                   "entry cards to the model)",
    "llm.model": "which model wiki text is sent to",
    "llm.gap_judge": "whether ask sends its answer's evidence to the model to judge",
}
"""Settings that change what readers trust: setting name -> what it decides."""

NEUTRAL: dict[str, str] = {
    "ingest.split_words": "where a read source is split into entries",
    "ingest.min_section_words": "where a read source is split into entries",
    "ingest.max_lines": "a second size bound on sources (max_bytes is the trust one)",
    "ingest.tag_fields": "which frontmatter keys of a read source become tags",
    "ingest.alias_fields": "which frontmatter keys of a read source become aliases",
    "ingest.categories": "which wiki folder an ingested entry is proposed in",
    "sources.timeout": "how long an http(s) source may take to answer",
    **{f"search.{key}": "ranking or abstention" for key in (
        "weights", "gap_threshold", "gap_coverage", "gap_cosine", "gap_score", "hedge_score",
        "fusion", "rrf_k", "window", "leg_weights", "route", "route_mode", "route_margin",
        "route_weight")},
    **{f"lifetimes.{key}": "how long an entry stays in default answers" for key in (
        "fact", "decision", "procedure", "note", "episode")},
    **{f"memory.{key}": "re-scoring and graph expansion of hits" for key in (
        "rescore", "recency", "importance", "confidence", "half_life", "graph",
        "graph_weight", "graph_decay", "graph_depth", "graph_seeds", "graph_relations")},
    **{f"llm.{key}": "budgets and sizes of calls to the chosen model" for key in (
        "timeout", "max_calls", "max_tokens", "max_seconds", "walk_folders",
        "walk_entries", "deep_read", "rerank_top", "gap_judge_below")},
}
"""Settings that rank, budget or age what is already read: setting name -> what for."""


def is_trust_setting(name: str) -> bool:
    """Whether setting ``name`` (``section.key``, or ``section.key.sub`` inside a table)
    changes what readers trust; unclassified settings do (fail closed)."""
    setting = ".".join(name.split(".")[:2])
    return setting in TRUST or setting not in NEUTRAL


def values(config: WikiConfig) -> dict[str, Any]:
    """``section.key -> value`` of every setting; a table setting (``leg_weights``,
    ``categories``) gives one ``section.key.sub`` per key; lists as lists."""
    flat: dict[str, Any] = {}
    for section in fields(config):
        table = getattr(config, section.name)
        for key in fields(table):
            value = getattr(table, key.name)
            name = f"{section.name}.{key.name}"
            if isinstance(value, dict):
                flat.update({f"{name}.{sub}": v for sub, v in value.items()})
            else:
                flat[name] = list(value) if isinstance(value, tuple) else value
    return flat


def changes(old_text: str | None, new_text: str | None) -> list[tuple[str, Any, Any]]:
    """``(setting, old, new)`` for every setting whose effective value differs between
    two ``wiki.toml`` texts (``None``: absent, i.e. the defaults), ``None`` for a table
    key absent on one side. Raises :class:`ConfigError` when either text is invalid."""
    was = values(parse_config(old_text or ""))
    now = values(parse_config(new_text or ""))
    names = list(dict.fromkeys([*was, *now]))
    return [(name, was.get(name), now.get(name)) for name in names
            if was.get(name) != now.get(name)]


def _config(text: str | None) -> WikiConfig | None:
    try:
        return parse_config(text or "")
    except ConfigError:
        return None


def setting_flags(old_text: str | None, new_text: str | None,
                  deleted: bool = False) -> list[ReviewFlag]:
    """``R008`` and ``R009`` flags (module docstring) of a ``wiki.toml`` change from
    ``old_text`` to ``new_text`` (``None``: absent); ``deleted``: the proposal deletes
    the file."""
    flags = [ReviewFlag("R009", "config-deleted", CONFIG_PATH, 0, 0, TRUST_SETTING,
                        "deletes wiki.toml: every setting returns to its default")] \
        if deleted else []
    new = _config(new_text)
    if new is None:
        return flags
    old = _config(old_text) or WikiConfig()
    weakened = _weakened(old, new)
    flags += [ReviewFlag("R008", kind, CONFIG_PATH, 0, 0, POLICY,
                         f"weakens the review policy: {detail}")
              for kind, (_, detail) in weakened.items()]
    flagged = {name for name, _ in weakened.values()}
    was, now = values(old), values(new)
    for name in dict.fromkeys([*was, *now]):
        setting = ".".join(name.split(".")[:2])
        if was.get(name) == now.get(name) or not is_trust_setting(name) or setting in flagged:
            continue
        why = TRUST.get(setting, "a setting no one has classified yet")
        flags.append(ReviewFlag("R009", setting, CONFIG_PATH, 0, 0, TRUST_SETTING,
                                f"changes {why}: {_shown(was.get(name))} -> "
                                f"{_shown(now.get(name))}"))
    return flags


def _weakened(was: WikiConfig, now: WikiConfig) -> dict[str, tuple[str, str]]:
    """R008 kind -> (setting, detail) for each way ``now`` weakens ``was``'s ``[review]``."""
    old, new = was.review, now.review
    found = {}
    if new.approvals_required < old.approvals_required:
        found["approvals-lowered"] = ("review.approvals_required", (
            f"approvals_required {old.approvals_required} -> {new.approvals_required}"))
    if new.allow_self_approval and not old.allow_self_approval:
        found["self-approval-allowed"] = ("review.allow_self_approval",
                                          "allow_self_approval turned on")
    if old.require_signatures and not new.require_signatures:
        found["signatures-dropped"] = ("review.require_signatures",
                                       "require_signatures turned off")
    return found


def _shown(value: Any) -> str:
    return "(none)" if value is None else repr(value)
