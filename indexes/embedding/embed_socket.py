"""Where the warm embedding server of *this* install listens.

One socket per (user, install, server code, model, runtime): two virtual environments,
two checkouts, two releases or an edited checkout on one machine never share a server, so a
command never gets vectors from (or waits on) another install's model. The folder is
``$XDG_RUNTIME_DIR/wiki/`` if that runtime dir is an absolute path and writable (the XDG base
directory specification; the only environment this module reads), else
``/tmp/wiki-<uid>/``; either is created with mode 0700 and refused unless this user owns it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import stat
import sys
from pathlib import Path

from indexes.embedding.embedders import EmbedderUnavailableError

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
SERVER_CODE = ("embedding/embed_server.py", "embedding/embed_service.py",
               "embedding/embed_nearest.py", "embedding/embedders.py",
               "embedding/embed_reply.py", "embedding/embed_socket.py",
               "embedding/query_vector.py", "sqlite/vectors.py",
               "embedding/onnx_embedder.py", "embedding/onnx_build.py",
               "embedding/packaged_model.py", "embedding/embed_spec.py",
               "embedding/embed_nearest_pg.py", "pg/vectors.py", "pg/filters.py",
               "retrieval/filters.py")
"""The modules (in ``indexes/``) whose code a running server and its clients share,
those that compute the vectors among them: a server still running the code from before
an edit of how a text is encoded (one text per run instead of padded batches, say) would
have answered with vectors the new code never gives; those that rank and filter a
PostgreSQL space for a client (``nearest_space``) with them."""


@functools.cache
def _code_version() -> str:
    """Size and modification time (ns) of each :data:`SERVER_CODE` file: it changes when
    a release is installed over this one (pip writes the files anew) or a checkout's
    server code is edited, so a server of the old code is never reused. A stat per file;
    asking the installed distribution's version instead imported ``importlib.metadata``
    (and ``email``, ``zipfile``) in every search, ~5-10 ms."""
    stamps = []
    for name in SERVER_CODE:
        try:
            status = (PACKAGE_ROOT / "indexes" / name).stat()
            stamps.append(f"{name}:{status.st_size}:{status.st_mtime_ns}")
        except OSError:
            stamps.append(f"{name}:missing")
    return ";".join(stamps)


def install_key(runtime: str = "auto", *, prefix: str | None = None,
                package_root: Path | str | None = None, version: str | None = None) -> str:
    """12 hex digits naming this install: a hash of the interpreter's ``sys.prefix``, the
    folder the code is imported from, the server code's version (``version``, default
    :func:`_code_version`) and the model ``runtime`` (each overridable, for tests and
    tools). Two installs differ in at least one."""
    parts = (prefix if prefix is not None else sys.prefix,
             str(package_root if package_root is not None else PACKAGE_ROOT),
             version if version is not None else _code_version(), runtime)
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


def socket_directory() -> Path:
    """The per-user folder of the sockets (see the module docstring). Raises
    :class:`EmbedderUnavailableError` if it is not a directory owned by this user."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    # relative: invalid (the XDG spec; it would put sockets in the working directory);
    # long: a socket path would overflow the ~107-byte limit
    if os.path.isabs(runtime) and len(runtime) < 55 \
            and os.access(runtime, os.W_OK | os.X_OK) and os.path.isdir(runtime):
        directory = Path(runtime) / "wiki"
    else:
        directory = Path("/tmp") / f"wiki-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        directory.mkdir(mode=0o700)
    st = os.lstat(directory)  # lstat: a symlink planted by someone else is refused
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise EmbedderUnavailableError(f"{directory} is not a directory owned by this user")
    if st.st_mode & 0o077:
        os.chmod(directory, 0o700)
    return directory


def default_socket_path(model_name: str, runtime: str = "auto", *,
                        install: str | None = None) -> Path:
    """``<socket_directory()>/embed-<model>-<install key>.sock``; ``install`` defaults to
    :func:`install_key` of ``runtime``. Raises :class:`EmbedderUnavailableError` as
    :func:`socket_directory` does."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", model_name)[:40]
    return socket_directory() / f"embed-{safe}-{install or install_key(runtime)}.sock"
