"""A large run's report (the narrow projection) gives the figures of the full in-memory report.

The large run is a small synthetic run with every request recorded three times over (same times,
same outcomes): its percentiles, shares and verdicts are those of the small run, its counts three
times as many. The small one goes through the full pandas path, the large one through
`rushhour.reports.large` (the row limit lowered so a test-sized run crosses it).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from benchmarks.synth import make_results
from rushhour.reports import large
from rushhour.reports.build import build_reports

COPIES = 3
pytestmark = pytest.mark.slow  # two whole reports, a few seconds


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="module")
def runs(folder: Path) -> tuple[dict, dict]:
    small = make_results(folder / "small", n_requests=12_000, duration_s=120.0)
    big = folder / "large"
    shutil.copytree(small, big)
    requests = pd.read_parquet(small / "requests.parquet")
    pd.concat([requests] * COPIES, ignore_index=True).to_parquet(big / "requests.parquet", index=False,
                                                                 row_group_size=7_000)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(large, "LARGE_ROWS", 30_000)
        return build_reports(small), build_reports(big)


def test_large_run_takes_the_narrow_path_and_says_what_it_left_out(runs: tuple[dict, dict]) -> None:
    small, big = runs
    assert not any("left out" in m for m in small["missing"])
    note = next(m for m in big["missing"] if "left out" in m)
    assert "36,000 rows" in note and "documents" in note and "1 fault window(s) were not measured" in note
    assert big["faults"] == [] and big["findings"] == []


def test_large_run_cost_is_the_same_bill_for_three_times_the_characters(runs: tuple[dict, dict]) -> None:
    small, big = runs
    assert big["cost"]["known"] and small["cost"]["known"]
    assert big["cost"]["total_usd"] == pytest.approx(small["cost"]["total_usd"])
    assert big["cost"]["chars"] == COPIES * small["cost"]["chars"]
    assert [p["pool"] for p in big["cost"]["by_pool"]] == [p["pool"] for p in small["cost"]["by_pool"]]


def test_large_run_latency_percentiles_equal_the_in_memory_ones(runs: tuple[dict, dict]) -> None:
    small, big = runs
    for section in ("latency_ms", "latency_uncorrected_ms", "latency_ok_only_ms"):
        assert big[section] == small[section]
    assert big["generator"]["schedule_lag_p99_ms"] == small["generator"]["schedule_lag_p99_ms"]
    assert big["generator"]["valid"] == small["generator"]["valid"]


def test_large_run_counts_scale_and_every_slo_and_verdict_agree(runs: tuple[dict, dict]) -> None:
    small, big = runs
    assert big["requests"] == {key: COPIES * value for key, value in small["requests"].items()}
    assert big["throughput_rps"] == pytest.approx(COPIES * small["throughput_rps"])
    assert [s["name"] for s in big["slos"]] == [s["name"] for s in small["slos"]]
    for mine, theirs in zip(big["slos"], small["slos"]):
        assert mine["met"] == theirs["met"]
        assert mine["measured"] == pytest.approx(theirs["measured"])
    assert (big["verdict"], big["verdict_reason"]) == (small["verdict"], small["verdict_reason"])


def test_large_run_writes_every_report_file(runs: tuple[dict, dict], folder: Path) -> None:
    for name in ("summary.json", "report.html", "report.md", "junit.xml"):
        assert (folder / "large" / name).stat().st_size > 0


@pytest.mark.parametrize("batch_rows", [3, 1000])
def test_read_columns_unifies_labels_across_batches_and_fills_gaps_as_the_loader_does(
        tmp_path: Path, batch_rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    path = tmp_path / "requests.parquet"
    table = pa.table({"latency_ms": [1.0, None, 3.0, 4.0, 5.0, 6.0, 7.0],
                      "status": pa.array([200, None, 503, 200, 200, 0, 200], pa.int64()),
                      "ok": [True, None, False, True, True, False, True],
                      "priority": ["paid", "free", None, "batch", "paid", "free", "batch"]})
    pq.write_table(table, path, row_group_size=2)
    monkeypatch.setattr(large, "BATCH_ROWS", batch_rows)
    frame = large.read_columns(path, ["latency_ms", "status", "ok", "priority"], ["priority"])
    assert frame["latency_ms"].isna().tolist() == [False, True, False, False, False, False, False]
    assert frame["status"].tolist() == [200, 0, 503, 200, 200, 0, 200]
    assert frame["ok"].tolist() == [True, False, False, True, True, False, True]
    assert frame["priority"].astype(str).tolist() == ["paid", "free", "", "batch", "paid", "free", "batch"]
    assert isinstance(frame["priority"].dtype, pd.CategoricalDtype)
