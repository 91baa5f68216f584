"""The shipped Grafana dashboard asks only for what the exporters expose.

Every metric a panel or annotation query names must be one the harness's live endpoint
(`DrillCollector`) or the reference server's registry exposes, under the sample name Prometheus
stores (`_total` for a counter, `_bucket`/`_sum`/`_count` for a histogram), and every label a
query matches on must be one of that metric's labels. A renamed metric, a dropped label or a typo
in a query fails here without booting Prometheus.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from pathlib import Path

import pytest
from prometheus_client.registry import Collector

from rushhour.reference_server.gateway.metrics import Metrics
from rushhour.scenarios.cli.run import prepare
from rushhour.scenarios.run.live.metrics import DrillCollector
from rushhour.scenarios.run.live.state import LiveState
from rushhour.scenarios.spec.plan import Overrides

DASHBOARD = Path(__file__).resolve().parents[3] / "reports" / "grafana" / "rushhour-drill.json"
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",), "info": ("_info",)}
METRIC = re.compile(r"\b(rushhour_[a-z0-9_]+)\b(\{[^}]*\})?")
MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")


def _queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return ([t["expr"] for p in dashboard["panels"] for t in p["targets"]]
            + [a["expr"] for a in dashboard["annotations"]["list"]])


def _exposed(collectors: Iterable[Collector]) -> dict[str, set[str]]:
    """Sample name -> its labels (`le` on a histogram's buckets), for every family the collectors yield."""
    exposed: dict[str, set[str]] = {}
    for collector in collectors:
        for family in collector.collect():
            labels = {label for sample in family.samples for label in sample.labels}
            labels |= set(getattr(family, "_labelnames", ()))
            for suffix in SUFFIXES[family.type]:
                exposed[family.name + suffix] = labels | ({"le"} if suffix == "_bucket" else set())
    return exposed


@pytest.fixture(scope="module")
def exposed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    folder = tmp_path_factory.mktemp("live")
    plan = prepare("scenarios/smoke.yaml", Overrides(), allow_remote=False)
    plan.schedule.to_parquet(folder / "schedule.parquet", index=False)
    state = LiveState(plan, folder)
    state.begin(time.time() - 1.0, "http://127.0.0.1:8123")
    server = Metrics()
    for pool, ready in (("quality", "true"), ("fast", "false")):  # labelled families show their labels once used
        server.nodes.labels(pool=pool, ready=ready).set(1)
    return _exposed([DrillCollector(state), server.registry])


def test_dashboard_queries_name_only_metrics_the_exporters_expose(exposed: dict[str, set[str]]) -> None:
    named = {name for expr in _queries() for name, _ in METRIC.findall(expr)}
    assert len(named) > 20, f"the query parser found only {sorted(named)}: it proves nothing"
    assert sorted(named - exposed.keys()) == []


def test_dashboard_label_matchers_name_labels_the_metric_has(exposed: dict[str, set[str]]) -> None:
    selectors = [(name, selector) for expr in _queries() for name, selector in METRIC.findall(expr) if selector]
    assert selectors, "no query matches on a label: the check proves nothing"
    wrong = [f"{name}{selector}" for name, selector in selectors
             if not set(MATCHER.findall(selector)) <= exposed.get(name, set())]
    assert wrong == []


def test_dashboard_has_a_panel_for_every_refusal_counter(exposed: dict[str, set[str]]) -> None:
    refusals = {"rushhour_drill_refused_events_total", "rushhour_drill_target_events_total",
                "rushhour_drill_target_events_malformed_total", "rushhour_drill_cluster_dropped_messages_total",
                "rushhour_drill_cluster_refused_nodes_total"}
    assert refusals <= exposed.keys()
    named = {name for expr in _queries() for name, _ in METRIC.findall(expr)}
    assert refusals <= named


def test_query_parser_catches_a_misspelt_metric_and_label(exposed: dict[str, set[str]]) -> None:
    expr = 'sum(rushhour_drill_target_event_total{knd="other"})'
    assert [name for name, _ in METRIC.findall(expr)] == ["rushhour_drill_target_event_total"]
    assert "rushhour_drill_target_event_total" not in exposed
    assert not {"knd"} <= exposed["rushhour_drill_target_events_total"]
