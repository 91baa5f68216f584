"""The capacity benchmark's searches are ones `rushhour capacity` accepts (checked without booting anything)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from benchmarks.capacity import MDC_RANGE, REFERENCE_SLOS, STEP_S, mdc_scenario
from rushhour.scenarios.capacity.job import CapacityJob
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
