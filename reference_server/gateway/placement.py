"""Placement: which model tier (and so which pool: GPU `quality` or CPU `fast`) serves a request.

`by_mode` keeps the contract's plain rule: `fast` goes to the fast pool, `auto` and `quality` to
the quality pool. `cost_aware` spends GPU time only where it buys something: `auto` work that is
short (up to `short_chars`) or of a low-priority class (`cpu_priorities`, e.g. batch) runs on the
cheap CPU pool, where a short text costs little latency and a batch job has time to spare. An
explicit `mode` is the caller's choice and is honoured either way, and with no fast pool in the
cluster everything stays on quality. Responses report the model that actually served.
"""

from __future__ import annotations

from rushhour.reference_server.config import RoutingConfig
from rushhour.reference_server.gateway.api import TranslateRequest

QUALITY, FAST = "quality", "fast"


def choose_tier(routing: RoutingConfig, req: TranslateRequest, priority: str, *, has_fast_pool: bool) -> str:
    """The tier to compute `req` on; `priority` is the request's resolved priority class."""
    if req.mode == "fast":
        return FAST
    if req.mode == "quality" or routing.policy == "by_mode" or not has_fast_pool:
        return QUALITY
    if len(req.text) <= routing.short_chars or priority in routing.cpu_priorities:
        return FAST
    return QUALITY
