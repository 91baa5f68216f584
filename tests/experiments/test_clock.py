"""Scenario clock parsing."""

from __future__ import annotations

import pytest

from experiments.clock import format_clock, parse_clock


def test_parse_clock_reads_times_of_day_and_seconds() -> None:
    assert parse_clock("20:10") == 20 * 3600 + 600
    assert parse_clock("07:05:30") == 7 * 3600 + 330
    assert parse_clock(90) == 90.0
    assert parse_clock(12.5) == 12.5


@pytest.mark.parametrize("bad", ["20h10", "25:00", "12:61", "", True])
def test_parse_clock_rejects_what_is_not_a_time(bad: object) -> None:
    with pytest.raises(ValueError, match="Clock time"):
        parse_clock(bad)  # type: ignore[arg-type]


def test_format_clock_round_trips() -> None:
    assert format_clock(parse_clock("20:10:05")) == "20:10:05"
