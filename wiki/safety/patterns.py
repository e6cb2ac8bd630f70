"""The one table of hostile-content patterns that :mod:`wiki.safety.scan` scans for.

Each :class:`Pattern` has a stable ``rule`` id (``S0xx`` secrets, ``I0xx`` instruction-like
content), a ``kind`` name (``github-token``), a ``category`` (``secret`` | ``instruction``),
a ``severity`` (secrets ``error``, instructions ``warning``), a one-line ``description``,
the regular expression, the group that is the secret itself (what redaction replaces) and
an optional ``accept(text, match)`` test that turns placeholders (``password=<your password>``,
``api_key = os.environ["KEY"]``, ``AKIA...EXAMPLE``, documentation's made-up tokens such as
``ghp_abcdefghijklmnopqrstuvwxyz0123456789``) and legitimate uses (a zero-width
joiner inside an emoji) into non-findings. Rows are tried in order; a later row's match that
overlaps an earlier row's is dropped, so specific rows come before generic ones. A
``folded`` row is written in lower case and matched against the text with its ASCII letters
lower-cased (same length, so offsets hold), which is about twice as fast as ``re.I``.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from wiki.safety import encoded

SECRET, INSTRUCTION = "secret", "instruction"
ERROR, WARNING = "error", "warning"


@dataclass(frozen=True)
class Pattern:
    """One row of :data:`PATTERNS` (see the module docstring)."""

    rule: str
    kind: str
    category: str
    severity: str
    description: str
    source: str
    """The regular expression as written; :attr:`regex` compiles it."""
    group: int | str = 0
    accept: Callable[[str, re.Match[str]], bool] | None = None
    folded: bool = False
    hints: tuple[str, ...] | None = None
    """Lower-case strings of which a match must contain one: a text whose lower-cased form
    holds none of them is not searched (``str.__contains__`` is far faster than a regex
    that starts with a look-behind). ``None``: always search."""
    flags: int = 0

    @property
    def regex(self) -> re.Pattern[str]:
        """:attr:`source` compiled with :attr:`flags`, on first use (compiling the whole
        table at import would cost every ``wiki`` process ~15 ms, most texts reach few
        rows past their :attr:`hints`)."""
        return _compiled(self.source, self.flags)


@functools.cache
def _compiled(source: str, flags: int) -> re.Pattern[str]:
    return re.compile(source, flags)


_EXACT_PLACEHOLDERS = {
    "password", "passwd", "pass", "pwd", "secret", "token", "apikey", "api_key", "key",
    "none", "null", "nil", "true", "false", "yes", "no", "changeme", "redacted", "required",
    "optional", "string", "str", "value", "empty", "test", "dummy", "fake", "hidden",
    "masked", "unset", "default", "admin", "user", "username", "foo", "bar", "foobar",
}
_PLACEHOLDER_PARTS = ("example", "your", "placeholder", "xxx", "***", "...", "…", "<", ">",
                      "{{", "${", "changeme", "change_me", "redacted", "replace", "insert")
_CODE_VALUE = re.compile(r"^(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\s*[\[(]"  # call or subscript
                         r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$"  # attribute access
                         r"|[A-Z][A-Z0-9]*_[A-Z0-9_]+$)")  # an environment variable's name


def is_placeholder(value: str) -> bool:
    """Whether ``value`` (a candidate secret) is a placeholder, a reference to where the
    real value lives (an environment variable, a call, a template) or too uniform to be a
    credential (two distinct characters or fewer: ``xxxx``, ``****``, ``AAAA``)."""
    folded = value.strip().strip("\"'`").lower()
    if not folded or folded in _EXACT_PLACEHOLDERS or len(set(folded)) <= 2:
        return True
    if any(part in folded for part in _PLACEHOLDER_PARTS):
        return True
    return folded[0] in "$%{[(<@*" or bool(_CODE_VALUE.match(value.strip()))


MADE_UP_RUN = 8
"""A token body holding this many consecutive ascending letters or digits is made up."""


def is_made_up(value: str) -> bool:
    """Whether ``value`` (a prefixed token such as ``ghp_...``) is visibly made up, the way
    documentation writes example tokens: it holds a run of :data:`MADE_UP_RUN` or more
    consecutive ascending letters or digits (``abcdefgh``, ``ABCDEFGH``, ``01234567``), as
    in ``ghp_abcdefghijklmnopqrstuvwxyz0123456789``. A generated 36-character body holds
    such a run with probability about ``29 / 62**7`` (1e-11): never in practice. Only the
    token rows use this; a password assignment keeps ``12345678`` as a (weak) real value."""
    run = 1
    for previous, current in zip(value, value[1:], strict=False):
        same_class = ((previous.isdigit() and current.isdigit())
                      or (previous.islower() and current.islower())
                      or (previous.isupper() and current.isupper()))
        run = run + 1 if same_class and ord(current) == ord(previous) + 1 else 1
        if run >= MADE_UP_RUN:
            return True
    return False


def _secret(text: str, match: re.Match[str]) -> str:
    return text[match.start("secret"):match.end("secret")]


def _not_placeholder(text: str, match: re.Match[str]) -> bool:
    """A token row's test: neither a placeholder (:func:`is_placeholder`) nor a visibly
    made-up example (:func:`is_made_up`)."""
    value = _secret(text, match)
    return not (is_placeholder(value) or is_made_up(value))


def _assignment(text: str, match: re.Match[str]) -> bool:
    """``key = value`` always counts; ``key: value`` (prose and YAML look alike) only when
    the value is quoted or looks generated (a digit or symbol, or long and mixed case)."""
    value = _secret(text, match)
    if is_placeholder(value):
        return False
    if match.group("sep") != ":" or match.group("q"):
        return True
    return bool(re.search(r"[^A-Za-z]", value)) or (
        len(value) >= 16 and value.lower() != value and value.upper() != value)


def _private_key(text: str, match: re.Match[str]) -> bool:
    """A key block with a real body: ``-----BEGIN PRIVATE KEY-----\\n...`` in docs is not."""
    body = re.sub(r"-----[A-Z0-9 ]+-----|^[\w-]+:.*$", "", match.group(0), flags=re.M)
    return len(re.sub(r"[^A-Za-z0-9+/]", "", body)) >= 32


def _base64(text: str, match: re.Match[str]) -> bool:
    """A long run of the base64 alphabet that mixes cases and digits and is not a path or
    a slug (separators at most every 12 characters; base64 has one in 32 on average)."""
    blob = match.group(0)
    separators = blob.count("/") + blob.count("-") + blob.count("_")
    return (any(c.isdigit() for c in blob) and blob.lower() != blob and blob.upper() != blob
            and separators * 12 <= len(blob) and len(set(blob)) > 16
            and not _readable_link_payload(text, match))


def _readable_link_payload(text: str, match: re.Match[str]) -> bool:
    """Whether the blob is the payload of a JWT-shaped token (``eyJ...`` after an ``eyJ...``
    header and a dot) that decodes to a JSON object holding nothing instruction-like: a
    signed link, such as a newsletter's tracking link (``{"bulletin_link_id": 103, "url":
    ...}``) in an ordinary page. Nothing is hidden in it, and the JWT row (S014) judges
    whether the token is a credential. A payload that does not decode, is not an object,
    or whose decoded text matches an instruction row is still flagged."""
    start, blob = match.start(), match.group(0)
    if not blob.startswith("eyJ") or start < 1 or text[start - 1] != ".":
        return False
    if re.search(r"eyJ[A-Za-z0-9_-]{10,}$", text[max(0, start - 400):start - 1]) is None:
        return False
    try:
        decoded = base64.urlsafe_b64decode(blob + "=" * (-len(blob) % 4)).decode("utf-8")
        claims = json.loads(decoded)
    except (ValueError, UnicodeDecodeError, RecursionError):  # nested past the stack
        return False
    if not isinstance(claims, dict):
        return False
    folded = decoded.lower()
    return not any(row.regex.search(folded if row.folded else decoded) for row in PATTERNS
                   if row.category == INSTRUCTION and row.rule not in ("I005", "I008"))


_B64 = "[A-Za-z0-9+/_-]"
_WORD_RULES = ("I001", "I002", "I003", "I004")
"""The instruction rows that read words: what a decoded text is tried against."""


def _encoded_instruction(text: str, match: re.Match[str]) -> bool:
    """Whether the base64 run ``match`` (and wrapped lines after it) decodes to text a row
    of :data:`_WORD_RULES` matches (:func:`wiki.safety.encoded.hides`)."""
    return encoded.hides(encoded.joined_run(text, match), _word_hints(), _instruction_in)


@functools.cache
def _word_hints() -> re.Pattern[bytes]:
    """Any hint of the rows of :data:`_WORD_RULES`, as one pattern over lower-cased bytes:
    a decoded text holding none of them matches none of those rows."""
    hints = sorted({h.encode() for rule in _WORD_RULES for h in BY_RULE[rule].hints or ()})
    return re.compile(b"|".join(re.escape(h) for h in hints))


def _instruction_in(decoded: str) -> bool:
    """Whether an instruction row that reads words (I001-I004) matches ``decoded``."""
    folded = decoded.lower()
    return any(BY_RULE[rule].regex.search(folded if BY_RULE[rule].folded else decoded)
               for rule in _WORD_RULES)


def _url_password(text: str, match: re.Match[str]) -> bool:
    """The password of ``scheme://user:password@host`` (the user may be empty; the password
    runs to the authority's last ``@``, so an unencoded ``@`` in it is masked whole). Not a
    finding: a placeholder (:func:`is_placeholder`: ``pass``, ``****``, ``<password>``,
    ``${DB_PASS}``, a one- or two-letter ``u:p``), a word built on "password"
    (``mysecretpassword``, ``db_password``: documentation's stand-ins) or the user name
    again (``guest:guest``, ``postgres:postgres``: a product's published default)."""
    value = _secret(text, match)
    folded = value.lower()
    return not (is_placeholder(value) or "password" in folded or "passwd" in folded
                or folded == match.group("user").lower())


_CLAIMS = {"iss", "sub", "aud", "exp", "nbf", "iat", "jti", "scope", "scp", "role", "roles",
           "email", "user", "user_id", "uid", "azp", "client_id", "sid", "token_type"}


def _jwt(text: str, match: re.Match[str]) -> bool:
    """A token whose payload carries an identity or validity claim (``sub``, ``exp``, ...)
    or cannot be read; a signed link whose payload only names a URL (newsletter tracking
    links) is not a credential."""
    payload = match.group("secret").split(".")[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, UnicodeDecodeError, RecursionError):  # nested past the stack
        return True
    return not isinstance(claims, dict) or bool(_CLAIMS & set(claims))


_INVISIBLE = set("\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u180e")


def _hidden(text: str, match: re.Match[str]) -> bool:
    """Bidi controls and tag characters always count (except the tags of an emoji flag,
    after U+1F3F4). Zero-width characters count inside an ASCII word (``ig\u200bnore``
    defeats a keyword filter) or as a run of three or more (text encoded in them); a lone
    one at a word edge, between emoji or in Persian or Indic script hides nothing."""
    start, end = match.start(), match.end()
    run = match.group(0)
    if set(run) <= _INVISIBLE:
        inside_word = start > 0 and end < len(text) and all(
            c.isascii() and c.isalnum() for c in (text[start - 1], text[end]))
        return inside_word or len(run) >= 3
    return not (all(0xE0000 <= ord(c) <= 0xE007F for c in run)
                and start > 0 and text[start - 1] == "\U0001f3f4")


def _row(rule: str, kind: str, description: str, regex: str, *, group: int | str = 0,
         accept: Callable[[str, re.Match[str]], bool] | None = None, flags: int = 0,
         folded: bool = False, hints: tuple[str, ...] | None = None) -> Pattern:
    category = SECRET if rule.startswith("S") else INSTRUCTION
    return Pattern(rule, kind, category, ERROR if category == SECRET else WARNING,
                   description, regex, group, accept, folded, hints, flags)


# a token may follow a dash (`fix-ghp_...`: a ref name has no spaces), not a letter, digit or _
_EDGE = r"(?<![A-Za-z0-9_])"
_END = r"(?![A-Za-z0-9_-])"
_KEY_PREFIX = r"(?<![A-Za-z0-9])"
_VALUE = (r"""(?P<sep>:=|=>|=|:)[ \t]*(?!=)(?P<q>["'])?"""
          r"""(?P<secret>(?(q)[^"'\n]{4,200}|[^\s"'`,;<>)\]}]{4,200}))(?(q)(?P=q))""")
_WORDS = r"(?:(?:all|the|your|any|every|its|their|my|full|entire|whole|of)\s+){0,3}"
_SENSITIVE = (r"(?:secrets?|credentials?|api[ _-]?keys?|(?:access\s+|auth\s+)?tokens?|"
              r"passwords?|private\s+keys?|ssh\s+keys?|environment\s+variables|env\s+vars?|"
              r"system\s+prompt|conversation|chat\s+history|~/\.\w+|/etc/\w+|\.env\b|id_rsa)")

PATTERNS: tuple[Pattern, ...] = (
    # -- secrets (docs/robustness.md, H2) -------------------------------------------------
    _row("S001", "private-key", "a private key block (PEM, OpenSSH, PGP)",
         r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
         r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)", accept=_private_key,
         hints=("private key",)),
    _row("S002", "github-token", "a GitHub token (ghp_, gho_, ghs_, ghu_, ghr_, github_pat_)",
         _EDGE + r"(?P<secret>gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{40,255})"
         + _END, group="secret", accept=_not_placeholder,
         hints=("ghp_", "gho_", "ghs_", "ghu_", "ghr_", "github_pat_")),
    _row("S003", "gitlab-token", "a GitLab token (glpat-, glptt-, gldt-, glrt-, ...)",
         _EDGE + r"(?P<secret>gl(?:pat|ptt|dt|rt|cbt|soat|ft|imt)-[A-Za-z0-9_-]{20,64})" + _END,
         group="secret", accept=_not_placeholder,
         hints=("glpat-", "glptt-", "gldt-", "glrt-", "glcbt-", "glsoat-", "glft-", "glimt-")),
    _row("S004", "aws-access-key-id", "an AWS access key id (AKIA..., ASIA...)",
         r"(?<![A-Z0-9])(?P<secret>(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16})(?![A-Z0-9])",
         group="secret", accept=_not_placeholder,
         hints=("akia", "asia", "abia", "acca", "a3t")),
    _row("S005", "aws-secret-key", "an AWS secret access key assigned to a variable",
         r"aws[_-]?secret[_-]?(?:access[_-]?)?key['\"]?\s*(?::|=|=>)\s*['\"]?"
         r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])", group="secret",
         accept=_not_placeholder, folded=True,
         hints=("secret",)),
    _row("S006", "google-api-key", "a Google API key (AIza...)",
         _EDGE + r"(?P<secret>AIza[0-9A-Za-z_-]{35})" + _END, group="secret",
         accept=_not_placeholder,
         hints=("aiza",)),
    _row("S007", "slack-token", "a Slack token (xoxb-, xoxp-, xapp-, ...)",
         _EDGE + r"(?P<secret>xox[abposr]-[0-9A-Za-z-]{10,}|xapp-\d-[0-9A-Za-z-]{10,})",
         group="secret", accept=_not_placeholder,
         hints=("xox", "xapp-")),
    _row("S008", "slack-webhook", "a Slack incoming-webhook URL",
         r"https://hooks\.slack\.com/services/(?P<secret>T[0-9A-Z]{6,}/B[0-9A-Z]{6,}/"
         r"[0-9A-Za-z]{16,})", group="secret", accept=_not_placeholder,
         hints=("hooks.slack.com",)),
    _row("S009", "stripe-key", "a Stripe secret or restricted key (sk_live_, rk_test_, ...)",
         _EDGE + r"(?P<secret>(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,})" + _END,
         group="secret", accept=_not_placeholder,
         hints=("k_live_", "k_test_")),
    _row("S010", "anthropic-key", "an Anthropic API key (sk-ant-...)",
         _EDGE + r"(?P<secret>sk-ant-[A-Za-z0-9_-]{32,})" + _END, group="secret",
         accept=_not_placeholder,
         hints=("sk-ant-",)),
    _row("S011", "openai-key", "an OpenAI-style API key (sk-..., sk-proj-...)",
         _EDGE + r"(?P<secret>sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,})" + _END,
         group="secret", accept=_not_placeholder,
         hints=("sk-",)),
    _row("S012", "npm-token", "an npm access token (npm_...)",
         _EDGE + r"(?P<secret>npm_[A-Za-z0-9]{36})" + _END, group="secret",
         accept=_not_placeholder,
         hints=("npm_",)),
    _row("S013", "pypi-token", "a PyPI upload token (pypi-AgEIcHlwaS5vcmc...)",
         _EDGE + r"(?P<secret>pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,})", group="secret",
         accept=_not_placeholder,
         hints=("pypi-",)),
    _row("S014", "jwt", "a JSON Web Token (header.payload.signature)",
         _EDGE + r"(?P<secret>eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{16,})"
         + _END, group="secret", accept=_jwt,
         hints=("eyj",)),
    _row("S015", "connection-string",
         "a URL with a password (postgres://user:pass@host, https://user:token@host)",
         r"://(?P<user>[^\s:/@'\"]{0,100}):(?P<secret>[^\s/?'\"]{1,200})@"
         r"[^\s/@'\"]+", group="secret", accept=_url_password,
         hints=("://",)),
    _row("S016", "bearer-token", "a bearer token in an Authorization header",
         r"\bbearer[ \t]+(?P<secret>[A-Za-z0-9_~+/.=-]{20,})", group="secret",
         accept=_not_placeholder, folded=True,
         hints=("bearer",)),
    _row("S017", "password-assignment", "a password assigned a literal value (password=...)",
         _KEY_PREFIX + r"(?:password|passwd|pwd|passphrase)['\"]?[ \t]*" + _VALUE,
         group="secret", accept=_assignment, folded=True,
         hints=("pass", "pwd")),
    _row("S018", "secret-assignment",
         "an API key, token or secret assigned a literal value (api_key=..., secret: ...)",
         _KEY_PREFIX + r"(?:api[_-]?key|api[_-]?token|access[_-]?token|auth[_-]?token|"
         r"client[_-]?secret|secret[_-]?key|private[_-]?token|secret)['\"]?[ \t]*" + _VALUE,
         group="secret", accept=_assignment, folded=True,
         hints=("api", "token", "secret")),
    # -- instruction-like and exfiltration content (docs/robustness.md, H1) ---------------
    _row("I001", "instruction-override",
         "an attempt to override a model's instructions (ignore previous instructions ...)",
         r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|each|every|the|your|"
         r"my|these|those|of|everything|anything)\s+){0,3}(?:(?:previous|prior|above|earlier|"
         r"preceding|foregoing|former|original|initial|system|existing|developer)\s+){1,2}"
         r"(?:instructions?|prompts?|directions?|rules?|messages?|context|guidelines?|"
         r"commands?|guardrails?|constraints?|polic(?:y|ies))\b"
         r"|\b(?:disregard|ignore|forget)\s+(?:(?:all|everything|anything)\s+)?(?:the\s+|"
         r"what\s+(?:is|was)\s+(?:said\s+|written\s+)?)?(?:above|before)"
         r"(?=\s*(?:[.,;:!)]|$|and\b|then\b))"
         r"|\b(?:your\s+)?new\s+instructions\s+(?:are|follow)\b|\bnew\s+system\s+prompt\b",
         flags=re.M, folded=True,
         hints=("ignore", "disregard", "forget", "override", "bypass", "new")),
    _row("I002", "role-reassignment",
         "an attempt to give a model a new role (you are now ..., act as the system)",
         r"\byou\s+are\s+now\s+(?:(?:a|an|the|my|in)\s+)?(?:(?:new|different|unrestricted|"
         r"unfiltered|jailbroken|evil|rogue|uncensored|developer)\s+)*(?:ai|assistant|model|"
         r"bot|chatbot|agent|system|dan|llm|gpt|mode)\b"
         r"|\b(?:act|behave|respond|answer)\s+as\s+(?:if\s+you\s+(?:are|were)\s+)?(?:the\s+|a\s+"
         r"|an\s+)?(?:system|root|unrestricted|unfiltered|jailbroken|dan)\b"
         r"|\bpretend\s+(?:to\s+be|you\s+are)\s+(?:the\s+|a\s+|an\s+)?(?:system|ai|assistant|"
         r"model|dan|unrestricted|different\s+(?:ai|assistant|model))\b"
         r"|\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must|shall)\b", folded=True,
         hints=("now", "act", "behave", "respond", "answer", "pretend")),
    _row("I003", "role-marker", "a chat-template role marker (<|im_start|>, [INST], <<SYS>>)",
         r"<\|(?:im_start|im_end|system|user|assistant|endoftext)\|>|\[/?INST\]|<</?SYS>>",
         hints=("<|", "inst]", "sys>>")),
    _row("I004", "exfiltration",
         "an instruction to send data somewhere (send the contents of ~/.ssh to ...)",
         r"\b(?:send|post|upload|e-?mail|forward|transmit|exfiltrate|leak|share|paste|pipe|"
         r"curl|copy)\s+(?:me\s+)?" + _WORDS + r"(?:contents?\s+of\s+" + _WORDS + r"|)"
         + _SENSITIVE + r"[^\n]{0,120}?\b(?:to|into)\b", folded=True,
         hints=("send", "post", "upload", "mail", "forward", "transmit", "exfiltrate",
                "leak", "share", "paste", "pipe", "curl", "copy")),
    _row("I008", "encoded-instruction",
         "base64 text (14+ characters, either alphabet, padded or not, wrapped or not) that "
         "decodes to instruction-like text",
         r"(?<![A-Za-z0-9+/=_-])" + _B64 + f"{{{encoded.MIN_CHARS},}}={{0,2}}",
         accept=_encoded_instruction),
    _row("I005", "encoded-payload", "a long base64 blob (200+ characters) that may hide text",
         r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{200,}={0,2}", accept=_base64),
    _row("I006", "hidden-characters",
         "zero-width, bidi-control or tag characters that hide or reorder text",
         "[\u200b-\u200d\u2060-\u2064\ufeff\u180e\u202a-\u202e\u2066-\u2069"
         "\U000e0000-\U000e007f]+", accept=_hidden),
    _row("I007", "control-characters",
         "terminal control characters (C0/C1 controls other than tab and newline, ESC/CSI/OSC "
         "sequences, a lone carriage return) that can rewrite what a terminal shows",
         "\x1b(?:\\[[0-?]*[ -/]*[@-~]|\\][^\x07\x1b\n]{0,200}(?:\x07|\x1b\\\\)?|[@-~])?"
         "|\x9b[0-?]*[ -/]*[@-~]|\r(?!\n)"
         "|[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9a\x9c-\x9f\udc80-\udc9f]+"),
)
"""Every pattern, specific before generic (see the module docstring)."""

BY_RULE = {p.rule: p for p in PATTERNS}
"""Rule id -> pattern."""
