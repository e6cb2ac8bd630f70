"""Which embedding model this user runs, and keeping an index's vectors complete.

The model is a per-user setting (docs/cli.md), read once into an
:class:`~indexes.embedding.embed_spec.EmbedderSpec` by :mod:`wiki.answering.embed_settings`
(``$WIKI_EMBED_MODEL``, default ``all-MiniLM-L6-v2``; ``none`` turns the vector leg off).
The model is reached through this install's warm ``indexes.embedding.embed_server`` (one process
serves every ``wiki`` command's queries), else loaded in this process; a bulk build
embeds in its own process.
"""

from __future__ import annotations

from indexes.backend import IndexBackend
from indexes.embedding import embed_server, embedders
from indexes.sqlite.checkmark import vectors_fact
from indexes.sqlite.vectors import Progress, embed_pending
from wiki.answering.embed_settings import EmbedderSpec, current_spec


def model_name(spec: EmbedderSpec | None = None) -> str | None:
    """The configured embedding model (``spec``, default :func:`current_spec`), or
    ``None`` when vectors are turned off."""
    return (spec or current_spec()).model


def get_embedder(name: str, spec: EmbedderSpec | None = None) -> embedders.Embedder:
    """The embedder ``name`` on the runtime and server mode of ``spec`` (default
    :func:`current_spec`): served by this install's warm embedding server, else loaded
    in-process. Raises ``EmbedderUnavailableError`` (an unknown name, a bad runtime or
    server mode, a model that cannot load)."""
    return embed_server.get_embedder(name, spec or current_spec())


class KeptQueryVectors:
    """The vectors of the last :attr:`SIZE` queries each embedder (the object: a model
    loaded once per process) encoded, by query text: an agent searches and then asks the
    same words, a team asks the same question again, and each encoding is ~5 ms of CPU
    (MiniLM, ONNX). Thread-safe; a kept vector is read-only (``writeable`` off); an
    embedder's vectors go with it."""

    SIZE = 1024
    """Queries kept per embedder (1.5 MB at 384 dimensions)."""

    def __init__(self) -> None:
        import threading
        import weakref

        self._kept: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self, embedder, query: str):
        """The kept ``(dim,)`` float32 vector of ``query`` by ``embedder``, or ``None``."""
        with self._lock:
            kept = self._kept.get(embedder)
            found = kept.get(query) if kept is not None else None
            if found is not None:
                kept.move_to_end(query)
            return found

    def keep(self, embedder, query: str, vector):
        """Keep ``vector`` (made read-only) and return it."""
        from collections import OrderedDict

        vector.flags.writeable = False
        with self._lock:
            kept = self._kept.setdefault(embedder, OrderedDict())
            kept[query] = vector
            while len(kept) > self.SIZE:
                kept.popitem(last=False)
        return vector


QUERY_VECTORS = KeptQueryVectors()


TOP_UP = 16
"""A read embeds at most this many pending chunk texts itself (the entries landed since the
last build: tens of milliseconds); a larger backlog is a build, which ``wiki index`` (or
approve, or sync) runs with a progress bar, and the read answers from the lexical legs
meanwhile (:func:`top_up_vectors`; docs/decisions.md, "Embedding costs what it must")."""


def _prepared(index: IndexBackend, embedder: embedders.Embedder) -> None:
    """Record ``embedder``'s model on ``index`` and drop the vectors that cannot be read
    (a damaged row), said in one ``warning:`` notice."""
    index.vectors.prepare_model(embedder.name, embedder.dim)
    damaged = index.vectors.drop_damaged(embedder.name, embedder.dim)
    if damaged:
        from wiki.store.notices import notify

        notify(f"warning: {damaged} stored vector{'s' if damaged != 1 else ''} of the search "
               f"index {'were' if damaged != 1 else 'was'} damaged; embedded again")


def ensure_vectors(index: IndexBackend, embedder: embedders.Embedder, *,
                   progress: Progress | None = None) -> int:
    """Embed every chunk of ``index`` that has no vector for ``embedder`` yet (nothing to
    do after the first time for unchanged entries), shortest texts first in batches of
    about one length. Stored vectors that cannot be read (a damaged row: truncated,
    another dimension) are dropped and embedded again, said in one ``warning:`` notice.
    More than :data:`indexes.sqlite.vectors.BULK` pending texts are embedded by the model
    in this process, not the shared server, so other commands' queries never wait behind
    this build. Answer sentences are not embedded here: an answer embeds those it reads
    and keeps them (:func:`keep_sentence_vectors`). An index found complete before and
    unchanged since (its engine's ``check_mark``) is not scanned again. Returns how many
    were embedded."""
    mark = index.check_mark(vectors_fact(embedder.name, embedder.dim))
    if mark.held:
        return 0
    _prepared(index, embedder)
    bulk = embedder.in_process if isinstance(embedder, embed_server.AutoEmbedder) else None
    embedded = embed_pending(index.vectors, embedder, progress=progress, bulk=bulk,
                             checked=True)
    mark.record()  # only when nothing was written meanwhile
    return embedded


