"""``wiki.toml``: the settings that live on the branch (categories, ingest, review, search).

Per-user settings (model names, keys, the branch name) come from the environment or git
config, never from here. Unknown keys are errors, so a typo never silently does nothing.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields

from wiki.errors import ConfigError

CONFIG_PATH = "wiki.toml"


@dataclass(frozen=True)
class IngestConfig:
    """How sources become entries.

    ``split_words``: a source longer than this many words is split at its ``##`` headings;
    ``min_section_words``: shorter sections are merged into the one before;
    ``max_bytes`` / ``max_lines``: larger sources are skipped as too large;
    ``categories``: source folder prefix -> wiki folder (longest prefix wins; ``""`` maps a
    prefix to the root); ``tag_fields`` / ``alias_fields``: source frontmatter keys read as
    tags / aliases.
    """

    split_words: int = 500
    min_section_words: int = 40
    max_bytes: int = 2_000_000
    max_lines: int = 50_000
    extensions: tuple[str, ...] = (".md", ".markdown", ".txt")
    tag_fields: tuple[str, ...] = ("tags", "keywords")
    alias_fields: tuple[str, ...] = ("aliases",)
    categories: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SourcesConfig:
    """What counts as a change of a source's fingerprint."""

    ignore_frontmatter: bool = True
    ignore_whitespace: bool = True


@dataclass(frozen=True)
class ReviewConfig:
    """Who may land a proposal: ``approvals_required`` (1) and whether an author may
    approve their own proposal (``allow_self_approval``, for a one-person wiki)."""

    approvals_required: int = 1
    allow_self_approval: bool = False


@dataclass(frozen=True)
class SearchConfig:
    """Ranking and abstention: the retrieval ``legs``, each offering its top ``window``
    hits, fused by ``fusion`` (``zscore``: weighted CombSUM of z-scores, or ``rrf`` with
    ``rrf_k``) with ``leg_weights`` (tuned on SciFact train, the handbook dev set and half
    of LoCoMo: evals/results/fusion.md), BM25 column ``weights`` (title,
    aliases, tags, summary, body) and ``gap_threshold``, the confidence below which
    ``ask`` reports an evidence gap when only lexical legs ran; with the vector leg the
    gap is ``coverage < gap_coverage and top cosine < gap_cosine`` (both fitted on the
    handbook dev questions: evals/results/abstention.md)."""

    weights: tuple[float, ...] = (8.0, 6.0, 3.0, 3.0, 1.0)
    gap_threshold: float = 0.4
    gap_coverage: float = 0.54
    gap_cosine: float = 0.45
    legs: tuple[str, ...] = ("alias", "bm25", "vector")
    fusion: str = "zscore"
    rrf_k: int = 60
    window: int = 50
    leg_weights: dict[str, float] = field(default_factory=lambda: {
        "alias": 1.0, "bm25": 1.0, "vector": 0.75})


@dataclass(frozen=True)
class LLMConfig:
    """The language model (docs/llm.md): ``model`` is the team's default litellm model name
    (``WIKI_MODEL`` or ``git config wiki.model`` override it; ``""`` = none); ``timeout``
    seconds per call; per question at most ``max_calls`` provider calls, ``max_tokens``
    prompt + completion tokens and ``max_seconds``; the index walk expands at most
    ``walk_folders`` folders, judges ``walk_entries`` entries on their cards and
    deep-reads ``deep_read``; ``--rerank`` re-judges the fused top ``rerank_top``.
    Defaults sized for the local model on two CPU cores (evals/results/handbook-llm.md)."""

    model: str = ""
    timeout: float = 60.0
    max_calls: int = 45
    max_tokens: int = 10000
    max_seconds: float = 150.0
    walk_folders: int = 3
    walk_entries: int = 12
    deep_read: int = 3
    rerank_top: int = 5


@dataclass(frozen=True)
class WikiConfig:
    """All settings read from ``wiki.toml``."""

    ingest: IngestConfig = field(default_factory=IngestConfig)
    sources: SourcesConfig = field(default_factory=SourcesConfig)
    review: ReviewConfig = field(default_factory=ReviewConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)


_SECTIONS = {"ingest": IngestConfig, "sources": SourcesConfig, "review": ReviewConfig,
             "search": SearchConfig, "llm": LLMConfig}


