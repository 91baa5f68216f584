"""When a request really left: the moment it was handed a connection, not when its greenlet began.

Locust's FastHttpUser sends through a bounded pool of connections. When the target stalls and
every connection is busy, new requests queue for one inside the client; stamping them as sent
when their greenlet started would hide that wait, and the open loop would silently turn closed.
Each greenlet clears its stamp before a send (`begin`), the pool stamps it when a connection is
granted (`mark_handed`), and the firer reads it back (`handed_at`). Only the first grant of a send
counts, so a job's polls never move its send time. Times are `time.monotonic()`.
"""

from __future__ import annotations

import time
from typing import Any

from gevent.local import local
from geventhttpclient.client import HTTPClient, HTTPClientPool

__all__ = ["StampedClientPool", "StampingSemaphore", "begin", "handed_at", "mark_handed", "stamp_connections"]

_stamps = local()


def begin() -> None:
    """Forget this greenlet's previous stamp: a new send starts."""
    _stamps.handed = None


def mark_handed() -> None:
    """Stamp now as the moment this greenlet's send got its connection (first grant only)."""
    if getattr(_stamps, "handed", None) is None:
        _stamps.handed = time.monotonic()


def handed_at() -> float | None:
    """Monotonic time this greenlet's send got a connection, or None if it never did."""
    value = getattr(_stamps, "handed", None)
    return float(value) if value is not None else None


class StampingSemaphore:
    """The pool's connection semaphore, stamping the greenlet that acquires a slot."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def acquire(self, *args: Any, **kwargs: Any) -> bool:
        granted = bool(self._inner.acquire(*args, **kwargs))
        if granted:
            mark_handed()
        return granted

    def release(self) -> None:
        self._inner.release()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class StampedClientPool(HTTPClientPool):
    """geventhttpclient's client pool whose connection pools stamp every grant."""

    def get_client(self, url: Any) -> HTTPClient:
        client = super().get_client(url)
        pool = getattr(client, "_connection_pool", None)
        semaphore = getattr(pool, "_semaphore", None)
        if semaphore is None:
            raise RuntimeError(
                "geventhttpclient's HTTPClient has no _connection_pool._semaphore; "
                "this version cannot report connection waits, so sent_s would be wrong."
            )
        if pool is not None and not isinstance(semaphore, StampingSemaphore):
            pool._semaphore = StampingSemaphore(semaphore)
        return client


def stamp_connections(agent: Any) -> None:
    """Give a geventhttpclient UserAgent (FastHttpSession.client) a stamping client pool with the
    same settings (timeouts, concurrency); call before its first request."""
    agent.clientpool = StampedClientPool(**agent.clientpool.client_args)
