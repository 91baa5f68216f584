"""Chaos Toolkit probes of a local rushhour reference server: node states and live SLOs.

The node probes read `GET /v1/status`; the SLO probes read the drill's live results file when
the runner names one in `RUSHHOUR_LIVE`, else the server's `/metrics` histogram over a short
window (see `rushhour.experiments.live`). None of them changes anything.
"""

from __future__ import annotations

from typing import Any

from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Configuration, Secrets

from rushhour.experiments.client import client_from
from rushhour.experiments.live import live_stats
from rushhour.experiments.local.nodes import list_nodes

__all__ = [
    "all_nodes_ready",
    "error_rate",
    "node_states",
    "p99_latency_ms",
    "ready_nodes",
    "ready_nodes_at_least",
    "server_ready",
    "slo_met",
    "slo_window",
    "translation_served",
]

SAMPLE_TEXT = "The promotion starts at noon; every order ships free today."


def node_states(
    pool: str = "", configuration: Configuration = None, secrets: Secrets = None
) -> dict[str, str]:
    """Map each node id to its state (starting, warming, ready or down).

    pool: only the nodes of this pool; empty means every node.
    """
    client = client_from(configuration, secrets)
    return {str(n["id"]): str(n.get("state", "")) for n in list_nodes(client, pool)}


def ready_nodes(
    pool: str = "quality", configuration: Configuration = None, secrets: Secrets = None
) -> list[str]:
    """The ids of the ready nodes of `pool` (empty pool name: of every pool), in index order."""
    client = client_from(configuration, secrets)
    return [str(n["id"]) for n in list_nodes(client, pool) if n.get("state") == "ready"]


def all_nodes_ready(
    pool: str = "", configuration: Configuration = None, secrets: Secrets = None
) -> bool:
    """True when every node of `pool` (empty: of every pool) is ready and there is at least one."""
    nodes = list_nodes(client_from(configuration, secrets), pool)
    return bool(nodes) and all(n.get("state") == "ready" for n in nodes)


def ready_nodes_at_least(
    pool: str = "quality",
    n: int = 1,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> bool:
    """True when `pool` has at least `n` ready nodes: enough capacity to call it recovered."""
    return len(ready_nodes(pool, configuration, secrets)) >= int(n)


def server_ready(configuration: Configuration = None, secrets: Secrets = None) -> bool:
    """True when `GET /readyz` answers 200: every required pool has a ready node."""
    return client_from(configuration, secrets).status_code("/readyz") == 200


def slo_window(
    window_s: float = 5.0, configuration: Configuration = None, secrets: Secrets = None
) -> dict[str, Any]:
    """P99 latency, error rate and request count over the last `window_s` seconds of traffic.

    With no live results file this probe samples `/metrics` for `window_s` seconds.
    """
    stats = live_stats(client_from(configuration, secrets), float(window_s))
    return stats.model_dump()


def p99_latency_ms(
    window_s: float = 5.0, configuration: Configuration = None, secrets: Secrets = None
) -> float:
    """P99 latency in milliseconds over the last `window_s` seconds (0.0 with no traffic)."""
    return float(slo_window(window_s, configuration, secrets)["p99_ms"])


def error_rate(
    window_s: float = 5.0, configuration: Configuration = None, secrets: Secrets = None
) -> float:
    """Share of failed requests (no answer, 429, 5xx) over the last `window_s` seconds."""
    return float(slo_window(window_s, configuration, secrets)["error_rate"])


def slo_met(
    p99_ms: float = 1000.0,
    max_error_rate: float = 0.01,
    window_s: float = 5.0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> bool:
    """True when the last `window_s` seconds kept P99 <= `p99_ms` and errors <= `max_error_rate`.

    A window without traffic breaks no objective and so counts as met; pair this probe with
    `translation_served` when the experiment runs without a load generator.
    """
    stats = slo_window(window_s, configuration, secrets)
    return stats["p99_ms"] <= float(p99_ms) and stats["error_rate"] <= float(max_error_rate)


def translation_served(
    mode: str = "auto",
    allow_degraded: bool = True,
    text: str = SAMPLE_TEXT,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> bool:
    """Send one real translation and say whether the service answered it.

    mode: "auto", "fast" or "quality", as a client would ask.
    allow_degraded: count an answer from the fallback pool or cache (`degraded: true`) as served;
    set it to False to require the asked-for tier.
    text: the text to translate.
    """
    body = {"text": text, "source_lang": "en", "target_lang": "de", "mode": mode}
    response = client_from(configuration, secrets).request_raw("POST", "/v1/translate", body)
    if response.status_code != 200:
        return False
    try:
        degraded = bool(response.json().get("degraded", False))
    except ValueError as exc:
        raise ActivityFailed(f"/v1/translate answered 200 with a body that is not JSON: {exc}.") from exc
    return allow_degraded or not degraded
