"""Base64 runs decoded for the encoded-instruction rule (``I008`` in
:mod:`wiki.safety.patterns`): which text a run of the base64 alphabet can hide.

A run is read in either alphabet (standard ``+/`` or URL-safe ``-_``), padded or not, at
each of its first four offsets (a prefix glued to the run shifts its groups), with the
whole lines of base64 that follow it when it ends its line (wrapped output), and through
:data:`DEPTH` layers (text encoded twice). What counts as an instruction is the caller's:
this module knows base64, not the rules.
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Callable, Iterator

MIN_CHARS = 14
"""The shortest base64 run that can hold an instruction: the instruction rules I001, I002
and I004 match no text shorter than 10 characters (a two-word role change), which base64
writes in 14 characters without padding. ``tests/test_review_generated_and_encoded.py``
recomputes it from the rows' regular expressions."""
DEPTH = 2
"""How many layers of base64 :func:`hides` peels (text encoded twice)."""
WRAPPED_MAX_CHARS = 16_384
"""How much of a wrapped block (whole lines of base64 after a run) is joined to it."""
_B64 = "[A-Za-z0-9+/_-]"
_B64_BYTES = re.compile(rb"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{%d,}" % MIN_CHARS)
_WRAPPED = re.compile(r"(?:[ \t]*\r?\n[ \t]*" + _B64 + r"+={0,2}(?=[ \t]*(?:\r?\n|\Z)))+")
_NOT_B64 = re.compile(r"[\s=]")
_TO_STANDARD = bytes.maketrans(b"-_", b"+/")


def joined_run(text: str, match: re.Match[str]) -> bytes:
    """The run ``match`` found in ``text`` as ASCII bytes, with the whole lines of base64
    that follow it when it ends its line (at most :data:`WRAPPED_MAX_CHARS`), padding and
    whitespace removed."""
    run = match.group(0)
    wrapped = _WRAPPED.match(text, match.end(), match.end() + WRAPPED_MAX_CHARS)
    if wrapped:
        run += wrapped.group(0)
    return _NOT_B64.sub("", run).encode("ascii")


def hides(run: bytes, hints: re.Pattern[bytes], matches: Callable[[str], bool]) -> bool:
    """Whether base64 ``run`` decodes, within :data:`DEPTH` layers, to text ``matches``
    accepts. ``hints`` is a cheap pre-test over the lower-cased decoded bytes: a decoding
    it does not find is not passed to ``matches``. Memoised per run (prose repeats its long
    words, and most runs are words); ``hints`` and ``matches`` must be the same objects
    from call to call for the memo to work."""
    return _hides(run, DEPTH, hints, matches)


@functools.lru_cache(maxsize=8192)
def _hides(run: bytes, depth: int, hints: re.Pattern[bytes],
           matches: Callable[[str], bool]) -> bool:
    for data in decodings(run):
        if hints.search(data.lower()) and matches(data.decode("utf-8", "replace")):
            return True
        if depth > 1 and any(_hides(inner.group(0), depth - 1, hints, matches)
                             for inner in _B64_BYTES.finditer(data)):
            return True
    return False


def decodings(run: bytes) -> Iterator[bytes]:
    """The bytes ``run`` decodes to from each of its first four characters (a garbled
    start leaves the rest readable); offsets that are not valid base64 are skipped."""
    run = run.translate(_TO_STANDARD)
    for offset in range(4):
        piece = run[offset:]
        piece = piece[:len(piece) - 1] if len(piece) % 4 == 1 else piece
        if len(piece) < MIN_CHARS - 3:
            return
        try:
            yield base64.b64decode(piece + b"=" * (-len(piece) % 4), validate=True)
        except ValueError:  # binascii.Error
            continue
