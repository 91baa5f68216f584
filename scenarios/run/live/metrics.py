"""The harness's own Prometheus endpoint (`rushhour run --metrics-port PORT`).

What users felt, while the drill runs: client-side latency from the intended send time (and
service time beside it) by priority, kind, mode and phase; offered, sent, completed, ok, failed,
shed, degraded and cached requests; generator lag and CPU; the lines of `events.jsonl` refused;
the target's events by kind, its malformed ones and, across hosts, the cluster messages dropped and
nodes refused (`rushhour.scenarios.run.live.refusals`); one gauge per chaos experiment (1 while
held); the current phase; each SLO's good/bad events and burn rates. Every label set is
bounded by the scenario (its priorities, kinds, modes, phases, SLOs and experiments), never by
requests. Names start with `rushhour_drill_`, apart from the reference server's `rushhour_`.

The collector reads the `LiveState` at scrape time under its lock; the HTTP server serves the
drill's own registry (prometheus_client's WSGI app) and a service-discovery list, bound to
127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import Callable, Iterable, Iterator
from socketserver import ThreadingMixIn
from threading import Thread
from typing import Any
from urllib.parse import urlsplit
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import numpy as np
from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from rushhour.scenarios.run.live.fold import COUNTERS, LABELS, HistogramState
from rushhour.scenarios.run.live.state import LiveState
from rushhour.scenarios.run.target_events import OTHER_KIND, TARGET_KINDS

PREFIX = "rushhour_drill"
DEFAULT_HOST = "127.0.0.1"
_HELP = {
    "offered": "Scheduled requests whose intended send time has come.",
    "sent": "Requests that left the generator.",
    "completed": "Requests that got an HTTP answer (any status).",
    "ok": "Requests answered 2xx.",
    "failed": "Attempted requests that did not succeed (error status, no answer, or given up).",
    "shed": "Requests the service shed (429 or 503).",
    "degraded": "Ok answers marked degraded.",
    "cached": "Ok answers served from a cache.",
    "ok_chars": "Characters of ok answers (the denominator of cost per 1k characters).",
}


class LiveMetricsError(Exception):
    """The metrics endpoint could not be opened (the port is taken, the address is wrong)."""


class DrillCollector(Collector):
    """Turns a LiveState into metric families at scrape time."""

    def __init__(self, state: LiveState) -> None:
        self.state = state

    def collect(self) -> Iterator[Metric]:
        state = self.state
        with state.lock:
            state.read_events()
            if state.started:
                state.fold.advance(state.elapsed())
            yield from self._run_info()
            yield from self._requests()
            yield from self._generator()
            yield from self._refusals()
            yield from self._faults_and_phase()
            yield from self._slos()
            yield from self._cost()

    def _run_info(self) -> Iterator[Metric]:
        state = self.state
        info = GaugeMetricFamily(f"{PREFIX}_info", "The drill being run (always 1).", labels=["scenario", "run"])
        info.add_metric([state.plan.scenario.name, state.run_name], 1.0)
        yield info
        yield GaugeMetricFamily(f"{PREFIX}_start_time_seconds", "Wall-clock time the load started (Unix seconds; 0 before).",
                                value=state.t0)
        yield GaugeMetricFamily(f"{PREFIX}_elapsed_seconds", "Seconds since the load started.", value=state.elapsed())
        yield GaugeMetricFamily(f"{PREFIX}_duration_seconds", "Planned length of the schedule.", value=state.plan.duration_s)

    def _requests(self) -> Iterator[Metric]:
        fold = self.state.fold
        for name in ("offered", *COUNTERS):
            family = CounterMetricFamily(f"{PREFIX}_{name}", _HELP[name], labels=list(LABELS))
            values = fold.offered if name == "offered" else fold.counters[name]
            for group, value in zip(fold.groups, values):
                family.add_metric(list(group), float(value))
            yield family
        yield _histogram(f"{PREFIX}_latency_seconds", "Latency from the intended send time to the end "
                         "(answer, error or give-up), every attempt.", fold.latency, fold.groups)
        yield _histogram(f"{PREFIX}_service_seconds", "Latency from the actual send to the answer.",
                         fold.service, fold.groups)

    def _generator(self) -> Iterator[Metric]:
        fold = self.state.fold
        yield _histogram(f"{PREFIX}_schedule_lag_seconds", "How late the generator sent each request "
                         "(sent - intended).", fold.lag, [()], labels=())
        yield GaugeMetricFamily(f"{PREFIX}_generator_cpu_ratio", "CPU of the load generator processes "
                                "(1.0 = one core).", value=self.state.cpu_ratio)
        yield CounterMetricFamily(f"{PREFIX}_refused_events", "Lines of events.jsonl the event models refused "
                                  "(malformed, or posing as a mark they are not): left out of the live figures.",
                                  value=float(len(self.state.refused_events)))

    def _refusals(self) -> Iterator[Metric]:
        refusals = self.state.refusals
        kinds = CounterMetricFamily(f"{PREFIX}_target_events", "The target's own events by kind; `other`: a kind "
                                    "the target does not have (posing as a harness mark), kept apart.", labels=["kind"])
        for kind in sorted(TARGET_KINDS | {OTHER_KIND}):
            kinds.add_metric([kind], float(refusals.target_kinds[kind]))
        yield kinds
        yield CounterMetricFamily(f"{PREFIX}_target_events_malformed", "Entries of the target's event list that "
                                  "could not be read as events (skipped).", value=float(refusals.malformed_target_events))
        yield CounterMetricFamily(f"{PREFIX}_cluster_dropped_messages", "Across hosts: messages the master dropped "
                                  "(malformed, unauthenticated, replayed, or naming another node).",
                                  value=float(refusals.cluster_dropped))
        yield CounterMetricFamily(f"{PREFIX}_cluster_refused_nodes", "Across hosts: nodes the master refused "
                                  "(wrong secret, no free worker index, another version).",
                                  value=float(refusals.cluster_refused))

    def _faults_and_phase(self) -> Iterator[Metric]:
        state = self.state
        faults = GaugeMetricFamily(f"{PREFIX}_fault_active", "1 while the chaos experiment is held.",
                                   labels=["experiment"])
        for name, since in state.faults.items():
            faults.add_metric([name], 0.0 if since is None else 1.0)
        yield faults
        phase = GaugeMetricFamily(f"{PREFIX}_phase", "1 for the phase of the traffic model now.", labels=["phase"])
        current = state.phase()
        for name in state.phase_names():
            phase.add_metric([name], 1.0 if name == current else 0.0)
        yield phase

    def _slos(self) -> Iterator[Metric]:
        board = self.state.slos
        good = CounterMetricFamily(f"{PREFIX}_slo_good", "Good events per SLO (the report's semantics).", labels=["slo"])
        bad = CounterMetricFamily(f"{PREFIX}_slo_bad", "Bad events per SLO: they spend the error budget.", labels=["slo"])
        allowed = GaugeMetricFamily(f"{PREFIX}_slo_allowed_bad_ratio", "The error budget as a share of events.", labels=["slo"])
        threshold = GaugeMetricFamily(f"{PREFIX}_slo_threshold_seconds", "A latency SLO's threshold (the SLO line).",
                                      labels=["slo", "priority"])
        for tally in board.tallies:
            name = tally.spec.name
            good.add_metric([name], float(tally.good))
            bad.add_metric([name], float(tally.bad))
            allowed.add_metric([name], tally.spec.allowed_bad_share)
            if tally.threshold_s is not None:
                threshold.add_metric([name, tally.spec.priority or "all"], tally.threshold_s)
        burn = GaugeMetricFamily(f"{PREFIX}_slo_burn_rate", "Bad share over a trailing page-rule window "
                                 "(model-clock name), over the allowed share.", labels=["slo", "window"])
        for (name, window), rate in board.burn_rates(self.state.elapsed()).items():
            burn.add_metric([name, window], rate)
        yield from (good, bad, allowed, threshold, burn)

    def _cost(self) -> Iterator[Metric]:
        cost = self.state.plan.scenario.cost
        price = GaugeMetricFamily(f"{PREFIX}_pool_price_usd_per_node_hour", "The scenario's price of one node "
                                  "of a pool (to turn the server's node counts into a cost rate).", labels=["pool"])
        for pool, entry in (cost.pools.items() if cost is not None else ()):
            price.add_metric([pool], entry.usd_per_node_hour)
        yield price


def _histogram(name: str, documentation: str, state: HistogramState, groups: list[tuple[str, ...]],
               labels: tuple[str, ...] = LABELS) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, documentation, labels=list(labels))
    bounds = [*(f"{b:g}" for b in state.buckets), "+Inf"]
    cumulative = np.cumsum(state.counts, axis=1)
    for i, group in enumerate(groups):
        buckets = [(bound, float(count)) for bound, count in zip(bounds, cumulative[i])]
        family.add_metric(list(group), buckets, float(state.sums[i]))
    return family


def sd_targets(own: str, target_url: str | None) -> list[dict[str, object]]:
    """Prometheus HTTP service discovery: this endpoint, and the drilled service once known."""
    groups: list[dict[str, object]] = [{"targets": [own], "labels": {"job": "rushhour-harness"}}]
    if target_url:
        url = urlsplit(target_url)
        groups.append({"targets": [url.netloc], "labels": {
            "job": "rushhour-server", "__scheme__": url.scheme or "http",
            "__metrics_path__": url.path.rstrip("/") + "/metrics"}})
    return groups


def advertised(bound: str, port: int, request_host: str) -> str:
    """The HOST:PORT `/sd` lists for this endpoint: never 0.0.0.0 or ::, which no scraper can
    reach; for a wildcard bind, the address the asking scraper used (its Host header), else this
    host's name."""
    host = bound
    if _unspecified(bound):
        asked = urlsplit(f"//{request_host}").hostname if request_host else None
        host = asked if asked and not _unspecified(asked) else socket.gethostname()
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return host == ""


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
        """Scrapes every second would flood the drill's output."""


