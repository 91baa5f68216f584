"""Prometheus metrics of the gateway, in a registry of its own (one per app, so tests can boot many).

Every label value comes from a bounded set the server knows (priority classes, pools, node ids,
modes, status codes, reasons), never from a client's raw input: a label set lives as long as the
process, so one request with a fresh value would grow `/metrics` for good.
"""

from __future__ import annotations

from collections.abc import Container

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.4, 0.6, 0.8, 1.0, 1.5, 2.0,
                   3.0, 5.0, 8.0, 13.0, 21.0, 34.0)
TOKEN_GAP_BUCKETS = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
BATCH_BUCKETS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128, 256)
NODE_STATES = ("starting", "warming", "ready", "draining", "down")
BREAKER_STATES = ("closed", "half_open", "open")
INVALID_LABEL = "invalid"


def bounded_label(value: str, allowed: Container[str]) -> str:
    """`value` when it is one of `allowed`, else "invalid"."""
    return value if value in allowed else INVALID_LABEL


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("rushhour_requests", "Translate requests answered.", ["status", "mode", "priority", "model"], registry=r)
        self.request_seconds = Histogram(
            "rushhour_request_duration_seconds", "Gateway time per translate request.", ["mode", "priority"],
            buckets=LATENCY_BUCKETS, registry=r
        )
        self.queue_seconds = Histogram("rushhour_queue_duration_seconds", "Time waiting for a batch on the node.",
                                       ["pool"], buckets=LATENCY_BUCKETS, registry=r)
        self.admission_seconds = Histogram(
            "rushhour_admission_wait_seconds", "Time waiting in the gateway's priority queue.", ["pool", "priority"],
            buckets=LATENCY_BUCKETS, registry=r
        )
        self.compute_seconds = Histogram("rushhour_compute_duration_seconds",
                                         "Model time of the batch a request ran in.", ["pool"],
                                         buckets=LATENCY_BUCKETS, registry=r)
        self.batch_size = Histogram("rushhour_batch_size", "Requests per batch, as seen per request.", ["pool"],
                                    buckets=BATCH_BUCKETS, registry=r)
        self.queue_depth = Gauge("rushhour_queue_depth", "Requests waiting in the gateway per pool and priority.",
                                 ["pool", "priority"], registry=r)
        self.node_queue_depth = Gauge("rushhour_node_queue_depth", "Requests waiting in a node's batcher.", ["node", "pool"], registry=r)
        self.inflight = Gauge("rushhour_inflight", "Requests sent to nodes and not yet answered.", ["pool"], registry=r)
        self.cache_hits = Counter("rushhour_cache_hits", "Cache hits by level.", ["level"], registry=r)
        self.cache_misses = Counter("rushhour_cache_misses", "Cache misses.", registry=r)
        self.coalesced = Counter("rushhour_coalesced", "Requests that shared an identical in-flight computation.", registry=r)
        self.shed = Counter("rushhour_shed", "Requests rejected to protect the service, by reason.", ["reason", "priority"], registry=r)
        self.degraded = Counter("rushhour_degraded", "Answers served degraded, by fallback.", ["fallback"], registry=r)
        self.retries = Counter("rushhour_retries", "Retries on another node after a connection failure.", ["pool"], registry=r)
        self.node_state = Gauge("rushhour_node_state", "1 for the state a node is in.", ["node", "pool", "state"], registry=r)
        self.breaker_state = Gauge("rushhour_breaker_state", "1 for the state a node's breaker is in.", ["node", "state"], registry=r)
        self.breaker_transitions = Counter("rushhour_breaker_transitions", "Breaker state changes.", ["node", "to"], registry=r)
        self.provider = Gauge("rushhour_execution_provider",
                              "1 for the ONNX Runtime execution provider a node uses.", ["node", "pool", "provider"],
                              registry=r)
        self.cold_start_seconds = Gauge("rushhour_node_cold_start_seconds", "Node process start to ready.", ["node"], registry=r)
        self.first_request_seconds = Gauge("rushhour_node_first_request_seconds",
                                           "Model time of a node's first batch.", ["node"], registry=r)
        self.node_restarts = Counter("rushhour_node_restarts", "Node processes restarted.", ["node", "reason"], registry=r)
        self.nodes = Gauge("rushhour_pool_nodes", "Nodes per pool by readiness.", ["pool", "ready"], registry=r)
        self.faults = Gauge("rushhour_faults_active", "Faults injected and active, per node and kind.", ["node", "kind"], registry=r)
        self.ttft_seconds = Histogram(
            "rushhour_time_to_first_token_seconds", "Streamed requests: arrival to first piece sent.",
            ["endpoint", "priority"], buckets=LATENCY_BUCKETS, registry=r
        )
        self.inter_token_seconds = Histogram(
            "rushhour_inter_token_seconds", "Streamed requests: time between consecutive pieces.",
            ["endpoint", "priority"], buckets=TOKEN_GAP_BUCKETS, registry=r
        )
        self.node_active_rows = Gauge("rushhour_node_active_rows",
                                      "Rows in a node's running decode (continuous batching).", ["node", "pool"],
                                      registry=r)
        self.node_tokens_per_second = Gauge("rushhour_node_tokens_per_second",
                                            "Output tokens a node decoded per second, over its last health reads.",
                                            ["node", "pool"], registry=r)
        self.decode_steps = Counter("rushhour_decode_steps",
                                    "Batches (dynamic) or decode steps (continuous) run, per pool.", ["pool"],
                                    registry=r)
        self.decode_rows = Counter(
            "rushhour_decode_rows",
            "Requests per batch (dynamic) or rows per decode step (continuous), summed; / decode_steps = active rows per step.",
            ["pool"], registry=r
        )
        self.scale_events = Counter("rushhour_scale_events", "Pool scale changes.", ["pool", "direction"], registry=r)

    def set_node_state(self, node: str, pool: str, state: str) -> None:
        for s in NODE_STATES:
            self.node_state.labels(node, pool, s).set(1 if s == state else 0)

    def set_breaker_state(self, node: str, state: str) -> None:
        for s in BREAKER_STATES:
            self.breaker_state.labels(node, s).set(1 if s == state else 0)
