"""Reading and checking the embedding server's replies, client side.

Whatever listens on the socket is untrusted: an older or newer server, a crashed one, or
any program that bound the path. A reply is read under one deadline for the whole line
(a server that drips a byte at a time cannot hold a command past it) and a size bound, then
checked for the protocol's shape (:mod:`indexes.embedding.embed_server`); anything else raises
:class:`~indexes.embedding.embedders.EmbedderUnavailableError`, which makes the caller fall back to
the in-process model, never a crash.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import socket
import sys
import time
from array import array
from pathlib import Path
from typing import TYPE_CHECKING

from indexes.embedding.embedders import EmbedderUnavailableError

if TYPE_CHECKING:
    import numpy as np

MAX_REPLY_BYTES = 64 * 1024 * 1024
"""The longest reply line read (a 64-text batch of 4,096-wide vectors is ~1.4 MB)."""


def _clip(text: object, limit: int = 160) -> str:
    """``text`` on one line (whitespace runs folded, control characters escaped), at most
    ``limit`` characters."""
    flat = " ".join(str(text).split())
    flat = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in flat)
    return flat if len(flat) <= limit else flat[:limit] + "..."


def read_reply(sock: socket.socket, where: Path, seconds: float,
               limit: int = MAX_REPLY_BYTES) -> dict:
    """One newline-terminated JSON object read from ``sock`` within ``seconds`` in all
    and at most ``limit`` bytes; a reply that is not ``{"ok": true, ...}`` raises
    :class:`EmbedderUnavailableError` naming ``where`` (the socket) and the server's
    error, clipped to one line."""
    deadline = time.monotonic() + seconds
    chunks: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise EmbedderUnavailableError(
                f"embedding server {where} did not answer within {seconds:g}s")
        sock.settimeout(left)
        try:
            chunk = sock.recv(min(1 << 20, limit + 1 - size))
        except TimeoutError:
            continue  # the deadline check above says so
        except OSError as exc:
            raise EmbedderUnavailableError(f"embedding server {where}: {exc}") from exc
        if not chunk:
            raise EmbedderUnavailableError(f"embedding server {where} hung up")
        chunks.append(chunk)
        size += len(chunk)
        if b"\n" in chunk:
            break
        if size > limit:
            raise EmbedderUnavailableError(
                f"embedding server {where}: reply longer than {limit} bytes")
    line = b"".join(chunks).split(b"\n", 1)[0]
    try:
        reply = json.loads(line)
    except ValueError:
        reply = None
    if not isinstance(reply, dict):
        raise EmbedderUnavailableError(
            f"embedding server {where}: not a JSON object: {_clip(line[:200])}")
    if reply.get("ok") is not True:
        raise EmbedderUnavailableError(f"embedding server: {_clip(reply.get('error'))}")
    return reply


def reply_dim(reply: dict, where: Path) -> int:
    """The reply's ``dim``: a positive int, else :class:`EmbedderUnavailableError`."""
    dim = reply.get("dim")
    if type(dim) is not int or not 0 < dim <= 65536:
        raise EmbedderUnavailableError(
            f"embedding server {where}: bad vector width {_clip(repr(dim), 40)}")
    return dim


def _width(reply: dict, where: Path, dim: int | None) -> int:
    """:func:`reply_dim`, which must be ``dim`` when that is known."""
    width = reply_dim(reply, where)
    if dim is not None and width != dim:
        raise EmbedderUnavailableError(
            f"embedding server {where}: vectors {width} wide, expected {dim}")
    return width


def reply_vectors(reply: dict, rows: int, where: Path, dim: int | None = None) -> np.ndarray:
    """The reply's vectors as a ``(rows, dim)`` float32 array of finite values; ``dim``,
    when known, must match the reply's. Raises :class:`EmbedderUnavailableError` when the
    reply's width, count or values are not that."""
    import numpy as np

    width = _width(reply, where, dim)
    encoded = reply.get("vectors")
    try:
        if not isinstance(encoded, str):
            raise ValueError("no vectors")
        raw = np.frombuffer(base64.b64decode(encoded, validate=True), dtype="<f4")
        vectors = raw.reshape(rows, width).astype(np.float32)
    except (ValueError, binascii.Error) as exc:
        raise EmbedderUnavailableError(
            f"embedding server {where}: not {rows} vectors of width {width} ({_clip(exc)})"
        ) from None
    if not np.isfinite(vectors).all():
        raise EmbedderUnavailableError(f"embedding server {where}: vectors hold NaN or inf")
    return vectors


def reply_vector(reply: dict, where: Path, dim: int | None = None) -> tuple[bytes, int]:
    """The reply's single vector, without numpy: ``(float32 little-endian bytes, dim)``.
    Raises :class:`EmbedderUnavailableError` unless the reply holds exactly one vector of
    finite values, ``dim`` wide when ``dim`` is given."""
    width = _width(reply, where, dim)
    encoded = reply.get("vectors")
    try:
        data = base64.b64decode(encoded if isinstance(encoded, str) else "", validate=True)
    except (ValueError, binascii.Error):
        data = b""
    if len(data) != 4 * width:
        raise EmbedderUnavailableError(
            f"embedding server {where}: not 1 vector of width {width}")
    values = array("f", data)
    if sys.byteorder != "little":
        values.byteswap()
    if not all(map(math.isfinite, values)):
        raise EmbedderUnavailableError(f"embedding server {where}: vectors hold NaN or inf")
    return data, width


def reply_hits(reply: dict, where: Path, limit: int) -> list[tuple[str, float]] | None:
    """The ``hits`` of a ``nearest`` reply: ``[(key, cosine), ...]``, best first, at most
    ``limit``; ``None`` when the server's copy of the index was not the one asked about
    (``"hits": null``). Raises :class:`EmbedderUnavailableError` for anything else: not a
    list of ``[text, finite number in -1.01..1.01]`` pairs with distinct keys in
    non-increasing order."""
    hits = reply.get("hits")
    if hits is None:
        return None
    bad = EmbedderUnavailableError(f"embedding server {where}: malformed nearest reply")
    if not isinstance(hits, list) or len(hits) > limit:
        raise bad
    found: list[tuple[str, float]] = []
    for pair in hits:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                and type(pair[1]) in (int, float) and math.isfinite(pair[1])
                and -1.01 <= pair[1] <= 1.01):
            raise bad
        if found and pair[1] > found[-1][1]:
            raise bad
        found.append((pair[0], float(pair[1])))
    if len({key for key, _ in found}) != len(found):
        raise bad
    return found
