"""Stored text made safe to show: control characters inert, secrets masked (docs/security.md,
"What reaches the terminal").

Entries, titles, proposal subjects and author names are written by other people and agents.
Everything the CLI shows passes through :func:`shown` (terminal) or :func:`json_text` (JSON),
applied centrally by :mod:`wiki_cli.render` and :func:`wiki_cli.errors.report`, so a command
cannot forget it:

* **Control characters** — C0 except tab and newline (a lone carriage return included: it
  can overwrite a line), DEL, C1 (U+0080-U+009F: U+009B is a one-character CSI on some
  terminals) and the bidi embeddings, overrides and isolates (U+202A-U+202E,
  U+2066-U+2069) — are shown as the escape text ``\\xNN`` / ``\\uNNNN`` (ESC is ``\\x1b``),
  so ``ESC[2J`` prints as the six characters ``\\x1b[2J`` and clears nothing. JSON keeps
  the exact value, written as a ``\\uNNNN`` escape (``json.dumps`` already escapes C0; C1,
  DEL and bidi characters are escaped here too), so a JSON document piped to a terminal is
  inert as well.
* **Secrets** (:mod:`wiki.safety.scan`'s table: tokens, keys, URL passwords ...) that landed
  despite the write-time screen are replaced by ``[REDACTED:<kind>]`` in terminal and JSON
  output alike; :data:`tally` counts them so the command can say so once on stderr.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""What a terminal must never receive raw from stored text (tab and newline excepted); a
lone surrogate is a byte of a git name that is not UTF-8, which no stream can encode."""

JSON_UNSAFE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""What ``json.dumps(..., ensure_ascii=False)`` leaves raw that :data:`CONTROLS` names
(a lone surrogate becomes ``\\udcff``, which decodes back to the name git holds)."""


class Tally:
    """How many secrets were masked in this command's output (reset per invocation)."""

    def __init__(self) -> None:
        self.secrets = 0

    def reset(self) -> None:
        """Start counting again (the CLI calls this at the start of every command)."""
        self.secrets = 0


tally = Tally()


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def inert(text: str) -> str:
    """``text`` with every character of :data:`CONTROLS` replaced by its escape text
    (``"\\x1b[2J"`` -> ``"\\\\x1b[2J"``, ``"\\u202e"`` -> ``"\\\\u202e"``); tabs and
    newlines are kept. Text without one is returned as it is (one regex search)."""
    return CONTROLS.sub(_escape, text) if CONTROLS.search(text) else text


LINE_BREAKS = re.compile("\r\n|[\n\r\v\f\x85\u2028\u2029]")
"""What a terminal or YAML reads as the end of a line."""


def one_line(text: str) -> str:
    """``text`` for a place that shows one line (an error message, a field in a diff, a
    title after a path): each line break written as ``\\n`` (``\\r``, ...) so no stored
    text can add a line that reads as the tool's own (``error: ...``, ``flagged: ...``).
    A trailing newline is dropped (YAML's folded ``title: >`` ends in one)."""
    text = text.rstrip("\n")
    if not LINE_BREAKS.search(text):
        return text
    return LINE_BREAKS.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def mask_secrets(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``
    (:func:`wiki.safety.scan.redact`),
    counting them in :data:`tally`. Instruction-like text is left as it is (it is quoted
    evidence; review and lint flag it)."""
    cleaned, secrets = _redacted(text)
    tally.secrets += secrets
    return cleaned


@lru_cache(maxsize=8192)
def _redacted(text: str) -> tuple[str, int]:
    """``text`` with its secrets replaced, and how many: kept for the last 8,192 texts (a
    server masks the same titles, paths and sentences in answer after answer: scanning
    them was 12 % of a served call's samples on the handbook)."""
    from wiki.safety.scan import SECRET, redact  # the pattern table compiles on first use

    cleaned, findings = redact(text)
    return cleaned, sum(f.category == SECRET for f in findings)


def shown(text: str) -> str:
    """Stored text as a terminal may show it: secrets masked first (so the scanner sees the
    text as it was written), then control characters made inert."""
    return inert(mask_secrets(text))


def masked_values(value: Any) -> Any:
    """A JSON value (dicts, lists, strings, numbers) with the secrets in every string masked
    (tuples become lists), keys included: an entry's frontmatter keys are stored text too
    (``ghp_...: value``). Two keys that mask alike are kept apart by a ``#2`` suffix. A
    float that is not finite (a fact written ``.nan`` or ``.inf``) becomes its text
    (``"nan"``, ``"inf"``, ``"-inf"``), so the document stays standard JSON."""
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "nan", "inf", "-inf": NaN and Infinity are not JSON
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(key, str):
                masked = base = mask_secrets(key)
                n = 1
                while masked != key and masked in out:
                    n += 1
                    masked = f"{base}#{n}"
                key = masked
            out[key] = masked_values(item)
        return out
    if isinstance(value, (list, tuple)):
        return [masked_values(v) for v in value]
    return value


def json_text(document: str) -> str:
    """A JSON document (from ``json.dumps(..., ensure_ascii=False)``) with C1, DEL and bidi
    characters written as ``\\uNNNN`` escapes: the same decoded value, nothing raw for a
    terminal. Safe on the whole document: outside strings JSON is plain ASCII."""
    return JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", document)


def masked_note() -> str | None:
    """The one line to say on stderr when secrets were masked, or ``None``."""
    n = tally.secrets
    if not n:
        return None
    return (f"warning: {n} secret{'s' if n != 1 else ''} masked in the output as "
            "[REDACTED:<kind>]; run `wiki lint --select W014` to find "
            f"{'them' if n != 1 else 'it'} in the wiki")
