"""Sending one row straight through geventhttpclient's HTTPClient, beneath Locust's session.

Locust's FastHttpSession wraps each request in layers the open loop never uses: a UserAgent that
parses the URL, copies headers, keeps cookies and handles retries and redirects (none here: a 3xx
is the answer, a POST is never retried), a request event feeding Locust's own statistics (a drill
records every request itself, in its part files), and a response wrapper that decompresses. On a
small machine those layers cost about as much CPU per request as the HTTP exchange itself.
`DirectSender` keeps what a drill relies on from the same session: its connection pool (whose
grants are stamped, `rushhour.scenarios.generator.handoff`), time-outs, TLS settings, Basic credentials from the
host URL, default headers, and the error names the session would record. It asks for no
compression, so the answer needs no decompressing, and keeps no cookies (each request stands alone).
"""

from __future__ import annotations

import errno
import socket
import ssl
import zlib
from collections.abc import Mapping
from typing import Any

from geventhttpclient._parser import HTTPParseError
from geventhttpclient.client import HTTPClient
from geventhttpclient.url import URL
from geventhttpclient.useragent import ConnectionError as AgentConnectionError
from geventhttpclient.useragent import EmptyResponse

from rushhour.scenarios.protocols.base import WireProtocol
from rushhour.scenarios.protocols.outcome import Outcome

__all__ = ["DirectSender", "error_name"]

ROUTES_KEPT = 1024
"""Distinct URLs whose client and request path are remembered (a row may name its own target)."""
_RETRYABLE_ERRNOS = frozenset({errno.ETIMEDOUT, errno.ENOLINK, errno.ENOENT, errno.EPIPE})
FAILURE_EXCEPTIONS = (AgentConnectionError, OSError, HTTPParseError, zlib.error)
"""What Locust's session records as a failed request rather than raising (its own list, without
importing Locust: importing it patches the interpreter)."""


def error_name(exc: BaseException) -> str | None:
    """What Locust's session records for an error raised by the HTTP client: geventhttpclient's
    UserAgent turns time-outs and broken pipes into `RetriesExceeded` (it never retries a POST);
    a connection or protocol failure keeps its own name; None: not a request failure (a bug)."""
    if isinstance(exc, (socket.timeout, EmptyResponse)):
        return "RetriesExceeded"
    if isinstance(exc, OSError) and exc.errno in _RETRYABLE_ERRNOS:
        return "RetriesExceeded"
    if isinstance(exc, ssl.SSLError) and "read operation timed out" in str(exc):
        return "RetriesExceeded"
    return type(exc).__name__ if isinstance(exc, FAILURE_EXCEPTIONS) else None


class DirectSender:
    """A `rushhour.scenarios.generator.openloop.Sender` for any protocol, over a FastHttpSession's own pool."""

    def __init__(self, session: Any, protocol: WireProtocol) -> None:
        self._pool = session.client.clientpool
        self._base = str(session.base_url or "")
        self._protocol = protocol
        self._extra = {"Authorization": session.auth_header} if session.auth_header else {}
        self._routes: dict[str, tuple[HTTPClient, str]] = {}

    def __call__(self, fields: Mapping[str, object], timeout_s: float) -> Outcome:
        request = self._protocol.request(fields)
        client, uri = self._route(f"{fields.get('base_url') or self._base}{request.path}")
        headers = {**request.headers, **self._extra} if self._extra else request.headers
        try:
            response = client.request(request.method, uri, body=request.body, headers=headers)
        except Exception as exc:  # GreenletExit and the firer's own gevent.Timeout pass through
            name = error_name(exc)
            if name is None:
                raise
            return Outcome(status=0, error=name)
        try:
            if request.stream and 200 <= response.status_code < 300:
                return self._read_stream(response, response.status_code)
            return self._protocol.parse(response.status_code, response.read())
        finally:
            response.release()

    def _route(self, url: str) -> tuple[HTTPClient, str]:
        """The client for `url`'s host and the request path to send (parsed once per URL)."""
        route = self._routes.get(url)
        if route is None:
            parsed = URL(url)
            route = (self._pool.get_client(parsed), parsed.quoted_uri)
            if len(self._routes) < ROUTES_KEPT:
                self._routes[url] = route
        return route

    def _read_stream(self, response: Any, status: int) -> Outcome:
        return self._protocol.read_stream(response.readline, status)
