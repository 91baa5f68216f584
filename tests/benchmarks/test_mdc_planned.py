"""A calibration's planned searches (benchmarks/mdc_planned.py): the relaxation warm-up against the
fixed one where the queue relaxes slowly, on seeds both rules share."""

from __future__ import annotations

from benchmarks.mdc_planned import LOOSE, planned_searches

SEARCHES = 60


def test_relaxation_warmups_land_above_a_slowly_relaxing_queues_truth_less_often_for_longer_steps() -> None:
    """The queue whose knee lies at 0.96 of its throughput, the probe reading 10% low: the steps
    near the knee sit past the probed throughput, so they warm up for their whole window, and
    fewer of their passes are the kind one of a queue still filling."""
    fixed = planned_searches(LOOSE, read=0.9, warmup="fixed", searches=SEARCHES, seed=17)
    relaxed = planned_searches(LOOSE, read=0.9, warmup="relaxation", searches=SEARCHES, seed=17)
    assert isinstance(fixed["above_truth"], float) and isinstance(relaxed["above_truth"], float)
    assert relaxed["above_truth"] <= fixed["above_truth"] - 0.1, (fixed, relaxed)
    assert isinstance(fixed["step_seconds_mean"], float) and isinstance(relaxed["step_seconds_mean"], float)
    assert fixed["step_seconds_mean"] < relaxed["step_seconds_mean"] <= 2.0 * fixed["step_seconds_mean"]


def test_an_exact_probe_keeps_the_relaxation_warmups_search_at_or_below_the_truth() -> None:
    row = planned_searches(LOOSE, read=1.0, warmup="relaxation", searches=SEARCHES, seed=17)
    interval = row["above_truth_ci95"]
    assert isinstance(interval, list) and interval[0] <= 0.05, row
