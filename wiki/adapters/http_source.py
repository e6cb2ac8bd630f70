"""``http://`` and ``https://`` sources, through httpx (imported on first use).

Fingerprint: the hash of the canonical body, like every other source. The validators an
entry recorded with it (``etag``, ``last_modified``) make the request conditional
(``If-None-Match`` / ``If-Modified-Since``): a ``304 Not Modified`` proves the body equal to
the recorded one without transferring it. Timeouts (``[sources] timeout`` seconds),
refused connections and answers >= 400 come back as the check's ``error``; a body larger
than ``[ingest] max_bytes`` is not read past the limit.

Policy (:mod:`wiki.adapters.policy`): every request, the first and each redirect hop
(httpx follows redirects through the same transport), goes through
:class:`GuardedTransport`, which resolves the host, refuses it when any of its addresses is
not allowed (loopback, private, link-local... unless the reader allows them) and then
connects to the very address it checked (the ``Host`` header and TLS server name stay the
URL's), so a name cannot resolve to a public address for the check and to an internal one
for the connection. Environment proxies are not used: the check must see the address
connected to.
"""

from __future__ import annotations

import threading

from wiki.adapters.policy import SourcePolicy
from wiki.adapters.registry import Check, Recorded, SourceEnv, register
from wiki.adapters.sources import decode_text, too_large
from wiki.errors import SourceError, SourceNotAllowedError

USER_AGENT = "wiki-lint (source check)"
MAX_REDIRECTS = 10
"""Redirect hops followed per request (each one checked against the policy)."""
_PORTS = {"http": 80, "https": 443}


def guarded_transport(policy: SourcePolicy):
    """An httpx transport that enforces ``policy`` on every request (see the module
    docstring): one plain ``httpx.HTTPTransport`` per (scheme, host, port), each request's
    URL pointed at the checked address. Raises :class:`SourceNotAllowedError` from
    ``handle_request`` for a refused host, before connecting."""
    import httpx

    class GuardedTransport(httpx.BaseTransport):
        def __init__(self) -> None:
            self._inner: dict[tuple[str, str, int], httpx.HTTPTransport] = {}
            self._lock = threading.Lock()

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            url = request.url
            port = url.port or _PORTS.get(url.scheme, 80)
            address = policy.resolve(str(url), url.host, port)
            with self._lock:
                inner = self._inner.setdefault((url.scheme, url.host, port),
                                               httpx.HTTPTransport())
            if url.scheme == "https":
                request.extensions = {**request.extensions, "sni_hostname": url.host}
            request.url = url.copy_with(host=address)
            try:
                return inner.handle_request(request)
            finally:
                request.url = url

        def close(self) -> None:
            with self._lock:
                for inner in self._inner.values():
                    inner.close()
                self._inner.clear()

    return GuardedTransport()


@register("http", "https")
class HttpSource:
    """Adapter for web pages (see the module docstring). ``concurrent``: its checks may run
    on several threads at once (one shared httpx client, which is thread-safe)."""

    concurrent = True

    def __init__(self, env: SourceEnv):
        self.env = env
        self.timeout = float(env.config.sources.timeout)
        self._client = None
        self._lock = threading.Lock()

    def _http(self):
        with self._lock:
            if self._client is None:
                import httpx

                self._client = httpx.Client(
                    timeout=self.timeout, follow_redirects=True, max_redirects=MAX_REDIRECTS,
                    headers={"User-Agent": USER_AGENT},
                    transport=guarded_transport(self.env.policy))
            return self._client

    def _get(self, uri: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        """``(status, validators, body)``; raises :class:`SourceError` with a one-line
        reason for a timeout, a network error or a body over the size limit, and
        :class:`SourceNotAllowedError` (naming ``uri``) when the policy refuses the URL or
        a redirect hop."""
        import httpx

        limit = self.env.config.ingest.max_bytes
        try:
            with self._http().stream("GET", uri, headers=headers) as response:
                found = {"etag": response.headers.get("etag", ""),
                         "last_modified": response.headers.get("last-modified", "")}
                body = b""
                if response.status_code == 200:
                    for chunk in response.iter_bytes():
                        body += chunk
                        if len(body) > limit:
                            raise too_large(uri, len(body), limit)
                return response.status_code, {k: v for k, v in found.items() if v}, body
        except SourceNotAllowedError as exc:
            hop = "" if exc.path == uri else f"redirected to {exc.path}: "
            raise SourceNotAllowedError(uri, hop + exc.reason) from None
        except (httpx.InvalidURL, httpx.UnsupportedProtocol, ValueError) as exc:
            # a malformed URL in an entry (``http://0177.0.0.1/``, ``http://[::1/``) or in
            # a redirect's Location: a reason, never a crash of ask/lint (exit 70)
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise SourceError(uri, f"unreachable (not a valid URL: {reason})") from None
        except httpx.TooManyRedirects:
            raise SourceError(uri, f"unreachable (more than {MAX_REDIRECTS} redirects)"
                              ) from None
        except httpx.TimeoutException:
            raise SourceError(uri, f"timed out after {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise SourceError(uri, f"unreachable ({reason})") from None

    def fingerprint(self, uri: str, recorded: Recorded) -> Check:
        """The body's fingerprint now (a 304 to a conditional request keeps the recorded
        one), or why the page cannot be had."""
        headers = {}
        if recorded.fingerprint and recorded.etag:
            headers["If-None-Match"] = recorded.etag
        if recorded.fingerprint and recorded.last_modified:
            headers["If-Modified-Since"] = recorded.last_modified
        try:
            status, validators, body = self._get(uri, headers)
            if status == 304 and headers:
                kept = {"etag": recorded.etag, "last_modified": recorded.last_modified}
                kept = {k: v for k, v in {**kept, **validators}.items() if v}
                return Check(uri, recorded.fingerprint, validators=kept, unchanged=True)
            if status != 200:
                return Check(uri, error=f"answers HTTP {status}")
            text = decode_text(body, uri, max_lines=self.env.config.ingest.max_lines)
        except SourceNotAllowedError as exc:
            return Check.not_allowed(exc)
        except SourceError as exc:
            return Check(uri, error=exc.reason if exc.reason.startswith(
                ("timed out", "unreachable")) else f"is unreadable ({exc.reason})")
        return Check(uri, self.env.fingerprint(text), validators=validators)

    def read(self, uri: str) -> str:
        """The page's text (raises :class:`SourceError`, :class:`SourceNotAllowedError`)."""
        status, _, body = self._get(uri, {})
        if status != 200:
            raise SourceError(uri, f"answers HTTP {status}")
        return decode_text(body, uri, max_lines=self.env.config.ingest.max_lines)

    def close(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            self._client.close()
            self._client = None
