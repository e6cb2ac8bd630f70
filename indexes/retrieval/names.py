"""The alias/title leg: exact, case- and accent-insensitive match of the query, or of a
span of its words, against entry titles and aliases (docs/architecture.md, "Retrieval", leg 1).

Names are folded (NFKC, case folded, accents removed, every run of non-letters and
non-digits a single space), so "Per-Diem", "per diem" and "PER DIÉM" are one name. A hit's
score is the share of the query's words covered by the matching span (1.0: the whole query
is a title or alias); longer spans rank first, titles before aliases.
"""

from __future__ import annotations

import json
import re
import sqlite3
import unicodedata
from collections.abc import Iterable

from indexes.documents import Hit, in_order
from indexes.retrieval.query import STOPWORDS
from indexes.retrieval.text import code_tokens

MAX_SPAN_WORDS = 8
_SEPARATORS = re.compile(r"[\W_]+")


def fold_name(text: str) -> str:
    """The comparable form of a title, alias or query span. Code-like names keep what
    tells them apart (``C++`` folds to ``c cplusplus``, ``C#`` to ``c csharp``;
    :func:`indexes.retrieval.text.code_tokens`), so they are not all the name ``c``."""
    text = code_tokens(unicodedata.normalize("NFKC", text))
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return _SEPARATORS.sub(" ", plain).strip()


def spans(query: str, max_words: int = MAX_SPAN_WORDS) -> dict[str, int]:
    """``folded span -> number of words`` for every contiguous run of up to ``max_words``
    words of ``query``, except runs made only of stopwords."""
    words = fold_name(query).split()
    out: dict[str, int] = {}
    for size in range(min(len(words), max_words), 0, -1):
        for start in range(len(words) - size + 1):
            run = words[start:start + size]
            if all(w in STOPWORDS for w in run):
                continue
            out.setdefault(" ".join(run), size)
    return out


def replace_names(conn: sqlite3.Connection, key: str, title: str,
                  aliases: Iterable[str]) -> None:
    """Store the folded title and aliases of document ``key`` (replacing earlier ones)."""
    conn.execute("DELETE FROM names WHERE key = ?", (key,))
    rows = {(fold_name(title), "title")}
    rows |= {(fold_name(a), "alias") for a in aliases}
    conn.executemany("INSERT INTO names(key, name, kind) VALUES (?, ?, ?)",
                     [(key, name, kind) for name, kind in sorted(rows) if name])


def search_names(conn: sqlite3.Connection, query: str, where: str, params: list, *,
                 limit: int) -> list[Hit]:
    """Documents whose title or an alias equals the query or one of its spans."""
    candidates = spans(query)
    if not candidates:
        return []
    total = max(len(fold_name(query).split()), 1)
    rows = conn.execute(
        "SELECT d.key, d.doc_id, d.title, d.summary, d.category, d.status, n.name, n.kind "
        "FROM names n CROSS JOIN docs d ON d.key = n.key "
        f"WHERE n.name IN (SELECT value FROM json_each(?)) AND {where}",
        [json.dumps(list(candidates), ensure_ascii=False), *params]).fetchall()
    best: dict[str, tuple[float, int, Hit]] = {}
    for key, doc_id, title, summary, category, status, name, kind in rows:
        score = candidates[name] / total
        order = 0 if kind == "title" else 1
        hit = Hit(key, doc_id, title, summary, category, status, score)
        if key not in best or (score, -order) > (best[key][0], -best[key][1]):
            best[key] = (score, order, hit)
    ranked = sorted(best.values(), key=lambda item: (-item[0], item[1], item[2].key))
    return in_order([hit for _, _, hit in ranked[:limit]])
