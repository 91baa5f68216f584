"""What the gateway and a node tell each other beyond `/infer`'s JSON: the slowdown factor, the refusal exit code.

The gateway's fault proxy stamps every call to a slowed node with `SLOWDOWN_HEADER`; the node
multiplies its compute time by that factor. A call without the header runs at full speed, so
the fault heals with the proxy's (TTL, DELETE, reset) and never outlives the gateway.
"""

from __future__ import annotations

import math

SLOWDOWN_HEADER = "x-rushhour-slowdown"
# A node exits with this code when its configuration asks for what the machine lacks (e.g.
# require_provider: cuda without CUDA); the gateway does not restart it, since that cannot help.
EXIT_REFUSED = 2
MAX_SLOWDOWN = 20.0


def parse_slowdown(value: str | None) -> float:
    """The factor a header carries; 1.0 (full speed) when absent or not a number in [1, MAX_SLOWDOWN]."""
    if not value:
        return 1.0
    try:
        factor = float(value)
    except ValueError:
        return 1.0
    return factor if math.isfinite(factor) and 1.0 <= factor <= MAX_SLOWDOWN else 1.0
