"""Which embedding model this user runs, and keeping an index's vectors complete.

The model is a per-user setting (docs/cli.md): ``$WIKI_EMBED_MODEL``, default
``all-MiniLM-L6-v2``; ``none`` turns the vector leg off. The model is reached through
``indexes.embed_server`` when it is available (one warm process serves every ``wiki``
command), else loaded in this process.
"""

from __future__ import annotations

import os

from indexes import embedders
from indexes.store import SearchIndex
from indexes.vectors import Progress, embed_pending


def model_name() -> str | None:
    """The configured embedding model, or ``None`` when vectors are turned off."""
    name = os.environ.get("WIKI_EMBED_MODEL", embedders.DEFAULT_MODEL).strip()
    return None if name.lower() in embedders.DISABLED else name


def get_embedder(name: str) -> embedders.Embedder:
    """The embedder ``name``: served by the warm embedding server when that module is
    present, else loaded in-process. Raises ``EmbedderUnavailableError``."""
    try:
        from indexes import embed_server
    except ImportError:  # pragma: no cover - the server module ships with the package
        return embedders.load(name)
    return embed_server.get_embedder(name)


def ensure_vectors(index: SearchIndex, embedder: embedders.Embedder, *,
                   progress: Progress | None = None) -> int:
    """Embed every chunk of ``index`` that has no vector for ``embedder`` yet (nothing to
    do after the first time for unchanged entries). Stored vectors that cannot be read
    (a damaged row: truncated, another dimension) are dropped and embedded again, said in
    one ``warning:`` notice. Returns how many were embedded."""
    index.vectors.prepare_model(embedder.name, embedder.dim)
    damaged = index.vectors.drop_damaged(embedder.name, embedder.dim)
    if damaged:
        from wiki.store.storage import notify

        notify(f"warning: {damaged} stored vector{'s' if damaged != 1 else ''} of the search "
               f"index {'were' if damaged != 1 else 'was'} damaged; embedded again")
    return embed_pending(index.vectors, embedder, progress=progress)


def refresh_vectors(wiki, *, progress: Progress | None = None) -> tuple[int, str]:
    """Embed what the wiki's derived index lacks. Returns ``(chunks embedded, note)``; the
    note names the model, or says why vectors are off or unavailable. Raises
    :class:`wiki.errors.StorageError` when the disk refuses the vectors."""
    from wiki.store.derived import open_synced

    name = model_name()
    if name is None:
        return 0, "vectors turned off (WIKI_EMBED_MODEL=none)"
    from wiki.store.storage import writing

    index, _ = open_synced(wiki, write=True)
    try:
        embedder = get_embedder(name)
        with writing(wiki.database_path()):
            embedded = ensure_vectors(index, embedder, progress=progress)
        return embedded, f"model {embedder.name}"
    except embedders.EmbedderUnavailableError as exc:
        return 0, f"vectors unavailable: {exc}"
    finally:
        index.close()
