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


def ensure_vectors(index: IndexBackend, embedder: embedders.Embedder, *,
                   progress: Progress | None = None) -> int:
    """Embed every chunk of ``index`` that has no vector for ``embedder`` yet (nothing to
    do after the first time for unchanged entries). Stored vectors that cannot be read
    (a damaged row: truncated, another dimension) are dropped and embedded again, said in
    one ``warning:`` notice. More than :data:`indexes.sqlite.vectors.BULK` pending texts are
    embedded by the model in this process, not the shared server, so other commands'
    queries never wait behind this build. An index found complete before and unchanged since
    (its engine's ``check_mark``) is not scanned again. Returns how many were embedded."""
    mark = index.check_mark(vectors_fact(embedder.name, embedder.dim))
    if mark.held:
        return 0
    index.vectors.prepare_model(embedder.name, embedder.dim)
    damaged = index.vectors.drop_damaged(embedder.name, embedder.dim)
    if damaged:
        from wiki.store.storage import notify

        notify(f"warning: {damaged} stored vector{'s' if damaged != 1 else ''} of the search "
               f"index {'were' if damaged != 1 else 'was'} damaged; embedded again")
    bulk = embedder.in_process if isinstance(embedder, embed_server.AutoEmbedder) else None
    embedded = embed_pending(index.vectors, embedder, progress=progress, bulk=bulk,
                             checked=True)
    mark.record()  # only when nothing was written meanwhile
    return embedded


def refresh_vectors(wiki, *, progress: Progress | None = None) -> tuple[int, str]:
    """Embed what the wiki's derived index lacks. Returns ``(chunks embedded, note)``; the
    note names the model, or says why vectors are off or unavailable. Raises
    :class:`wiki.errors.StorageError` when the disk refuses the vectors."""
    from wiki.store.derived import open_synced

    name = model_name()
    if name is None:
        return 0, "vectors turned off (WIKI_EMBED_MODEL=none)"
    from wiki.store.storage import writing

    index = open_synced(wiki, write=True).index
    try:
        embedder = get_embedder(name)
        with writing(wiki.database_path()):
            embedded = ensure_vectors(index, embedder, progress=progress)
        return embedded, f"model {embedder.name}"
    except embedders.EmbedderUnavailableError as exc:
        return 0, f"vectors unavailable: {exc}"
    finally:
        index.close()
