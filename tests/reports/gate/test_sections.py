"""One baseline run: the percentile ratio's noise read from the two runs' time sections."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from rushhour.reports.gate.sections import SECTIONS, section_half_width


def test_section_half_width_is_student_t_on_the_sections_spread() -> None:
    # every section of the current run is exactly r_s times its baseline section, so each
    # section's log ratio is log r_s and the half-width is t(7) x sd(log r_s) / sqrt(8)
    base = np.tile(np.arange(1.0, 201.0), SECTIONS)
    factors = np.linspace(1.0, 1.4, SECTIONS)
    current = base * np.repeat(factors, 200)
    half = section_half_width(current, base, 99.0, 0.95)
    expected = special.stdtrit(SECTIONS - 1, 0.975) * np.std(np.log(factors), ddof=1) / np.sqrt(SECTIONS)
    assert half == pytest.approx(expected)


def test_section_half_width_needs_a_request_past_the_percentile_in_every_section() -> None:
    rng = np.random.default_rng(1)
    assert section_half_width(rng.random(400), rng.random(400), 99.0, 0.95) is None
    assert section_half_width(rng.random(800), rng.random(800), 99.0, 0.95) is not None


def test_section_half_width_is_none_where_a_section_tail_is_failures() -> None:
    rng = np.random.default_rng(2)
    current = rng.random(1_600)
    current[:200] = np.inf
    assert section_half_width(current, rng.random(1_600), 99.0, 0.95) is None


def test_section_half_width_grows_with_the_requests_memory() -> None:
    # AR(1) log latencies: the more the requests remember, the wider the sections' spread
    from benchmarks.aux_truth import ar1

    rng = np.random.default_rng(3)
    widths = {}
    for rho in (0.0, 0.95):
        pairs = [np.exp(ar1(rng, 2, 4_000, rho)) for _ in range(40)]
        widths[rho] = np.median([section_half_width(a, b, 99.0, 0.95) for a, b in pairs])
    assert widths[0.95] > 1.5 * widths[0.0]


def test_one_baseline_run_holds_the_stated_false_alarm_rate() -> None:
    # same code, no run effect, AR(1) 0.9 latencies: the bootstrap over requests alone raised
    # 3.2% false alarms where 1.25% is stated; the sections hold it (one-sided Clopper-Pearson)
    from benchmarks.aux_truth import ALPHA, bounds, compare_false_alarms

    hits, reps = compare_false_alarms(1, 0.0, 200, seed=11)
    assert bounds(hits, reps)[0] <= ALPHA, (hits, reps)
    found, tries = compare_false_alarms(1, 0.0, 30, seed=12, slowdown=2.0)
    assert found >= 0.8 * tries, (found, tries)
