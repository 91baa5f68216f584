"""The capacity benchmark's searches are ones `rushhour capacity` accepts, its plans alternate, its records
read capacity.json (checked without booting anything)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from benchmarks.capacity import MDC_RANGE, REFERENCE_SLOS, STEP_S, mdc_scenario, search_plans, search_record
from benchmarks.mdc_whole import QUEUES
from rushhour.scenarios.capacity.job import RETRY_MAX_S, RETRY_S, CapacityJob
from rushhour.scenarios.cli.capacity import build_job
from rushhour.scenarios.spec.model import ScenarioError


def _job(scenario: str, tmp_path: Path, *, slos: tuple[str, ...] = (), low: float | None = None,
         high: float | None = None) -> CapacityJob:
    return build_job(scenario, target_url=None, slos=slos, faults="none", min_rps=low, max_rps=high, precision=0.05,
                     step_s=STEP_S, require_rps=None, out=tmp_path / "out", allow_remote=False, seed=None)


@pytest.mark.parametrize("streaming", [False, True])
def test_capacity_benchmark_mdc_search_passes_the_floor_check(tmp_path: Path, streaming: bool) -> None:
    path = tmp_path / "mdc.yaml"
    path.write_text(yaml.safe_dump(mdc_scenario("http://127.0.0.1:9", streaming=streaming)))
    job = _job(str(path), tmp_path, low=MDC_RANGE[0], high=MDC_RANGE[1])
    assert (job.settings.min_rps, job.settings.max_rps) == MDC_RANGE


def test_capacity_benchmark_mdc_range_is_the_lowest_the_p99_allows(tmp_path: Path) -> None:
    path = tmp_path / "mdc.yaml"
    path.write_text(yaml.safe_dump(mdc_scenario("http://127.0.0.1:9")))
    with pytest.raises(ScenarioError, match="needs 314 requests"):
        _job(str(path), tmp_path, low=MDC_RANGE[0] - 1, high=MDC_RANGE[1])


def test_capacity_benchmark_reference_search_builds(tmp_path: Path) -> None:
    job = _job("promo-day", tmp_path, slos=REFERENCE_SLOS)
    assert [slo.name for slo in job.slos] == list(REFERENCE_SLOS)


@pytest.mark.parametrize("name", sorted(QUEUES))
def test_capacity_benchmark_simulated_queue_searches_pass_the_floor_check(tmp_path: Path, name: str) -> None:
    queue = QUEUES[name]
    path = tmp_path / "mdc.yaml"
    path.write_text(yaml.safe_dump(mdc_scenario("http://127.0.0.1:9", queue=queue)))
    job = _job(str(path), tmp_path, low=queue.min_rps, high=queue.max_rps)
    assert job.slos[0].percentile == queue.percentile and job.slos[0].threshold_ms == queue.threshold_ms


def test_capacity_benchmark_plans_alternate_the_defaults_with_the_search_without_retry() -> None:
    order = search_plans("defaults,no-retry", "0", "ends", 2)
    defaults, plain = ("defaults", RETRY_S, RETRY_MAX_S, "steps"), ("no-retry", 0.0, None, "ends")
    assert order == [defaults, plain, defaults, plain]
    assert search_plans("retry-120", "0", "ends", 1) == [("retry-120", RETRY_S, None, "steps")]  # a fixed retry
    assert search_plans(None, "45s", "ends", 1) == [("given", 45.0, None, "ends")]


def test_capacity_benchmark_record_counts_retries_and_reads_the_drift_check() -> None:
    step = {"planned_s": 30.0, "generator": {"lag_p99_ms": 12.0, "valid": True}}
    document = {"settings": {"step_duration_s": 30.0}, "aborted": None, "conditions": [{
        "capacity_rps": 45.0, "wall_s": 600.0, "confirmed": False, "generator_bound": False,
        "machine_drift": {"changed": True, "sentence": "slower"},
        "steps": [step, step | {"planned_s": 120.0}, step | {"generator": {"lag_p99_ms": 300.0, "valid": False}}]}]}
    record = search_record(document, truth=50.0)
    assert record["found_over_true"] == 0.9 and record["minutes"] == 10.0 and record["steps"] == 3
    assert record["retries"] == 1 and record["drift_flagged"] is True and record["invalid_steps"] == 1
    assert record["lag_p99_ms_max"] == 300.0
    assert [s["planned_s"] for s in record["step_list"]] == [30.0, 120.0, 30.0]
