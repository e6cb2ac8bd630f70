"""A query's vector as the embedding server sent it, kept as bytes until numpy is needed.

``wiki search`` with the vector leg served by this install's embedding server never
imports numpy (50-80 ms of a ~0.25 s process): the server encodes the query, and the
same server ranks the index file's chunk vectors for it (``nearest``,
:mod:`indexes.embedding.embed_server`). Only a caller that computes with the vector itself (the
answer picker, routing, a search the server could not answer) turns it into an array,
through ``numpy.asarray(vector)`` (:meth:`QueryVector.__array__`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, eq=False)
class QueryVector:
    """One unit vector: ``data`` holds ``dim`` float32 little-endian numbers (checked
    finite by whoever made it, :func:`indexes.embedding.embed_reply.reply_vector`). ``searcher``:
    the :class:`~indexes.embedding.embed_server.RemoteEmbedder` that encoded it, which can also
    rank an index file's vectors for it (``searcher.nearest``); ``None`` when none can."""

    data: bytes
    dim: int
    searcher: Any = None

    @property
    def shape(self) -> tuple[int]:
        """``(dim,)``, as the numpy row it stands for."""
        return (self.dim,)

    def __len__(self) -> int:
        return self.dim

    def __array__(self, dtype=None, copy=None):  # noqa: ANN001 (numpy's protocol)
        """A fresh ``(dim,)`` float32 numpy array (or ``dtype``); numpy calls this for
        ``np.asarray(vector)`` and for arithmetic with arrays."""
        import numpy as np

        return np.frombuffer(self.data, dtype="<f4").astype(dtype or np.float32)
