"""HTTP clients that connect only where the loopback guard looked, as the protocols layer names them.

`pinned_transport` and `PinnedBackend` live in the kernel (`rushhour.kernel.pinned_http`), so
that the chaos extension's admin client connects the same way; this module re-exports them for
the probe and every other httpx client of a command. The Locust processes' geventhttpclient
pools get the same through `rushhour.scenarios.generator.pinned_pools`.
"""

from __future__ import annotations

from rushhour.kernel.pinned_http import PinnedBackend, pinned_transport

__all__ = ["PinnedBackend", "pinned_transport"]
