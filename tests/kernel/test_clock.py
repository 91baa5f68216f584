from __future__ import annotations

import pytest

from rushhour.kernel.clock import format_clock, parse_clock


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("20:10", 72600.0), ("20:10:30", 72630.0), ("00:00", 0.0), ("24:00", 86400.0), (90, 90.0),
     (1.5, 1.5), ("90s", 90.0), ("5m", 300.0), ("2h", 7200.0), ("250ms", 0.25), ("1d", 86400.0), ("42", 42.0)],
)
def test_parse_clock_accepts_times_and_durations(value: str | float, seconds: float) -> None:
    assert parse_clock(value) == seconds


@pytest.mark.parametrize("value", ["noon", "12:75", "-5", "5 parsecs", "", True, -1.0, float("nan")])
def test_parse_clock_rejects_nonsense_with_the_value_quoted(value: object) -> None:
    with pytest.raises(ValueError, match="must|not"):
        parse_clock(value)  # type: ignore[arg-type]


def test_format_clock_round_trips_with_parse_clock() -> None:
    assert format_clock(parse_clock("19:30")) == "19:30:00"
    assert format_clock(parse_clock("07:05:09")) == "07:05:09"
