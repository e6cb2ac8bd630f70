"""The LLM's part in a search: the index-walk leg and the optional rerank, with what they
cost. :func:`wiki.answering.search.search` calls :meth:`LLMStage.open` only when the ``llm`` leg or
``rerank`` is asked for, so litellm is never imported otherwise."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from indexes.documents import Hit
from indexes.retrieval.ranked import hits_for
from indexes.sqlite.engine import Filters, SearchIndex
from wiki.config import LLMConfig
from wiki.llm.client import LLMClient
from wiki.llm.settings import HINT, limits_of, open_client
from wiki.llm.usage import Usage
from wiki.llm.walk import WalkSettings, rerank, walk


@dataclass
class LLMStage:
    """A model taking part in one search: ``client`` (``None`` when no model is
    configured: then ``note`` says so and nothing runs), the ``[llm]`` settings, the usage
    at the start, and notes on what happened (``walk_cached``, ``stopped``)."""

    client: LLMClient | None
    config: LLMConfig
    start: Usage = field(default_factory=Usage)
    note: str | None = None
    walk_cached: bool = False
    stopped: list[str] = field(default_factory=list)
    reranked: bool = False
    walk_cost: dict | None = None

    @classmethod
    def open(cls, wiki, config: LLMConfig, *, required: bool,
             client: LLMClient | None = None) -> LLMStage:
        """The stage for ``wiki`` with its configured model (or ``client``). Raises
        :class:`~wiki.llm.errors.ModelNotConfiguredError` when ``required`` (the leg or
        the rerank was asked for on the command line) and no model is configured."""
        if client is None:
            client = open_client(wiki, config)
        if client is None:
            if required:
                from wiki.llm.errors import ModelNotConfiguredError
                raise ModelNotConfiguredError(f"the llm leg and --rerank need a model: {HINT}")
            return cls(None, config, note="no model configured (WIKI_MODEL)")
        return cls(client, config, client.usage.copy())

    def settings(self) -> WalkSettings:
        """The walk's sizes from ``[llm]``."""
        return WalkSettings(folders=self.config.walk_folders, entries=self.config.walk_entries,
                            deep_read=self.config.deep_read)

    def leg(self, index: SearchIndex, query: str, commit: str,
            read: Callable[[str], bytes | None], filters: Filters, window: int) -> list[Hit]:
        """The walk's ranked entries as hits (filtered like every leg), at most
        ``window``."""
        if self.client is None:
            return []
        result = walk(self.client, query, read, index, commit=commit,
                      settings=self.settings(), limits=limits_of(self.config),
                      filters=filters)
        self.walk_cached = result.cached
        self.walk_cost = result.cost.to_dict()
        if result.stopped:
            self.stopped.append(f"walk: {result.stopped}")
        return hits_for(index, result.ranked, filters=filters, limit=window)

    def rerank(self, index: SearchIndex, query: str, hits: list[Hit]) -> list[Hit]:
        """``hits`` with the first ``[llm] rerank_top`` re-ordered by the model."""
        if self.client is None or not hits:
            return hits
        ranked, stopped = rerank(self.client, query, hits, index, top=self.config.rerank_top,
                                 settings=self.settings(), limits=limits_of(self.config))
        self.reranked = True
        if stopped:
            self.stopped.append(f"rerank: {stopped}")
        return ranked

    def report(self) -> dict:
        """JSON-ready: the model, this search's usage, whether the walk came from the
        cache and what it cost when computed, whether the hits were reranked, and why
        anything stopped early."""
        usage = self.client.usage.since(self.start) if self.client else Usage()
        return {"model": self.client.model if self.client else None,
                "usage": usage.to_dict(), "walk_cached": self.walk_cached,
                "walk_cost": self.walk_cost,
                "reranked": self.reranked, "stopped": self.stopped, "note": self.note}
