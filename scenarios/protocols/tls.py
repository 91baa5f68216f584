"""TLS for https targets: verified always, against the scenario's CA bundle when it gives one."""

from __future__ import annotations

import ssl
from collections.abc import Callable


def ssl_context_factory(ca_bundle: str | None) -> Callable[[], ssl.SSLContext]:
    """A factory of verifying client contexts (geventhttpclient calls it per connection pool)."""

    def factory() -> ssl.SSLContext:
        import gevent.ssl

        return gevent.ssl.create_default_context(cafile=ca_bundle)

    return factory


def verify_setting(ca_bundle: str | None) -> ssl.SSLContext | bool:
    """What httpx's `verify` takes for the same trust (the probe uses it)."""
    return ssl.create_default_context(cafile=ca_bundle) if ca_bundle else True
