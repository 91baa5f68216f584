from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reports.compare import compare_runs
from reports.results import ResultsError
from reports.synth import make_results
from tests.reports.helpers import requests_frame, write_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("compare")
    return {
        "base": make_results(root / "base", n_requests=20_000, seed=3),
        "same": make_results(root / "same", n_requests=20_000, seed=3),
        "slow": make_results(root / "slow", n_requests=20_000, seed=3, slowdown=1.3),
        "noisy": make_results(root / "noisy", n_requests=20_000, seed=4),
    }


def test_compare_flags_planted_30_percent_p99_regression(runs: dict[str, Path]) -> None:
    result = compare_runs(runs["base"], runs["slow"])
    assert result.regression
    assert result.relative_change == pytest.approx(0.3, abs=0.02)
    assert result.p99_diff_ci_ms[0] > 0
    assert result.mann_whitney_p is not None and result.mann_whitney_p < 1e-6
    p99 = next(row for row in result.rows if row["metric"].startswith("P99"))
    assert p99["change"] == pytest.approx(0.3, abs=0.02)


def test_compare_passes_identical_rerun(runs: dict[str, Path]) -> None:
    result = compare_runs(runs["base"], runs["same"])
    assert not result.regression
    assert result.p99_diff_ms == 0.0 and result.relative_change == 0.0
    assert result.p99_diff_ci_ms[0] <= 0 <= result.p99_diff_ci_ms[1]


def test_compare_passes_a_rerun_with_another_seed(runs: dict[str, Path]) -> None:
    result = compare_runs(runs["base"], runs["noisy"])
    assert not result.regression
    assert any("Seeds differ" in note for note in result.notes)


def test_compare_small_change_is_not_a_regression_even_if_significant(tmp_path: Path) -> None:
    latency = np.linspace(100.0, 200.0, 5000)
    base = write_run(tmp_path / "b", requests_frame(np.linspace(0, 10, 5000), latency))
    cur = write_run(tmp_path / "c", requests_frame(np.linspace(0, 10, 5000), latency * 1.05))
    result = compare_runs(base, cur)
    assert result.p99_diff_ci_ms[0] > 0 and not result.regression
    assert "minimum" in result.reason


def test_compare_rejects_missing_directory(tmp_path: Path, runs: dict[str, Path]) -> None:
    with pytest.raises(ResultsError, match="does not exist"):
        compare_runs(tmp_path / "nope", runs["base"])
