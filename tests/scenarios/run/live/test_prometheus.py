"""End to end: a short drill with one fault watched by a real Prometheus.

Prometheus finds the harness and the embedded server through the harness's `/sd` list and
scrapes both every second; PromQL over its HTTP API must then tell the drill's story the way
`requests.parquet` and `events.jsonl` tell it, and every panel of the shipped dashboard must
show data. Skips, saying why, without Debian's `prometheus` package.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
import yaml

from rushhour.kernel.processes import free_port
from tests.support.promserver import PrometheusServer, binaries, check_metrics
from tests.support.traffic import short_texts

REPO = Path(__file__).resolve().parents[4]
DASHBOARD = REPO / "reports" / "grafana" / "rushhour-drill.json"
FAULT = "network-partition"
GRAFANA_MACROS = {"$__rate_interval": "10s", "$__interval": "1s"}


def _scenario(tmp_path: Path) -> Path:
    spec = {
        "name": "live-test",
        "traffic": {"model": str(short_texts(tmp_path, 5)), "duration": "20s", "seed": 5},  # no documents: see the helper
        "target": {"embedded": {"nodes": 2, "max_batch_size": 4}},
        # what is tested here is not the generator's validity: a node's restart shares the two cores
        # with it and with the tests beside it (a lag P99 of 325 ms was seen), so its limit leaves room
        "load": {"processes": 1, "max_lag_p99_ms": 2000},
        "slos": [{"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 3000},
                 {"name": "paid-p99", "kind": "latency", "percentile": 99, "threshold_ms": 2000, "priority": "paid"},
                 {"name": "availability", "kind": "availability", "objective": 0.9}],
        "cost": {"source": "test prices", "date": "2026-12-01",
                 "pools": {"quality": {"usd_per_node_hour": 2.5, "kind": "gpu"}, "fast": {"usd_per_node_hour": 0.2, "kind": "cpu"}}},
        "chaos": [{"at": "00:00:06", "experiment": str(REPO / "experiments" / f"{FAULT}.json"), "hold": "5s",
                   "env": {"RUSHHOUR_SLO_WINDOW_S": "1", "RUSHHOUR_SLO_P99_MS": "5000", "RUSHHOUR_SLO_MAX_ERROR_RATE": "0.9"}}],
    }
    path = tmp_path / "live-test.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _wall(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def _values(result: list[dict[str, Any]]) -> list[tuple[float, float]]:
    return [(float(t), float(v)) for series in result for t, v in series["values"]]


def _expositions(sd_url: str, proc: subprocess.Popen[bytes], timeout_s: float = 240.0) -> dict[str, str]:
    """While the drill runs: both endpoints' /metrics, found through the harness's /sd list."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            groups = httpx.get(sd_url, timeout=2.0).json()
        except (httpx.HTTPError, ValueError):
            groups = []
        if len(groups) == 2:
            time.sleep(3.0)  # some requests in, so every family has samples
            return {g["labels"]["job"]: httpx.get(f"http://{g['targets'][0]}{g['labels'].get('__metrics_path__', '/metrics')}",
                                                  timeout=5.0).text for g in groups}
        time.sleep(0.5)
    raise AssertionError("the harness never listed the drilled server in /sd")


@pytest.fixture()
def prometheus(tmp_path: Path) -> Any:
    binaries()
    port = free_port()
    server = PrometheusServer(tmp_path / "prom", [{"job_name": "rushhour", "http_sd_configs": [
        {"url": f"http://127.0.0.1:{port}/sd", "refresh_interval": "1s"}]}])
    server.workdir.mkdir()
    server.start()
    try:
        yield server, port
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.xdist_group("cpu-b")
def test_live_drill_in_prometheus_matches_results_and_feeds_every_panel(
        tmp_path: Path, prometheus: tuple[PrometheusServer, int], drill_process: list) -> None:
    prom, port = prometheus
    out = tmp_path / "results"
    proc = subprocess.Popen([sys.executable, "-m", "rushhour.scenarios.cli.main", "run", str(_scenario(tmp_path)), "--out", str(out),
                             "--metrics-port", str(port)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    drill_process.append(proc)
    texts = _expositions(f"http://127.0.0.1:{port}/sd", proc)
    output = proc.communicate(timeout=300)[0].decode()
    assert proc.returncode in (0, 1), output
    assert set(texts) == {"rushhour-harness", "rushhour-server"}
    for job, text in texts.items():
        assert check_metrics(text) == "", f"promtool check metrics on {job}"

    summary = json.loads((out / "summary.json").read_text())
    assert summary["live"]["metrics_port"] == port
    start, end = _wall(summary["live"]["wall_start"]), _wall(summary["live"]["wall_end"])
    time.sleep(2.0)  # the last scrape lands
    window = (start - 5.0, end + 3.0)
    requests = pd.read_parquet(out / "requests.parquet")

    shed = _values(prom.query_range("sum(rushhour_drill_shed_total)", *window))
    assert shed and shed[-1][1] == int(requests["status"].isin([429, 503]).sum())
    sent = _values(prom.query_range("sum(rushhour_drill_sent_total)", *window))
    assert sent[-1][1] == int(requests["sent_s"].notna().sum())

    p99 = prom.query_range("histogram_quantile(0.99, sum by (le, priority) "
                           "(rate(rushhour_drill_latency_seconds_bucket[10s])))", *window)
    seen = {s["metric"]["priority"] for s in p99 if any(math.isfinite(float(v)) for _, v in s["values"])}
    assert seen == set(requests.loc[requests["done_s"].notna(), "priority"].astype(str)), seen

    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    held = next(e for e in events if e["type"] == "fault_start" and e["name"] == FAULT)
    healed = next(e for e in events if e["type"] == "fault_end" and e["name"] == FAULT)
    began, ended = _wall(held["wall"]), _wall(healed["wall"])
    gauge = _values(prom.query_range(f'rushhour_drill_fault_active{{experiment="{FAULT}"}}', *window))
    assert any(v == 1.0 for _, v in gauge) and any(v == 0.0 for _, v in gauge)
    for t, v in gauge:  # one scrape (1 s) and one step of slack at each edge
        if began + 2.0 <= t <= ended - 2.0:
            assert v == 1.0, (t, began, ended)
        elif t < began - 2.0 or t > ended + 2.0:
            assert v == 0.0, (t, began, ended)

    _every_panel_has_data(prom, window)


def _every_panel_has_data(prom: PrometheusServer, window: tuple[float, float]) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [(p["title"], t["expr"]) for p in dashboard["panels"] for t in p["targets"]]
    queries += [(a["name"], a["expr"]) for a in dashboard["annotations"]["list"]]
    empty = []
    for title, expr in queries:
        for macro, value in GRAFANA_MACROS.items():
            expr = expr.replace(macro, value)
        values = [v for _, v in _values(prom.query_range(expr, *window)) if math.isfinite(v)]
        if not values:
            empty.append(f"{title}: {expr}")
    assert not empty, "queries without data:\n" + "\n".join(empty)
