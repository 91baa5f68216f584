from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rushhour.reports import build_reports
from rushhour.reports.measures.cost import compute_cost, node_intervals, node_seconds
from rushhour.reports.rundata.results import load_run
from rushhour.reports.schema import CostModel
from rushhour.reports.summary.aggregate import summarise
from tests.reports.helpers import requests_frame, write_run

MODEL = CostModel.model_validate({
    "source": "fixture prices", "date": "2026-11",
    "pools": {"quality": {"usd_per_node_hour": 3.6, "kind": "gpu"},
              "fast": {"usd_per_node_hour": 0.36, "kind": "cpu"}},
    "managed_api_usd_per_1k_chars": 0.02,
})


def _metrics() -> pd.DataFrame:
    t = np.arange(10.0)  # 10 scrapes, 1 s apart: quality 2 nodes (20 node-s), fast 1 (10 node-s)
    return pd.concat([pd.DataFrame({"t_s": t, "pool": "quality", "nodes_alive": 2}),
                      pd.DataFrame({"t_s": t, "pool": "fast", "nodes_alive": 1})])


def _requests() -> pd.DataFrame:
    return pd.DataFrame({
        "intended_s": [1.0, 3.0, 5.0], "ok": [True, True, False], "chars": [1000, 500, 300],
        "priority": ["paid", "free", "free"], "mode": ["quality", "fast", "fast"],
        "model": ["quality", "fast", ""],
    })


def test_node_seconds_hold_each_scrape_until_the_next() -> None:
    intervals = node_intervals(_metrics())
    assert node_seconds(intervals) == {"fast": 10.0, "quality": 20.0}
    assert node_seconds(intervals, 2.0, 4.0) == {"fast": 2.0, "quality": 4.0}


def test_cost_total_per_1k_and_per_pool() -> None:
    cost = compute_cost(_requests(), _metrics(), MODEL, [(2.0, 4.0)])
    assert cost["known"]
    assert cost["total_usd"] == pytest.approx(0.021)  # 20/3600*3.6 + 10/3600*0.36
    assert cost["chars"] == 1500  # failed request's 300 chars do not count
    assert cost["usd_per_1k_chars"] == pytest.approx(0.014)
    assert cost["vs_managed_ratio"] == pytest.approx(0.7)
    pools = {row["pool"]: row for row in cost["by_pool"]}
    assert pools["quality"]["usd"] == pytest.approx(0.02) and pools["fast"]["chars_served"] == 500
    assert (cost["source"], cost["date"]) == ("fixture prices", "2026-11")


def test_cost_allocated_to_classes_by_the_pool_they_used() -> None:
    cost = compute_cost(_requests(), _metrics(), MODEL, [])
    by_priority = {row["priority"]: row for row in cost["by_priority"]}
    assert by_priority["paid"]["usd"] == pytest.approx(0.02)
    assert by_priority["paid"]["usd_per_1k_chars"] == pytest.approx(0.02)
    assert by_priority["free"]["usd_per_1k_chars"] == pytest.approx(0.002)
    assert sum(row["usd"] for row in cost["by_mode"]) == pytest.approx(cost["total_usd"])


def test_idle_pool_cost_is_shared_by_all_characters() -> None:
    requests = _requests().assign(model=["quality", "quality", ""])
    cost = compute_cost(requests, _metrics(), MODEL, [])
    by_priority = {row["priority"]: row for row in cost["by_priority"]}
    # fast served nothing: its 0.001 USD splits 1000:500; quality's 0.02 splits 1000:500.
    assert by_priority["paid"]["usd"] == pytest.approx(0.021 * 1000 / 1500)


def test_cost_during_fault_windows() -> None:
    during = compute_cost(_requests(), _metrics(), MODEL, [(2.0, 4.0)])["during_faults"]
    assert during["usd"] == pytest.approx(0.0042)  # 4 quality + 2 fast node-seconds
    assert during["chars"] == 500


def test_cost_unknown_without_metrics_or_model() -> None:
    assert compute_cost(_requests(), None, MODEL, [])["known"] is False
    assert "server_metrics" in compute_cost(_requests(), None, MODEL, [])["reason"]
    assert "no cost model" in compute_cost(_requests(), _metrics(), None, [])["reason"]


def test_unpriced_pool_is_named_and_left_out() -> None:
    metrics = pd.concat([_metrics(), pd.DataFrame({"t_s": np.arange(10.0), "pool": "edge", "nodes_alive": 1})])
    cost = compute_cost(_requests(), metrics, MODEL, [])
    assert cost["unpriced_pools"] == ["edge"] and cost["total_usd"] == pytest.approx(0.021)


def test_cost_over_the_schedule_window_served_and_computed(tmp_path: Path) -> None:
    # Scrapes every second from -3 s (boot) to 66 s (teardown): 2 quality + 1 fast node. The
    # schedule window is [0, 60): 120 quality and 60 fast node-seconds -> 0.12 + 0.006 USD.
    # 600 ok requests of 100 chars at 10/s, one in four a cache hit: 60,000 chars served,
    # 45,000 computed.
    t = np.arange(-3.0, 67.0)
    metrics = pd.concat([pd.DataFrame({"t_s": t, "pool": "quality", "nodes_alive": 2}),
                         pd.DataFrame({"t_s": t, "pool": "fast", "nodes_alive": 1})])
    intended = np.arange(600) * 0.1
    frame = requests_frame(intended, np.full(600, 80.0), cached=np.arange(600) % 4 == 0)
    scenario = {"traffic": {"duration_s": 60.0}, "cost": MODEL.model_dump()}
    root = write_run(tmp_path / "run", frame, scenario=scenario, metrics=metrics,
                     events=[{"type": "run_end", "t_s": 66.5, "duration_s": 66.5}])
    summary = summarise(load_run(root))
    cost = summary["cost"]
    assert cost["window_s"] == [0.0, 60.0] and cost["node_seconds"] == pytest.approx(180.0)
    assert cost["total_usd"] == pytest.approx(0.126)
    assert (cost["chars_served"], cost["chars_computed"]) == (60_000, 45_000)
    assert cost["usd_per_1k_chars_served"] == pytest.approx(0.0021) == cost["usd_per_1k_chars"]
    assert cost["usd_per_1k_chars_computed"] == pytest.approx(0.0028)
    pools = {row["pool"]: row for row in cost["by_pool"]}
    assert pools["quality"]["chars_computed"] == 45_000 and pools["quality"]["node_seconds"] == 120.0
    assert summary["throughput_rps"] == pytest.approx(10.0)  # not 600 / 66.5


@pytest.mark.slow
def test_cost_section_defines_served_and_computed(tmp_path: Path) -> None:
    frame = requests_frame(np.arange(10.0), np.full(10, 50.0), cached=[True] * 5 + [False] * 5)
    metrics = pd.DataFrame({"t_s": np.arange(10.0), "pool": "quality", "nodes_alive": 1})
    root = write_run(tmp_path / "run", frame, scenario={"cost": MODEL.model_dump()}, metrics=metrics)
    build_reports(root)
    html = (root / "report.html").read_text()
    assert "per 1k characters served" in html and "per 1k characters computed" in html
    assert "a cache hit costs no compute" in html
    assert "per 1k chars computed (cache hits excluded)" in (root / "report.md").read_text()