def top_up_vectors(index: IndexBackend, embedder: embedders.Embedder, *,
                   limit: int | None = TOP_UP, progress: Progress | None = None) -> int:
    """What a read does about missing vectors: embed the pending chunks of ``index`` when
    there are at most ``limit`` of them (``None``: however many), else leave them for
    ``wiki index``. Returns how many chunk texts are still pending (0: the vector leg can
    run on complete vectors). Never starts the embedding model when more than ``limit``
    are pending."""
    mark = index.check_mark(vectors_fact(embedder.name, embedder.dim))
    if mark.held:
        return 0
    _prepared(index, embedder)
    if limit is not None and (pending := index.vectors.pending_count(embedder.name)) > limit:
        return pending
    embed_pending(index.vectors, embedder, progress=progress, checked=True)
    mark.record()
    return 0


def pending_note(pending: int) -> str:
    """Why the vector leg did not run while ``pending`` chunk texts wait for a build:
    ``vectors pending: 40 chunks; run `wiki index```."""
    return f"vectors pending: {pending} chunk{'s' if pending != 1 else ''}; run `wiki index`"


class RecordingEncoder:
    """``encode(texts)`` of an embedder that remembers what it encoded (``texts``,
    ``vectors``), so an answer can keep the sentence vectors it had to compute."""

    def __init__(self, encode) -> None:
        self._encode = encode
        self.texts: list[str] = []
        self.vectors: list = []

    def __call__(self, texts):
        """``(len(texts), dim)`` float32 unit rows, as the wrapped ``encode``."""
        vectors = self._encode(texts)
        self.texts.extend(texts)
        self.vectors.extend(vectors)
        return vectors


def keep_sentence_vectors(wiki, model: str, texts, vectors) -> int:
    """Store the vectors of answer sentences an answer embedded (``texts`` as embedded,
    :func:`wiki.store.derived.embedded`; ``vectors``: one ``(dim,)`` float32 row each) in
    the wiki's derived index, keyed by text hash and ``model``, so the next answer that
    reads these entries finds them
    (:meth:`indexes.sqlite.vectors.VectorStore.sentence_vectors`). A cache: an index that
    cannot be written (read-only git dir, busy, damaged, unreachable) keeps nothing and
    nothing fails. Returns how many were given to the index."""
    import numpy as np

    from indexes.errors import IndexesError
    from indexes.sqlite.faults import DatabaseError
    from indexes.sqlite.vectors import text_hash
    from wiki.errors import WikiError
    from wiki.store.derived import open_index

    if not texts:
        return 0
    try:
        index = open_index(wiki, write=True)
    except (WikiError, IndexesError, DatabaseError, OSError):
        return 0
    try:
        with index.transaction():
            index.vectors.add_sentence_vectors(model, [text_hash(t) for t in texts],
                                               np.asarray(vectors, dtype=np.float32))
        return len(texts)
    except Exception as exc:  # a cache: any storage fault keeps nothing, a bug still raises
        from indexes.backend import as_index_error

        if not isinstance(exc, (WikiError, IndexesError, DatabaseError, OSError)) and \
                as_index_error(exc) is None:
            raise
        return 0
    finally:
        index.close()


def refresh_vectors(wiki, *, progress: Progress | None = None) -> tuple[int, str]:
    """Embed the chunks the wiki's derived index lacks (:func:`ensure_vectors`), then start
    the shared embedding server in the background when it serves this model
    (:func:`indexes.embedding.embed_server.warm`), so the next search finds the model
    loaded. Returns ``(chunks embedded, note)``; the note names the model, or says why
    vectors are off or unavailable. Raises :class:`wiki.errors.StorageError` when the
    disk refuses the vectors."""
    from wiki.store.derived import open_synced

    name = model_name()
    if name is None:
        return 0, "vectors turned off (WIKI_EMBED_MODEL=none)"
    from wiki.store.disk_faults import writing

    index = open_synced(wiki, write=True).index
    try:
        embedder = get_embedder(name)
        with writing(wiki.database_path()):
            embedded = ensure_vectors(index, embedder, progress=progress)
        embed_server.warm(name, current_spec())  # the next search finds the model loaded
        return embedded, f"model {embedder.name}"
    except embedders.EmbedderUnavailableError as exc:
        return 0, f"vectors unavailable: {exc}"
    finally:
        index.close()
