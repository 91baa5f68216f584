"""What the gateway and a node tell each other beyond `/infer`'s JSON: the slowdown factor, the
gateway's token, the body limit, the refusal exit code.

The gateway's fault proxy stamps every call to a slowed node with `SLOWDOWN_HEADER`; the node
multiplies its compute time by that factor. A call from the gateway without the header runs at
full speed, so the fault heals with the proxy's (TTL, DELETE, reset) and never outlives the
gateway. Only the gateway may set the factor: every call it makes carries `NODE_TOKEN_HEADER`
with a token it shares with its nodes (`RUSHHOUR_NODE_TOKEN`, e.g. from a Kubernetes Secret, else
one made for this gateway and handed to the nodes it starts); a call without the right token
leaves the node's speed as it was. A node refuses a body over `MAX_BODY_BYTES` (413).
"""

from __future__ import annotations

import hmac
import math
import os
import secrets
from collections.abc import Mapping

SLOWDOWN_HEADER = "x-rushhour-slowdown"
# A node exits with this code when its configuration asks for what the machine lacks (e.g.
# require_provider: cuda without CUDA); the gateway does not restart it, since that cannot help.
EXIT_REFUSED = 2
MAX_SLOWDOWN = 20.0
NODE_TOKEN_HEADER = "x-rushhour-node-token"
NODE_TOKEN_ENV = "RUSHHOUR_NODE_TOKEN"
MAX_BODY_BYTES = 4 * 2**20
"""The largest `/infer` body a node reads: a gateway's longest segment, JSON-escaped, fits many times over."""
_MADE: list[str] = []


def node_token(environ: Mapping[str, str] | None = None) -> str:
    """The token shared by a gateway and its nodes: `RUSHHOUR_NODE_TOKEN`, else one made for this process
    (a gateway hands it to the nodes it starts; a node without one hears no gateway's slowdown)."""
    value = (os.environ if environ is None else environ).get(NODE_TOKEN_ENV, "").strip()
    if value:
        return value
    if not _MADE:
        _MADE.append(secrets.token_urlsafe(32))
    return _MADE[0]


def from_gateway(given: str | None, expected: str) -> bool:
    """True when a call's token is the gateway's (constant-time comparison)."""
    return bool(given) and bool(expected) and hmac.compare_digest(str(given).encode(), expected.encode())


def parse_slowdown(value: str | None) -> float:
    """The factor a header carries; 1.0 (full speed) when absent or not a number in [1, MAX_SLOWDOWN]."""
    if not value:
        return 1.0
    try:
        factor = float(value)
    except ValueError:
        return 1.0
    return factor if math.isfinite(factor) and 1.0 <= factor <= MAX_SLOWDOWN else 1.0