def parse_config(text: str, path: str = CONFIG_PATH) -> WikiConfig:
    """Parse ``wiki.toml`` text. Raises :class:`ConfigError` naming the key and value."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    version = data.pop("wiki", {}).get("version", 1)  # [wiki] holds the format version only
    if version != 1:
        raise ConfigError(f"{path} [wiki]: version {version!r} is not supported by this "
                          "wiki (1); upgrade wiki")
    sections = {}
    for name, values in data.items():
        if name not in _SECTIONS:
            raise ConfigError(f"{path}: unknown section [{name}] "
                              f"(known: {', '.join(sorted(_SECTIONS))})")
        sections[name] = _section(_SECTIONS[name], values, f"{path} [{name}]")
    config = WikiConfig(**sections)
    _check_ranges(config, path)
    return config


def _check_ranges(config: WikiConfig, path: str) -> None:
    problems = []
    for key in ("gap_threshold", "gap_coverage", "gap_cosine"):
        if not 0 <= getattr(config.search, key) <= 1:
            problems.append(f"[search] {key} must be from 0 to 1, got "
                            f"{getattr(config.search, key)!r}")
    if len(config.search.weights) != 5:
        problems.append("[search] weights needs 5 numbers (title, aliases, tags, summary, "
                        f"body), got {list(config.search.weights)!r}")
    if config.ingest.split_words < 1 or config.ingest.max_bytes < 1 or \
            config.ingest.max_lines < 1:
        problems.append("[ingest] split_words, max_bytes and max_lines must be at least 1")
    unknown = [leg for leg in (*config.search.legs, *config.search.leg_weights)
               if leg not in ("alias", "bm25", "vector", "llm")]
    if unknown or not config.search.legs:
        problems.append(f"[search] legs are alias, bm25, vector and llm, got "
                        f"{unknown or '[]'}")
    if config.review.approvals_required < 1:
        problems.append("[review] approvals_required must be at least 1")
    if config.search.fusion not in ("zscore", "rrf"):
        problems.append(f"[search] fusion is zscore or rrf, got {config.search.fusion!r}")
    if config.search.rrf_k < 1 or config.search.window < 1:
        problems.append("[search] rrf_k and window must be at least 1")
    if not config.ingest.extensions:
        problems.append("[ingest] extensions must name at least one file ending")
    if not isinstance(config.llm.model, str):
        problems.append(f"[llm] model must be a string, got {config.llm.model!r}")
    if config.llm.timeout <= 0 or config.llm.max_calls < 1 or config.llm.max_tokens < 1:
        problems.append("[llm] timeout, max_calls and max_tokens must be above 0")
    if problems:
        raise ConfigError(f"{path} {problems[0]}")


def _table(default: dict, value, where: str) -> dict:
    """A TOML table checked against its default: numbers if the default holds numbers
    (merged over the default), else strings."""
    numeric = any(isinstance(v, float) for v in default.values())
    ok = isinstance(value, dict) and all(
        (isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0) if numeric
        else isinstance(v, str) for v in value.values())
    if not ok:
        kind = "non-negative numbers" if numeric else "strings"
        raise ConfigError(f"{where} must be a table of {kind}, got {value!r}")
    return {**default, **{k: float(v) for k, v in value.items()}} if numeric else value


def _section(cls, values: dict, where: str):
    known = {f.name: f for f in fields(cls)}
    kwargs = {}
    defaults = cls()
    for key, value in values.items():
        if key not in known:
            raise ConfigError(f"{where}: unknown key '{key}' (known: {', '.join(known)})")
        default = getattr(defaults, key)
        if isinstance(default, tuple):
            if not isinstance(value, list):
                raise ConfigError(f"{where}: '{key}' must be a list, got {value!r}")
            value = tuple(value)
        elif isinstance(default, bool):
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: '{key}' must be true or false, got {value!r}")
        elif isinstance(default, (int, float)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ConfigError(f"{where}: '{key}' must be a non-negative number, got {value!r}")
        elif isinstance(default, dict):
            value = _table(default, value, f"{where}: '{key}'")
        kwargs[key] = value
    return cls(**kwargs)


TEMPLATE = """\
# wiki.toml: settings shared by everyone who uses this wiki (kept on the wiki branch).
# Per-user settings (model, keys) come from the environment or git config instead.
[wiki]
version = 1

[ingest]
# Sources longer than this many words are split into one entry per `##` section.
split_words = 500
min_section_words = 40
max_bytes = 2000000
max_lines = 50000
extensions = [".md", ".markdown", ".txt"]
tag_fields = ["tags", "keywords"]
alias_fields = ["aliases"]

# Source folder prefix -> wiki folder; the longest matching prefix wins.
[ingest.categories]
# "pages/" = ""

[sources]
# A change confined to a source's frontmatter or whitespace is not a content change.
ignore_frontmatter = true
ignore_whitespace = true

[review]
approvals_required = 1
allow_self_approval = false

[search]
# BM25 column weights: title, aliases, tags, summary, body.
weights = [8.0, 6.0, 3.0, 3.0, 1.0]
# Evidence gap (`wiki ask` says "the wiki does not say"): with lexical legs only, when the
# top hit covers less than gap_threshold of the question's (IDF-weighted) words; with the
# vector leg, when coverage < gap_coverage and the best cosine < gap_cosine.
gap_threshold = 0.4
gap_coverage = 0.54
gap_cosine = 0.45
# Retrieval legs, each offering its top `window` hits, fused by "zscore" (weighted sum of
# each leg's standardised scores) or "rrf" (sum of w / (rrf_k + rank)).
legs = ["alias", "bm25", "vector"]
fusion = "zscore"
rrf_k = 60
window = 50

[search.leg_weights]
alias = 1.0
bm25 = 1.0
vector = 0.75
"""
