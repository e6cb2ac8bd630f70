"""One embedding cache shared by every evaluation index: ``evals/.cache/embeddings.sqlite``.

Vectors are keyed by ``(sha256 of the chunk text, model)`` (as in :mod:`indexes.sqlite.vectors`),
so they stay valid whatever code built the index that holds them. A rebuilt index (the
source hash changed, another chunk size) is seeded from this store before embedding, and
what it embeds is saved back: only chunk texts never seen before cost model time.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time

from evals.datasets import CACHE_DIR

STORE = CACHE_DIR / "embeddings.sqlite"
SCHEMA = ("CREATE TABLE IF NOT EXISTS embeddings (text_hash TEXT NOT NULL, model TEXT NOT NULL,"
          " dim INTEGER NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (text_hash, model))")


def _store() -> None:
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(STORE, timeout=60) as conn:
        conn.execute(SCHEMA)


def embedder(name: str | None = None):
    """The in-process embedder, loaded once: ``name``, else ``$EVAL_EMBED_MODEL`` (to
    evaluate another registered model, e.g. ``all-MiniLM-L6-v2-int8``), else the model
    ``wiki`` itself uses here (``$WIKI_EMBED_MODEL``, else the installed default), so the
    chunk vectors an eval stores are the ones its ``wiki ask`` calls read."""
    from indexes.embedding import embedders
    from indexes.embedding.embed_spec import installed_default

    return embedders.load(name or os.environ.get("EVAL_EMBED_MODEL")
                          or os.environ.get("WIKI_EMBED_MODEL") or installed_default())


def embed_index(index, model=None, *, log=None) -> int:
    """Seed ``index`` (a :class:`indexes.sqlite.engine.SearchIndex`) from the shared store, embed
    the chunks still lacking a vector, save them back. Returns how many were embedded."""
    from indexes.sqlite.vectors import VERSION_KEY, embed_pending

    model = model or embedder()
    _store()
    index.vectors.prepare_model(model.name, model.dim)
    conn = index.conn
    conn.execute("ATTACH DATABASE ? AS shared", (str(STORE),))
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT OR IGNORE INTO main.embeddings SELECT e.* FROM shared.embeddings e "
                     "WHERE e.model = ? AND e.text_hash IN (SELECT text_hash FROM main.chunks "
                     "UNION ALL SELECT text_hash FROM main.sentences)",
                     (model.name,))
        index.set_meta(VERSION_KEY, str(int(index.get_meta(VERSION_KEY) or 0) + 1))
        conn.execute("COMMIT")
        todo = len(index.vectors.pending(model.name))
        start = time.perf_counter()

        def progress(done: int, total: int) -> None:
            if log and (done % 1024 < 64 or done == total):
                rate = done / max(time.perf_counter() - start, 1e-9)
                log(f"  embedded {done}/{total} chunks ({rate:.0f}/s)")

        if todo and log:
            log(f"embedding {todo} chunks with {model.name}")
        done = embed_pending(index.vectors, model, progress=progress)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT OR IGNORE INTO shared.embeddings SELECT * FROM main.embeddings "
                     "WHERE model = ?", (model.name,))
        conn.execute("COMMIT")
    finally:
        conn.execute("DETACH DATABASE shared")
    return done


def seed_wiki(wiki, *, log=None) -> int:
    """:func:`embed_index` on ``wiki``'s derived index (synced first), so that no ``ask``
    of an eval embeds chunks at query time (answer sentences come from the store when it
    holds them; the others are embedded by the first answer that reads them, as in the
    product)."""
    from wiki.store.derived import open_synced

    index = open_synced(wiki).index
    try:
        return embed_index(index, log=log)
    finally:
        index.close()


def stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def rechunked(index, words: int):
    """A copy of ``index`` (same documents and metadata) whose vector chunks are cut at
    ``words`` words, in ``evals/.cache/`` (rebuilt each time; vectors come from the store)."""
    import shutil

    from indexes.sqlite.engine import SearchIndex
    from indexes.sqlite.vectors import OVERLAP_WORDS, chunk_texts

    index.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    path = CACHE_DIR / f"rechunked-{index.path.stem}-w{words}.sqlite"
    for old in CACHE_DIR.glob(path.name + "*"):
        old.unlink()
    shutil.copyfile(index.path, path)
    index.close()
    copy = SearchIndex(path, chunk_words=words)
    rows = copy.conn.execute("SELECT key, title, summary, body FROM docs").fetchall()
    with copy.transaction():
        for key, title, summary, body in rows:
            copy.vectors.replace_chunks(key, chunk_texts(
                title, summary, body, words=words, overlap=min(OVERLAP_WORDS, words // 4)))
    return copy
