"""The simulated first-calibration search: the plan as it is now against a first step at the knee."""

from __future__ import annotations

import numpy as np

from benchmarks.calibration_sim import _one, simulate
from rushhour.scenarios.capacity.calibrate import CALIBRATION_PRECISION


def test_calibration_sim_never_reports_above_a_sharp_knee_and_confirms_within_a_precision() -> None:
    rng = np.random.default_rng(3)
    for precision in (0.05, CALIBRATION_PRECISION):
        for _ in range(50):
            seconds, steps, found = _one(rng, "as now", fuzz=1e-4, ratio=1.0, precision=precision)
            assert 1.0 / (1.0 + precision) - 1e-9 <= found <= 1.0 and steps >= 3 and seconds > 0


def test_calibration_sim_starting_above_the_knee_costs_less_time_for_the_same_capacity() -> None:
    rows = simulate(300, fuzz=0.02, ratio=1.1)
    now, before = rows["as now"], rows["at the knee"]
    # on average and in the slowest tenth (with a calibration's short windows nearly every search
    # of either plan ends within 95 s, so that share no longer tells them apart)
    assert now["mean_s"] < before["mean_s"] and now["p90_s"] < before["p90_s"]
    assert abs(now["capacity_over_knee_median"] - before["capacity_over_knee_median"]) < 0.02


def test_calibration_sim_first_step_one_move_above_the_estimate_beats_its_neighbours() -> None:
    on_the_probe = simulate(300, fuzz=0.02, ratio=1.0, start_moves=(-1, 1))
    probe_low = simulate(300, fuzz=0.02, ratio=1.1, start_moves=(-1, 1))
    assert set(on_the_probe) == {"as now", "at the knee", "as now, first step -1 move", "as now, first step +1 move"}
    # one move higher pays for a failure it did not need; one lower, for a passing step it did not need
    assert on_the_probe["as now"]["mean_s"] < on_the_probe["as now, first step +1 move"]["mean_s"]
    assert probe_low["as now"]["mean_s"] < probe_low["as now, first step -1 move"]["mean_s"]
