"""LoCoMo (locomo10): session-level retrieval within each conversation, and abstention on
the adversarial questions (category 5).

Two ways to make documents, both in one :class:`indexes.sqlite.engine.SearchIndex` per unit with
``category`` = the conversation id (every query is filtered to its own conversation):

* ``session``: one document per session, its ``Speaker: utterance`` lines (and the date)
  as the body; the vector leg scores a session by its best chunk;
* ``turn``: one document per dialog turn (``Speaker: text`` plus the image caption); the
  ranked turns are mapped to their sessions, each session kept at its first position.

The conversations are split in two halves for tuning: :data:`TUNE` (tune here) and the
rest (held out, reported separately).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from evals.datasets import CACHE_DIR, build_cached_index, read_jsonl, source_hash

DETAILS = CACHE_DIR / "locomo-questions.json"
"""Per-question rows of the last LoCoMo run (top sessions, gap, abstention features)."""

LOCOMO = "locomo"
TUNE = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43")
"""The first five conversations (file order): the tuning half."""
ADVERSARIAL = 5
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
              5: "adversarial"}
LIMITS = {"session": 40, "turn": 300}
"""Documents retrieved per question: every session of a conversation (at most 32), or
enough turns to reach well over 10 distinct sessions."""


@dataclass
class LocomoQuestion:
    id: str
    conversation: str
    question: str
    category: int
    gold: set[str]

    @property
    def half(self) -> str:
        return "tune" if self.conversation in TUNE else "held-out"


def questions(data: Path) -> list[LocomoQuestion]:
    """Every question with its gold sessions (``conv-26:S1``) from qrels-sessions.tsv."""
    gold: dict[str, set[str]] = defaultdict(set)
    with (data / LOCOMO / "qrels-sessions.tsv").open(encoding="utf-8") as handle:
        next(handle, None)
        for line in handle:
            query, session, score = line.rstrip("\n").split("\t")[:3]
            if int(score) > 0:
                gold[query].add(session)
    return [LocomoQuestion(r["id"], r["conversation_id"], r["question"], int(r["category"]),
                           gold.get(r["id"], set()))
            for r in read_jsonl(data / LOCOMO / "questions.jsonl")]


def documents(data: Path, unit: str):
    """``(documents, units_of)``: the documents of ``unit`` and ``key -> [session id]``."""
    from indexes.documents import Document

    docs, units_of = [], {}
    if unit == "session":
        for r in read_jsonl(data / LOCOMO / "sessions.jsonl"):
            docs.append(Document(key=r["id"], doc_id=r["id"], title="",
                                 body=f"{r['date_time']}\n{r['text']}",
                                 category=r["conversation_id"]))
            units_of[r["id"]] = [r["id"]]
    else:
        for r in read_jsonl(data / LOCOMO / "turns.jsonl"):
            text = f"{r['speaker']}: {r['text']}"
            if r.get("image_caption"):
                text += f" [shares image: {r['image_caption']}]"
            session = f"{r['conversation_id']}:S{r['session']}"
            docs.append(Document(key=r["id"], doc_id=r["id"], title="", body=text,
                                 category=r["conversation_id"]))
            units_of[r["id"]] = [session]
    return docs, units_of


def locomo_index(data: Path, unit: str, *, chunk_words: int | None = None, log=None):
    """The cached index of ``unit`` documents (vectors embedded through the shared cache)."""
    from evals.embedcache import embed_index
    from indexes.sqlite.engine import SearchIndex
    from indexes.sqlite.vectors import CHUNK_WORDS

    chunk_words = chunk_words or CHUNK_WORDS
    stem = f"locomo-{unit}-w{chunk_words}-"
    path = CACHE_DIR / f"{stem}{source_hash('indexes')}.sqlite"
    docs, units_of = documents(data, unit)
    if path.exists():
        return SearchIndex(path, chunk_words=chunk_words), units_of
    index = build_cached_index(
        path, list(CACHE_DIR.glob(f"{stem}*.sqlite*")), docs, chunk_words=chunk_words,
        log=log, message=f"indexing LoCoMo ({unit}s, chunks of {chunk_words} words) into {path}",
        after=lambda built: embed_index(built, log=log))
    return index, units_of


def run_locomo(data: Path, methods: list[str], out: Path, *, fusion, units: list[str],
               chunk_words: int | None = None, gap_threshold: float = 0.4) -> str:
    """Evaluate ``methods`` on LoCoMo for each document ``unit``; writes ``locomo.md/json``."""
    from evals.abstain import features
    from evals.methods import METHODS, Target
    from evals.metrics import aggregate, dedupe_units, query_metrics
    from evals.report import header, md_table, now, project_commit, write
    from evals.run import METRIC_COLUMNS, log, summary_table, timed
    from indexes.sqlite.engine import Filters

    qs = questions(data)
    scored = [q for q in qs if q.category != ADVERSARIAL and q.gold]
    adversarial = [q for q in qs if q.category == ADVERSARIAL]
    facts = {"date": now(), "project commit": project_commit(),
             "sizes": f"10 conversations, 272 sessions, 5,882 turns; {len(scored)} "
                      f"questions with evidence in categories 1-4, {len(adversarial)} "
                      "adversarial",
             "parameters": f"fusion k={fusion.k}, window={fusion.window}, "
                           f"weights={dict(fusion.weights)}, chunk_words={chunk_words}; "
                           f"retrieval limited to the question's conversation; "
                           f"gap = coverage < {gap_threshold}",
             "split": f"tune = {', '.join(TUNE)}; held-out = the other five"}
    text = [header("LoCoMo: session retrieval within a conversation", facts)]
    results: dict = {}
    details: dict = {}
    for unit in units:
        index, units_of = locomo_index(data, unit, chunk_words=chunk_words, log=log)
        target = Target("locomo", index, fusion=fusion, gap_threshold=gap_threshold)
        summaries: dict[str, dict] = {}
        for method in methods:
            retrieve = METHODS[method](target)
            groups: dict[str, list] = defaultdict(list)
            latencies, gap_of, rows_out = [], {}, []
            for q in qs:
                result, ms = timed(retrieve, q.question, LIMITS[unit],
                                   filters=Filters(statuses=None, category=q.conversation))
                latencies.append(ms)
                sessions = dedupe_units(result.keys, units_of)
                gap_of[q.id] = result.gap
                row = {"id": q.id, "category": q.category, "half": q.half,
                       "gap": result.gap, "sessions": sessions[:10]}
                if result.legs is not None:
                    row["features"] = features(result)
                rows_out.append(row)
                if q in scored:
                    metrics = query_metrics(sessions, q.gold)
                    for group in ("all", q.half, CATEGORIES[q.category]):
                        groups[group].append(metrics)
            for group in ("all", "tune", "held-out", *(CATEGORIES[c] for c in (4, 1, 2, 3))):
                summary = aggregate(groups[group], latencies if group == "all" else ())
                if group == "all" and gap_of[qs[0].id] is not None:
                    summary["adv_gap_rate"] = sum(gap_of[q.id] for q in adversarial) / len(
                        adversarial)
                    summary["false_gap_rate"] = sum(gap_of[q.id] for q in scored) / len(scored)
                summaries[f"{method} / {group}"] = summary
            details[f"{unit}/{method}"] = rows_out
        index.close()
        results[unit] = summaries
        text += ["", f"## Documents = {unit}s ({LIMITS[unit]} retrieved per question)", "",
                 summary_table(summaries, [*METRIC_COLUMNS, "adv_gap_rate",
                                           "false_gap_rate"])]
    text += ["", "Rows: method / group (all = categories 1-4, every conversation; tune and "
                 "held-out halves; then by category). recall@5 is the mean share of a "
                 "question's evidence sessions in the top 5. adv_gap_rate: adversarial "
                 "questions given an evidence gap (good); false_gap_rate: scored questions "
                 "given one (bad).", "",
             md_table(["category", "questions"],
                      [[CATEGORIES[c], sum(1 for q in scored if q.category == c)]
                       for c in (4, 1, 2, 3)])]
    markdown = "\n".join(text)
    write(out, "locomo", markdown, {"dataset": "locomo", **facts, "results": results})
    DETAILS.write_text(json.dumps(details), encoding="utf-8")  # 10 MB: cache, not results
    return markdown
