"""`GET /v1/status`: the cluster's state as one JSON document (see DESIGN.md)."""

from __future__ import annotations

import time

from rushhour.reference_server.gateway.cluster import Cluster
from rushhour.reference_server.gateway.components import Gateway
from rushhour.reference_server.gateway.jobs_api import body_limit
from rushhour.reference_server.gateway.service import TranslationService

SHED_REASONS = ("rate_limited", "queue_full", "early_reject", "max_wait", "cannot_meet_deadline", "unavailable")


def _node(node, now: float) -> dict[str, object]:
    return {
        "id": node.id, "pool": node.pool, "state": node.state, "breaker": node.breaker.state,
        "provider": node.provider, "batching": node.batching, "model": node.model, "pid": node.pid, "port": node.port,
        "inflight": node.inflight, "queue_depth": node.queue_depth, "expired": node.expired_total, "restarts": node.restarts,
        "cold_start_s": node.cold_start_s, "first_request_ms": node.first_request_ms, "warm": node.warm,
        "faults": node.transport.active() if node.transport else [],
        "url": node.url, "target": node.target,
    }


def _pool(cluster: Cluster, service: TranslationService, name: str) -> dict[str, object]:
    nodes = cluster.pool_nodes(name)
    batches, items = cluster.batch_totals(name)
    dispatcher = service.dispatchers[name]
    return {
        "model": cluster.config.pools[name].model,
        "nodes_alive": sum(1 for n in nodes if n.state != "down"),
        "nodes_ready": sum(1 for n in nodes if n.state == "ready"),
        "breakers_open": sum(1 for n in nodes if n.breaker.state == "open"),
        "queue_depth": dispatcher.queued() + sum(n.queue_depth for n in nodes),
        "inflight": sum(n.inflight for n in nodes),
        "slots_busy": dispatcher.busy,
        "batches_total": batches,
        "batch_items_total": items,
    }


def _shed(service: TranslationService) -> dict[str, int]:
    totals = dict.fromkeys(SHED_REASONS, 0)
    for metric in service.metrics.shed.collect():
        for sample in metric.samples:
            if sample.name.endswith("_total"):
                reason = sample.labels["reason"]
                totals[reason] = totals.get(reason, 0) + int(sample.value)
    return totals


def build_status(gateway: Gateway) -> dict[str, object]:
    cluster, service = gateway.cluster, gateway.service
    now = time.monotonic()
    nodes = list(cluster.nodes.values())
    ready = [n for n in nodes if n.state == "ready"]
    provider = next((n.provider for n in ready if n.provider != "unknown"), nodes[0].provider if nodes else "unknown")
    cache = service.cache
    pools = {name: _pool(cluster, service, name) for name in cluster.config.pools}
    for name, view in gateway.autoscaler.status().items():
        pools[name]["autoscaler"] = view
    cache_view: dict[str, object] = {
        "entries": len(cache), "bytes": cache.bytes, "max_bytes": cache.max_bytes, "evictions": cache.evictions,
        "hits": cache.hits, "misses": cache.misses, "stale_hits": cache.stale_hits, "coalesced": service.coalescer.coalesced,
    }
    if service.l2 is not None:
        cache_view.update(service.l2.status())
    return {
        "ready": cluster.ready(),
        "uptime_s": round(now - cluster.started, 3),
        "provider": provider,
        "pools": pools,
        "nodes": [_node(n, now) for n in nodes],
        "cache": cache_view,
        "jobs": gateway.jobs.status(),
        "limits": {"max_chars": gateway.config.max_chars, "max_body_bytes": gateway.config.max_body_bytes,
                   "job_body_bytes": body_limit(gateway.config)},
        "shed": _shed(service),
        "requests_total": gateway.requests_total,
    }
