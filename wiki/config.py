"""``wiki.toml``: the settings that live on the branch (categories, ingest, review, search).

Per-user settings (model names, keys, the branch name) come from the environment or git
config, never from here. Unknown sections and keys (in ``[wiki]`` too), a section that is
not a table and a list item of the wrong type are errors, so a typo never silently does
nothing and nothing is kept that a later reader might trust. Which settings change what
readers trust (and so need an override at review) is :mod:`wiki.review.settings`.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field, fields
from functools import lru_cache
from typing import Any

from indexes.retrieval.legs import INDEX_LEGS, LEG_NAMES
from wiki.errors import ConfigError

CONFIG_PATH = "wiki.toml"

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([dwy])\s*$")
_DAYS = {"d": 1.0, "w": 7.0, "y": 365.0}


def parse_duration(text: Any) -> float | None:
    """Days in ``"90d"`` / ``"12w"`` / ``"1y"``; ``None`` for ``"never"`` (the syntax of
    ``[lifetimes]`` and ``[memory.half_life]``). Raises ``ValueError`` naming the value
    otherwise."""
    if isinstance(text, str) and text.strip().lower() == "never":
        return None
    match = _DURATION.match(text) if isinstance(text, str) else None
    if not match:
        raise ValueError(f"a duration is '<n>d', '<n>w', '<n>y' or 'never', got {text!r}")
    return float(match[1]) * _DAYS[match[2]]


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
    """How sources are checked (wiki.adapters): what counts as a change of a source's
    fingerprint (``ignore_frontmatter``, ``ignore_whitespace``); ``timeout``: seconds an
    http(s) source may take to answer; ``git_ref``: the ref at which ``git:`` sources are
    read (``""``: the work tree, as `git status` sees it; ``HEAD`` in a bare repository)."""

    ignore_frontmatter: bool = True
    ignore_whitespace: bool = True
    timeout: float = 10.0
    git_ref: str = ""


@dataclass(frozen=True)
class ReviewConfig:
    """Who may land a proposal: ``approvals_required`` (1), whether an author may
    approve their own proposal (``allow_self_approval``, for a one-person wiki) and
    whether proposal, approval and landing commits must be signed by keys the approver's
    git trusts (``require_signatures``; :mod:`wiki.review.approval_policy`, docs/review.md)."""

    approvals_required: int = 1
    allow_self_approval: bool = False
    require_signatures: bool = False


@dataclass(frozen=True)
class SearchConfig:
    """Ranking and abstention: the retrieval ``legs``, each offering its top ``window``
    hits, fused by ``fusion`` (``zscore``: weighted CombSUM of z-scores, or ``rrf`` with
    ``rrf_k``) with ``leg_weights`` (tuned on SciFact train, the handbook dev set and half
    of LoCoMo: evals/results/fusion.md), BM25 column ``weights`` (title,
    aliases, tags, summary, body) and ``gap_threshold``, the confidence below which
    ``ask`` reports an evidence gap when only lexical legs ran; with the vector leg the
    gap is ``coverage < gap_coverage and top cosine < gap_cosine`` (both fitted on the
    handbook dev questions: evals/results/abstention.md). Once a sentence is picked,
    ``gap_score`` and ``hedge_score`` judge its answer score (the best sentence's cosine
    plus half the word coverage, :func:`wiki.answering.sentence_scoring.answer_score`): below
    ``gap_score`` the answer is an evidence gap, below ``hedge_score`` it is shown hedged,
    "closest evidence, may not answer" (the picker's defaults,
    :class:`wiki.answering.sentence_scoring.PickerConfig`; evals/results/hedge-calibration.md).

    Routing (:mod:`wiki.answering.routing`): ``route`` turns it on by default (``--route`` /
    ``--no-route`` decide per search); ``route_mode`` is ``filter`` (search only the routed
    folders) or ``boost`` (an extra ``route`` leg of weight ``route_weight``);
    ``route_margin`` is the cosine margin below the best folder that still routes
    (evals/results/routing.md)."""

    weights: tuple[float, ...] = (8.0, 6.0, 3.0, 3.0, 1.0)
    gap_threshold: float = 0.4
    gap_coverage: float = 0.54
    gap_cosine: float = 0.45
    gap_score: float = 0.52
    hedge_score: float = 0.78
    legs: tuple[str, ...] = INDEX_LEGS
    fusion: str = "zscore"
    rrf_k: int = 60
    window: int = 50
    leg_weights: dict[str, float] = field(default_factory=lambda: {
        "alias": 1.0, "bm25": 1.0, "vector": 0.75})
    route: bool = False
    route_mode: str = "boost"
    route_margin: float = 0.02
    route_weight: float = 1.0


@dataclass(frozen=True)
class LifetimesConfig:
    """Default lifetime of an entry per ``type``: ``"<n>d"``, ``"<n>w"``, ``"<n>y"`` (365
    days) or ``"never"``. An entry expires at ``valid_until`` when it has one, else at its
    ``updated`` (or ``created``) time plus this lifetime (:mod:`wiki.store.lifetimes`)."""

    fact: str = "never"
    decision: str = "never"
    procedure: str = "never"
    note: str = "never"
    episode: str = "90d"


@dataclass(frozen=True)
class MemoryConfig:
    """Post-fusion re-scoring and graph expansion (:mod:`indexes.retrieval.rescore`), both off by
    default (evals/results/ablation-memory.md). The weights add to the min-max normalised
    fused relevance: ``recency`` (0.5 ** (age / half_life of the entry's type)),
    ``importance`` and ``confidence`` (the entry's fields, 0-1, 0.5 when absent) and
    ``graph`` (relations followed from the top ``graph_seeds`` hits, ``graph_decay`` per
    hop, at most ``graph_depth`` hops, only along ``graph_relations``)."""

    rescore: bool = False
    recency: float = 0.0
    importance: float = 0.0
    confidence: float = 0.0
    half_life: dict[str, str] = field(default_factory=lambda: {
        "episode": "30d", "note": "365d", "fact": "365d", "procedure": "365d",
        "decision": "never"})
    graph: bool = False
    graph_weight: float = 0.3
    graph_decay: float = 0.5
    graph_depth: int = 2
    graph_seeds: int = 5
    graph_relations: tuple[str, ...] = ("depends_on", "refines", "derived_from", "related_to")


@dataclass(frozen=True)
class LLMConfig:
    """The language model (docs/llm.md): ``model`` is the team's default litellm model name
    (``WIKI_MODEL`` or ``git config wiki.model`` override it; ``""`` = none); ``timeout``
    seconds per call; per question at most ``max_calls`` provider calls, ``max_tokens``
    prompt + completion tokens and ``max_seconds``; the index walk expands at most
    ``walk_folders`` folders, judges ``walk_entries`` entries on their cards and
    deep-reads ``deep_read``; ``--rerank`` re-judges the fused top ``rerank_top``.
    ``gap_judge`` (``off`` / ``on``): the model judges whether an extractive answer's
    opening answers the question, a gap when P(yes) < ``gap_judge_below``
    (:mod:`wiki.answering.gap_judge`). Defaults sized for the local model on two CPU
    cores (evals/results/handbook-llm.md, ask-judge-tune.md)."""

    model: str = ""
    timeout: float = 60.0
    max_calls: int = 45
    max_tokens: int = 10000
    max_seconds: float = 150.0
    walk_folders: int = 3
    walk_entries: int = 12
    deep_read: int = 3
    rerank_top: int = 5
    gap_judge: str = "off"
    gap_judge_below: float = 0.18


@dataclass(frozen=True)
class WikiConfig:
    """All settings read from ``wiki.toml``."""

    ingest: IngestConfig = field(default_factory=IngestConfig)
    sources: SourcesConfig = field(default_factory=SourcesConfig)
    review: ReviewConfig = field(default_factory=ReviewConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    lifetimes: LifetimesConfig = field(default_factory=LifetimesConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)


_SECTIONS = {"ingest": IngestConfig, "sources": SourcesConfig, "review": ReviewConfig,
             "search": SearchConfig, "lifetimes": LifetimesConfig, "memory": MemoryConfig,
             "llm": LLMConfig}


def parse_config(text: str, path: str = CONFIG_PATH) -> WikiConfig:
    """Parse ``wiki.toml`` text. Raises :class:`ConfigError` naming the key and value."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    _check_format(data.pop("wiki", {}), path)
    sections = {}
    for name, values in data.items():
        if name not in _SECTIONS:
            raise ConfigError(f"{path}: unknown section [{name}] "
                              f"(known: {', '.join(sorted(_SECTIONS))})")
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: [{name}] must be a table of settings, got "
                              f"{values!r}")
        sections[name] = _section(_SECTIONS[name], values, f"{path} [{name}]")
    config = WikiConfig(**sections)
    _check_ranges(config, path)
    return config


@lru_cache(maxsize=64)
def parsed_config(text: str) -> WikiConfig:
    """:func:`parse_config` of ``text``, kept per text: every served call reads the
    settings of its commit and of its index (together 20 % of a served ask's CPU, measured
    with py-spy). The config is frozen and its tables are only read; errors are raised
    again each time."""
    return parse_config(text)


def _check_format(table, path: str) -> None:
    """``[wiki]`` holds the format version only: another key (which a later reader might
    trust) or a version other than the integer 1 is an error, like any unknown key."""
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [wiki] must be a table holding version = 1, got {table!r}")
    unknown = [key for key in table if key != "version"]
    if unknown:
        raise ConfigError(f"{path} [wiki]: unknown key '{unknown[0]}' (known: version)")
    version = table.get("version", 1)
    if isinstance(version, bool) or version != 1 or not isinstance(version, int):
        raise ConfigError(f"{path} [wiki]: version {version!r} is not supported by this "
                          "wiki (1); upgrade wiki")


def _check_ranges(config: WikiConfig, path: str) -> None:
    problems = []
    for key in ("gap_threshold", "gap_coverage", "gap_cosine"):
        if not 0 <= getattr(config.search, key) <= 1:
            problems.append(f"[search] {key} must be from 0 to 1, got "
                            f"{getattr(config.search, key)!r}")
    for key in ("gap_score", "hedge_score"):  # a cosine plus half a coverage
        if not 0 <= getattr(config.search, key) <= 1.5:
            problems.append(f"[search] {key} must be from 0 to 1.5, got "
                            f"{getattr(config.search, key)!r}")
    if len(config.search.weights) != 5:
        problems.append("[search] weights needs 5 numbers (title, aliases, tags, summary, "
                        f"body), got {list(config.search.weights)!r}")
    if config.ingest.split_words < 1 or config.ingest.max_bytes < 1 or \
            config.ingest.max_lines < 1:
        problems.append("[ingest] split_words, max_bytes and max_lines must be at least 1")
    unknown = [leg for leg in (*config.search.legs, *config.search.leg_weights)
               if leg not in LEG_NAMES]
    if unknown or not config.search.legs:
        problems.append(f"[search] legs are alias, bm25, vector and llm, got "
                        f"{unknown or '[]'}")
    if config.review.approvals_required < 1:
        problems.append("[review] approvals_required must be at least 1")
    if config.search.fusion not in ("zscore", "rrf"):
        problems.append(f"[search] fusion is zscore or rrf, got {config.search.fusion!r}")
    if config.search.rrf_k < 1 or config.search.window < 1:
        problems.append("[search] rrf_k and window must be at least 1")
    if config.search.route_mode not in ("filter", "boost"):
        problems.append(f"[search] route_mode is filter or boost, got "
                        f"{config.search.route_mode!r}")
    if not 0 <= config.search.route_margin <= 2 or config.search.route_weight < 0:
        problems.append("[search] route_margin must be from 0 to 2 (cosine points) and "
                        "route_weight at least 0")
    problems += _memory_problems(config)
    if not config.sources.timeout > 0:
        problems.append(f"[sources] timeout must be more than 0 seconds, got "
                        f"{config.sources.timeout!r}")
    if not isinstance(config.sources.git_ref, str) or config.sources.git_ref.startswith("-"):
        problems.append(f"[sources] git_ref must be a ref name such as \"HEAD\" or \"\" "
                        f"(the work tree), got {config.sources.git_ref!r}")
    if not config.ingest.extensions:
        problems.append("[ingest] extensions must name at least one file ending")
    if not isinstance(config.llm.model, str):
        problems.append(f"[llm] model must be a string, got {config.llm.model!r}")
    if config.llm.timeout <= 0 or config.llm.max_calls < 1 or config.llm.max_tokens < 1:
        problems.append("[llm] timeout, max_calls and max_tokens must be above 0")
    if config.llm.gap_judge not in ("off", "on"):
        problems.append(f"[llm] gap_judge is off or on, got {config.llm.gap_judge!r}")
    if not _number(config.llm.gap_judge_below) or not 0 <= config.llm.gap_judge_below <= 1:
        problems.append(f"[llm] gap_judge_below must be from 0 to 1, got "
                        f"{config.llm.gap_judge_below!r}")
    if problems:
        raise ConfigError(f"{path} {problems[0]}")


def _memory_problems(config: WikiConfig) -> list[str]:
    problems = []
    durations = [(f"[lifetimes] {k}", v) for k, v in vars(config.lifetimes).items()]
    durations += [(f"[memory.half_life] {k}", v) for k, v in config.memory.half_life.items()]
    for where, value in durations:
        try:
            parse_duration(value)
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
    types = ("fact", "decision", "procedure", "note", "episode")
    unknown = [t for t in config.memory.half_life if t not in types]
    if unknown:
        problems.append(f"[memory.half_life] types are {', '.join(types)}, got {unknown}")
    bad = [r for r in config.memory.graph_relations
           if r not in ("depends_on", "refines", "derived_from", "related_to")]
    if bad:
        problems.append(f"[memory] graph_relations may follow depends_on, refines, "
                        f"derived_from and related_to only (never supersession or "
                        f"conflicts_with), got {bad}")
    if not 0 <= config.memory.graph_decay <= 1:
        problems.append(f"[memory] graph_decay must be from 0 to 1, got "
                        f"{config.memory.graph_decay!r}")
    return problems


def _table(default: dict, value, where: str) -> dict:
    """A TOML table checked against its default: numbers if the default holds numbers
    (merged over the default), else strings."""
    numeric = any(isinstance(v, float) for v in default.values())
    ok = isinstance(value, dict) and all(
        _number(v) if numeric else isinstance(v, str) for v in value.values())
    if not ok:
        kind = "non-negative numbers" if numeric else "strings"
        raise ConfigError(f"{where} must be a table of {kind}, got {value!r}")
    return {**default, **{k: float(v) for k, v in value.items()}} if numeric else \
        {**default, **value}


MAX_NUMBER = 2 ** 53
"""The largest number a setting may hold: exact as a float and within SQLite's integers
(``window = 99999999999999999999`` overflowed a query parameter: exit 70)."""


def _number(value) -> bool:
    """A finite, non-negative int or float up to :data:`MAX_NUMBER` (TOML's ``nan`` and
    ``inf`` are not settings)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, int):  # exact: math.isfinite(10**400) raises OverflowError
        return 0 <= value <= MAX_NUMBER
    return math.isfinite(value) and 0 <= value <= MAX_NUMBER


def _too_large(value) -> bool:
    """A number over :data:`MAX_NUMBER` (said in the message: the rest of it still holds)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        value == value and MAX_NUMBER < value < math.inf


def _section(cls, values: dict, where: str):
    known = {f.name: f for f in fields(cls)}
    kwargs = {}
    defaults = cls()
    for key, value in values.items():
        if key not in known:
            raise ConfigError(f"{where}: unknown key '{key}' (known: {', '.join(known)})")
        default = getattr(defaults, key)
        if isinstance(default, tuple):
            numeric = bool(default) and all(_number(v) for v in default)
            wanted = _number if numeric else lambda v: isinstance(v, str)
            if not isinstance(value, list) or not all(wanted(v) for v in value):
                kind = "a list of non-negative numbers" if numeric else "a list of strings"
                raise ConfigError(f"{where}: '{key}' must be {kind}, got {value!r}")
            value = tuple(value)
        elif isinstance(default, bool):
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: '{key}' must be true or false, got {value!r}")
        elif isinstance(default, (int, float)):
            whole = isinstance(default, int)
            if not _number(value) or whole and not isinstance(value, int):
                limit = " up to 2**53" if _too_large(value) else ""
                raise ConfigError(f"{where}: '{key}' must be a non-negative "
                                  f"{'whole ' * whole}number{limit}, got {value!r}")
        elif isinstance(default, dict):
            value = _table(default, value, f"{where}: '{key}'")
        kwargs[key] = value
    return cls(**kwargs)