class MetricsServer:
    """The drill's registry over HTTP: `/metrics` (any path, like prometheus_client's server) and
    `/sd`, Prometheus HTTP service discovery listing this endpoint and the drilled service, so one
    scrape config finds an embedded server on whatever port it got. `close()` frees the port."""

    def __init__(self, state: LiveState, *, port: int, host: str = DEFAULT_HOST) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(DrillCollector(state))
        self._state = state
        self._metrics_app = make_wsgi_app(self.registry)
        server_class = type("_Server", (_ThreadingServer,), {"address_family": socket.AF_INET6 if ":" in host else socket.AF_INET})
        try:
            self._server: WSGIServer = make_server(host, port, self._app, server_class, handler_class=_QuietHandler)
        except OSError as exc:
            raise LiveMetricsError(f'--metrics-port: cannot listen on {host}:{port}: {exc.strerror or exc}.') from exc
        self._thread = Thread(target=self._server.serve_forever, name="rushhour-live-metrics", daemon=True)
        self._thread.start()
        self.host = host
        self.port = int(self._server.server_port)

    def _app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/sd":
            own = advertised(self.host, self.port, str(environ.get("HTTP_HOST") or ""))
            body = json.dumps(sd_targets(own, self._state.target_url)).encode()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        return self._metrics_app(environ, start_response)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5.0)
