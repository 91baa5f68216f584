"""The generator's lag and health, derived once: known frames give their known lag and problems."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rushhour.kernel.generator import (
    CPU_SATURATED,
    GeneratorProblem,
    generator_problems,
    schedule_lag_ms,
    schedule_lag_s,
)


def test_schedule_lag_is_sent_minus_intended_and_nan_when_never_sent() -> None:
    frame = pd.DataFrame({"intended_s": [1.0, 2.0, 3.0], "sent_s": [1.0, 2.25, np.nan]})
    np.testing.assert_allclose(schedule_lag_s(frame), [0.0, 0.25, np.nan])
    np.testing.assert_allclose(schedule_lag_ms(frame), [0.0, 250.0, np.nan])


def test_schedule_lag_reads_any_table_of_columns() -> None:
    columns = {"intended_s": np.array([0.5]), "sent_s": np.array([0.502])}
    assert schedule_lag_ms(columns) == pytest.approx([2.0])


def test_a_healthy_generator_has_no_problems() -> None:
    assert generator_problems(lag_p99_ms=49.0, pool_wait_p99_ms=50.0, duplicates=0, cpu_max=0.94,
                              max_lag_p99_ms=50.0) == []


def test_figures_not_measured_pass() -> None:
    assert generator_problems(lag_p99_ms=None, pool_wait_p99_ms=None, duplicates=None, cpu_max=None,
                              max_lag_p99_ms=50.0) == []


def test_every_check_over_its_limit_is_named_in_order() -> None:
    problems = generator_problems(lag_p99_ms=51.0, pool_wait_p99_ms=80.0, duplicates=2, cpu_max=CPU_SATURATED,
                                  max_lag_p99_ms=50.0)
    assert problems == [GeneratorProblem("lag", 51.0, 50.0), GeneratorProblem("pool_wait", 80.0, 50.0),
                        GeneratorProblem("duplicates", 2.0, 0), GeneratorProblem("cpu", CPU_SATURATED, CPU_SATURATED)]
