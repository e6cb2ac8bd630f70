"""The LLM index walk, the fourth retrieval leg (DESIGN.md §5.4), and the LLM rerank.

A walk for one question, within the question's budget (:class:`~wiki.llm.usage.Limits`):

1. **Folders.** From the root ``index.md``, best first: every subfolder of an expanded
   folder is judged ("could the answer be in this folder?") on its path, overview and the
   titles it lists; a folder holding a single subfolder and no entries is passed through
   without a call. At most ``folders`` folders are expanded.
2. **Cards.** The entries listed in the expanded folders, in order of their folder's
   score (then by how many question words their title and summary share, to decide which
   are judged when there are more than ``entries``), are judged on their frontmatter card
   (title, summary, tags, aliases).
3. **Deep read.** The best ``deep_read`` cards are judged again on their text.

An entry's score is the mean of its judgements; the leg returns every judged entry, best
first. Judgements are scored yes/no answers (:meth:`LLMClient.judge`): small models say
"relevant" to nearly anything in free text, but their probability of "yes" ranks well.
A spent budget ends the walk with what it has; a failed call ends it too and is reported.
Walks are cached by (question, branch commit, model, settings, filters).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from indexes.documents import Hit
from indexes.store import Filters, SearchIndex
from wiki.llm import prompts
from wiki.llm.cache import cache_key
from wiki.llm.client import LLMClient
from wiki.llm.errors import BudgetExceededError, LLMCallError
from wiki.llm.tree import FolderListing, read_listing
from wiki.llm.usage import Limits, Usage

WALK_VERSION = 1
_WORD = re.compile(r"[^\W_]{3,}")


@dataclass(frozen=True)
class WalkSettings:
    """Sizes of a walk: folders expanded, entry cards judged, entries deep-read, and how
    many words of a card / a body / a folder description the model sees."""

    folders: int = 3
    entries: int = 40
    deep_read: int = 6
    card_words: int = 45
    body_words: int = 140
    folder_words: int = 50


@dataclass
class WalkResult:
    """The ranked ``(entry path, score 0-1)`` pairs of a walk, best first; ``usage`` of
    this walk (all zero but ``cache_hits`` when it was ``cached``); ``stopped``: why the
    walk ended early (a spent budget or a failed call), else ``None``; ``trace``: the
    folders judged, as ``(path, score)``."""

    ranked: list[tuple[str, float]]
    usage: Usage = field(default_factory=Usage)
    cached: bool = False
    stopped: str | None = None
    trace: list[tuple[str, float]] = field(default_factory=list)


def walk(client: LLMClient, question: str, read: Callable[[str], bytes | None],
         index: SearchIndex, *, commit: str, settings: WalkSettings = WalkSettings(),
         limits: Limits | None = None, filters: Filters | None = None) -> WalkResult:
    """Walk the ``index.md`` tree of ``commit`` (read with ``read(path)``) for
    ``question``; ``index`` gives the entries' cards and text (synced to ``commit``) and
    applies ``filters``. Never raises for a provider failure or a spent budget: the result
    says why it stopped."""
    filters = filters or Filters()
    key = cache_key("walk", {"v": WALK_VERSION, "question": " ".join(question.split()),
                             "commit": commit, "model": client.model,
                             "settings": asdict(settings), "filters": asdict(filters)})
    if client.cache is not None and (hit := client.cache.get(key)) is not None:
        client.usage.cache_hits += 1
        return WalkResult([(p, s) for p, s in hit["ranked"]], Usage(cache_hits=1), True,
                          hit.get("stopped"), [(p, s) for p, s in hit.get("trace", [])])
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
    result = WalkResult(state.ranked(), client.usage.since(start), False, stopped, state.trace)
    if client.cache is not None and not failed:  # a failure may pass; a budget does not
        client.cache.put(key, client.model, {"ranked": result.ranked, "stopped": stopped,
                                             "trace": result.trace})
    return result


class _Walk:
    def __init__(self, client: LLMClient, question: str, read, index: SearchIndex,
                 settings: WalkSettings, filters: Filters):
        self.client, self.question, self.read = client, question, read
        self.index, self.settings = index, settings
        self.allowed = index.allowed_keys(filters)
        self.words = set(_WORD.findall(question.casefold()))
        self.trace: list[tuple[str, float]] = []
        self.cards: dict[str, float] = {}
        self.deep: dict[str, float] = {}

    def run(self) -> None:
        candidates = self._folders()
        rows = self._rows([path for _, _, path in candidates])
        order = sorted((c for c in candidates if c[2] in rows),
                       key=lambda c: (-c[0], -self._overlap(rows[c[2]]), c[1]))
        for _, _, path in order[:self.settings.entries]:
            self.cards[path] = self.client.judge(self.question, _card(rows[path],
                                                                      self.settings))
        best = sorted(self.cards, key=lambda p: (-self.cards[p], p))
        for path in best[:self.settings.deep_read]:
            text = _card(rows[path], self.settings) + "\nText: " + prompts.clip(
                rows[path]["body"], self.settings.body_words)
            self.deep[path] = self.client.judge(self.question, text)

    def _folders(self) -> list[tuple[float, int, str]]:
        """Expand folders best first; ``(folder score, listing position, entry path)``."""
        frontier: list[tuple[float, str]] = [(-1.0, "")]
        entries: list[tuple[float, int, str]] = []
        expanded = 0
        try:
            while frontier and expanded < self.settings.folders:
                negative, folder = heapq.heappop(frontier)
                listing = read_listing(self.read, folder)
                if listing is None:
                    continue
                entries += [(-negative, n, path) for n, (path, _, _)
                            in enumerate(listing.entries)]
                if len(listing.folders) == 1 and not listing.entries:
                    heapq.heappush(frontier, (negative, listing.folders[0][0]))
                    continue  # a lone subfolder: nothing to choose
                expanded += 1
                for path, count in listing.folders:
                    score = self.client.judge(self.question, self._describe(path, count),
                                              ask=prompts.FOLDER)
                    self.trace.append((path, score))
                    heapq.heappush(frontier, (-score, path))
        except BudgetExceededError:
            if not entries:
                raise
        return entries

    def _describe(self, folder: str, count: int) -> str:
        listing = read_listing(self.read, folder) or FolderListing(folder)
        names = [p.rpartition("/")[2] + "/" for p, _ in listing.folders]
        names += [title for _, title, _ in listing.entries]
        text = f"Folder: {folder}/ ({count} entries)"
        if listing.overview:
            text += f"\nAbout: {prompts.clip(listing.overview, 30)}"
        return text + "\nContains: " + prompts.clip("; ".join(names),
                                                     self.settings.folder_words)

    def _rows(self, paths: list[str]) -> dict[str, dict]:
        if self.allowed is not None:
            paths = [p for p in paths if p in self.allowed]
        out: dict[str, dict] = {}
        for start in range(0, len(paths), 500):
            chunk = paths[start:start + 500]
            for key, title, summary, tags, aliases, body in self.index.conn.execute(
                    "SELECT key, title, summary, tags, aliases, body FROM docs WHERE key IN "
                    f"({','.join('?' * len(chunk))})", chunk):
                out[key] = {"title": title, "summary": summary, "tags": tags,
                            "aliases": aliases, "body": body}
        return out

    def _overlap(self, row: dict) -> int:
        return len(self.words & set(_WORD.findall(f"{row['title']} {row['summary']}"
                                                  .casefold())))

    def ranked(self) -> list[tuple[str, float]]:
        scores = {p: (s + self.deep[p]) / 2 if p in self.deep else s
                  for p, s in self.cards.items()}
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def _card(row: dict, settings: WalkSettings) -> str:
    lines = [f"Title: {row['title']}"]
    if row["summary"]:
        lines.append(f"Summary: {prompts.clip(row['summary'], settings.card_words)}")
    for name in ("tags", "aliases"):
        if row[name].strip():
            lines.append(f"{name.capitalize()}: {' '.join(row[name].split())}")
    return "\n".join(lines)


def rerank(client: LLMClient, question: str, hits: list[Hit], index: SearchIndex, *,
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
                rows[hit.key]["body"], settings.body_words)
            try:
                judged[hit.key] = client.judge(question, text)
            except (BudgetExceededError, LLMCallError) as exc:
                stopped = str(exc)
                break
    order = sorted(range(len(head)), key=lambda i: (-judged.get(head[i].key, -1.0), i))
    ranked = [head[i] for i in order] + hits[top:]
    for rank, hit in enumerate(ranked, 1):
        hit.rank = rank
        if hit.key in judged:
            hit.legs["rerank"] = (rank, judged[hit.key])
    return ranked, stopped
