"""The probe-spread benchmark's summary of repeated readings."""

from __future__ import annotations

import pytest

from benchmarks.probe_spread import VARIANTS, spread
from rushhour.scenarios.capacity import throughput


def test_probe_spread_summarises_lowest_median_highest_and_the_coefficient_of_variation() -> None:
    row = spread([40.5, 57.7, 56.4, 63.4, 60.0])
    assert (row["low"], row["median"], row["high"]) == (40.5, 57.7, 63.4)
    assert row["cv"] == pytest.approx(0.159, abs=0.001)  # SD 8.85 over a mean of 55.6
    assert spread([50.0])["cv"] == 0.0


def test_probe_spread_compares_the_shipped_probe_with_longer_levels() -> None:
    shipped, longer = VARIANTS["as shipped"], VARIANTS["longer levels"]
    assert shipped == {"level_s": throughput.LEVEL_S, "answers": throughput.LEVEL_ANSWERS}
    assert longer["level_s"] > shipped["level_s"] and longer["answers"] > shipped["answers"]
