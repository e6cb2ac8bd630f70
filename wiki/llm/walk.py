"""The LLM index walk, the fourth retrieval leg (docs/architecture.md, "Retrieval"), and
the LLM rerank.

A walk for one question, within the question's budget (:class:`~wiki.llm.usage.Limits`):

1. **Folders.** From the root ``index.md``, best first: each subfolder of an expanded
   folder is judged ("could the answer be in this folder?") on its name and the titles it
   lists; a folder holding a single subfolder and no entries is passed through without a
   call. The walk stops expanding after ``folders`` folders that had subfolders to judge,
   or once three times ``entries`` entries are listed.
2. **Cards.** The entries listed in the expanded folders, in order of their folder's
   score and then of the question words their title and summary share (this only decides
   which are judged when there are more than ``entries``), are judged on their frontmatter
   card (title, summary, tags, aliases).
3. **Deep read.** The ``deep_read`` best cards are judged again on their text.

Every judgement is a scored yes/no answer (:meth:`LLMClient.judge`): small models say
"relevant" to nearly anything in free text, and did no better than chance picking from a
lettered list of 24 folders, but their probability of "yes" ranks pairs well. The
question comes before the evidence in every prompt, so a local model re-reads only the
candidate. The ranking: deep-read entries by P(yes), then the other judged cards, then the
other listed entries. A spent budget ends the walk with what it has; a failed call ends
it too and is reported. Walks are cached by (question, branch commit, model, settings,
filters).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

from indexes.backend import IndexBackend
from indexes.documents import Hit
from indexes.retrieval.filters import Filters
from indexes.sqlite.rows import Card
from wiki.llm import prompts
from wiki.llm.cache import cache_key
from wiki.llm.client import LLMClient
from wiki.llm.errors import BudgetExceededError, LLMCallError
from wiki.llm.tree import FolderListing, read_listing
from wiki.llm.usage import Limits, Usage

WALK_VERSION = 6
_WORD = re.compile(r"[^\W_]{3,}")


@dataclass(frozen=True)
class WalkSettings:
    """Sizes of a walk: folders expanded, entries judged on their cards, entries
    deep-read, and how many words the model sees of a folder's contents, of a card's
    summary and of a body. Prompt tokens are what a CPU pays for (30-170 tokens/s for the
    local model on two cores, by load), so every text is short."""

    folders: int = 3
    entries: int = 12
    deep_read: int = 3
    line_words: int = 30
    card_words: int = 24
    body_words: int = 80


@dataclass
class WalkResult:
    """The ranked ``(entry path, score)`` pairs of a walk, best first (deep-read entries
    score 2 + P(yes), other entries ranked on their cards 1 + their share, the rest their
    listing score, below 1); ``usage`` of this walk
    (all zero but ``cache_hits`` when it was ``cached``); ``stopped``: why the walk ended
    early (a spent budget or a failed call), else ``None``; ``trace``: the folders scored,
    as ``(path, score)``."""

    ranked: list[tuple[str, float]]
    usage: Usage = field(default_factory=Usage)
    cached: bool = False
    stopped: str | None = None
    trace: list[tuple[str, float]] = field(default_factory=list)
    cost: Usage = field(default_factory=Usage)
    """What the walk cost when it was computed (its ``usage`` then)."""


def walk(client: LLMClient, question: str, read: Callable[[str], bytes | None],
         index: IndexBackend, *, commit: str, settings: WalkSettings = WalkSettings(),
         limits: Limits | None = None, filters: Filters | None = None) -> WalkResult:
    """Walk the ``index.md`` tree of ``commit`` (read with ``read(path)``) for
    ``question``; ``index`` gives the entries' cards and text (synced to ``commit``) and
    applies ``filters``. Never raises for a provider failure or a spent budget: the result
    says why it stopped."""
    filters = filters or Filters()
    allowed = index.allowed_keys(filters)  # what the filters let through, not their form:
    # an expiry filter carries the current time, yet gives the same entries all day
    key = cache_key("walk", {"v": WALK_VERSION, "question": " ".join(question.split()),
                             "commit": commit, "model": client.model,
                             "settings": asdict(settings),
                             "allowed": None if allowed is None else sorted(allowed)})
    if client.cache is not None and (hit := client.cache.get(key)) is not None:
        client.usage.cache_hits += 1
        cost = {k: v for k, v in hit.get("cost", {}).items() if k != "tokens"}
        return WalkResult([(p, s) for p, s in hit["ranked"]], Usage(cache_hits=1), True,
                          hit.get("stopped"), [(p, s) for p, s in hit.get("trace", [])],
                          Usage(**cost))
    start = client.usage.copy()
    state = _Walk(client, question, read, index, settings, filters)
    stopped, failed = None, False
    with client.budget(limits):
        try:
            state.run()
        except BudgetExceededError as exc:
            stopped = str(exc)
        except LLMCallError as exc:
            stopped, failed = str(exc), True
    spent = client.usage.since(start)
    result = WalkResult(state.ranked(), spent, False, stopped, state.trace, spent)
    if client.cache is not None and not failed:  # a failure may pass; a budget does not
        client.cache.put(key, client.model, {"ranked": result.ranked, "stopped": stopped,
                                             "trace": result.trace, "cost": spent.to_dict()})
    return result


class _Walk:
    def __init__(self, client: LLMClient, question: str, read, index: IndexBackend,
                 settings: WalkSettings, filters: Filters):
        self.client, self.question, self.read = client, question, read
        self.index, self.settings = index, settings
        self.allowed = index.allowed_keys(filters)
        self.trace: list[tuple[str, float]] = []
        self.listed: dict[str, float] = {}
        self.overlap: dict[str, int] = {}
        self.words = set(_WORD.findall(question.casefold()))
        self.cards: dict[str, float] = {}
        self.deep: dict[str, float] = {}
        self.rows: dict[str, Card] = {}

    def run(self) -> None:
        self._folders()
        order = sorted(self.listed, key=lambda p: (-self.listed[p], -self.overlap[p], p))
        self.rows = self._rows(order[:self.settings.entries])
        for path in order[:self.settings.entries]:
            if path in self.rows:
                self.cards[path] = self.client.judge(self.question,
                                                     _card(self.rows[path], self.settings))
        best = sorted(self.cards, key=lambda p: (-self.cards[p], p))
        for path in best[:self.settings.deep_read]:
            text = _card(self.rows[path], self.settings) + "\nText: " + prompts.clip(
                self.rows[path].body, self.settings.body_words)
            self.deep[path] = self.client.judge(self.question, text)

    def _folders(self) -> None:
        """Expand folders best first, judging each subfolder, until ``folders`` folders
        with subfolders were expanded or three times ``entries`` entries are listed; the
        entries of an expanded folder are listed with its score (the root's with its best
        subfolder's)."""
        frontier: list[tuple[float, str]] = [(-1.0, "")]
        expanded, enough = 0, 3 * max(self.settings.entries, self.settings.deep_read)
        while frontier and expanded < self.settings.folders and len(self.listed) < enough:
            negative, folder = heapq.heappop(frontier)
            listing = read_listing(self.read, folder)
            if listing is None:
                continue
            if len(listing.folders) == 1 and not listing.entries:
                heapq.heappush(frontier, (negative, listing.folders[0][0]))
                continue  # a lone subfolder: nothing to choose
            expanded += bool(listing.folders)  # a folder of entries only costs no call
            scores = []
            for path, count in listing.folders:
                score = self.client.judge(self.question, self._describe(path, count),
                                          ask=prompts.FOLDER)
                self.trace.append((path, score))
                heapq.heappush(frontier, (-score, path))
                scores.append(score)
            prior = -negative if folder and -negative < 1.0 else max(scores, default=0.5)
            for path, title, summary in listing.entries:
                if self.allowed is None or path in self.allowed:
                    self.listed[path] = prior
                    self.overlap[path] = len(self.words & set(_WORD.findall(
                        f"{title} {summary}".casefold())))

    def _describe(self, folder: str, count: int) -> str:
        listing = read_listing(self.read, folder) or FolderListing(folder)
        names = [title for _, title, _ in listing.entries]
        names += [p.rpartition("/")[2].replace("-", " ") for p, _ in listing.folders]
        about = f"\nAbout: {prompts.clip(listing.overview, 20)}" if listing.overview else ""
        return (f"Section: {folder.rpartition('/')[2].replace('-', ' ')} ({count} pages)"
                f"{about}\nPages: " + prompts.clip("; ".join(names), self.settings.line_words))

    def _rows(self, paths: list[str]) -> dict[str, Card]:
        if self.allowed is not None:
            paths = [p for p in paths if p in self.allowed]
        return self.index.docs.cards(paths)

    def ranked(self) -> list[tuple[str, float]]:
        """Deep-read entries (2 + P(yes)), then the other carded ones (1 + P(yes)), then
        the rest of the listed ones (half their folder's score, below 1)."""
        scores = {p: 0.5 * s for p, s in self.listed.items()}
        scores.update({p: 1.0 + s for p, s in self.cards.items()})
        scores.update({p: 2.0 + s for p, s in self.deep.items()})
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def _card(row: Card, settings: WalkSettings) -> str:
    lines = [f"Title: {row.title}"]
    if row.summary:
        lines.append(f"Summary: {prompts.clip(row.summary, settings.card_words)}")
    for name in ("tags", "aliases"):
        value = getattr(row, name)
        if value.strip():
            lines.append(f"{name.capitalize()}: {' '.join(value.split())}")
    return "\n".join(lines)


def rerank(client: LLMClient, question: str, hits: list[Hit], index: IndexBackend, *,
           top: int = 10, settings: WalkSettings = WalkSettings(),
           limits: Limits | None = None) -> tuple[list[Hit], str | None]:
    """Re-order the first ``top`` fused ``hits`` by the model's judgement of each entry's
    card and text (ties keep the fused order); the rest follow unchanged. Each re-judged
    hit gets ``legs["rerank"] = (new rank, P(yes))``. Returns the hits and why reranking
    stopped early (``None`` when it did not): then only the hits judged before it
    stopped are re-ordered, among themselves."""
    head, judged, stopped = hits[:top], {}, None
    rows = _Walk(client, question, lambda _: None, index, settings, Filters(statuses=None)
                 )._rows([h.key for h in head])
    with client.budget(limits):
        for hit in head:
            if hit.key not in rows:
                continue
            text = _card(rows[hit.key], settings) + "\nText: " + prompts.clip(
                rows[hit.key].body, settings.body_words)
            try:
                judged[hit.key] = client.judge(question, text)
            except (BudgetExceededError, LLMCallError) as exc:
                stopped = str(exc)
                break
    order = sorted(range(len(head)), key=lambda i: (-judged.get(head[i].key, -1.0), i))
    ranked = [replace(hit, rank=rank, legs={**hit.legs, "rerank": (rank, judged[hit.key])}
                      if hit.key in judged else hit.legs)
              for rank, hit in enumerate([head[i] for i in order] + hits[top:], 1)]
    return ranked, stopped
