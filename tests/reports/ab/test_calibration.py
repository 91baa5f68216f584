"""The runner's calibration record: exact bounds, the sentence every verdict quotes, bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rushhour.reports.ab.calibration import (
    CalibrationError,
    calibration_record,
    clopper_pearson_upper,
    quote,
    read_record,
)


def test_clopper_pearson_upper_matches_the_rule_of_three_and_scipy() -> None:
    from scipy.stats import beta

    assert clopper_pearson_upper(0, 30) == pytest.approx(1 - 0.05 ** (1 / 30))  # 0.0950
    assert clopper_pearson_upper(0, 30) == pytest.approx(0.0950, abs=5e-5)
    assert clopper_pearson_upper(2, 30) == pytest.approx(beta.ppf(0.95, 3, 28))
    assert clopper_pearson_upper(5, 5) == 1.0 and clopper_pearson_upper(0, 0) == 1.0


def test_record_counts_false_alarms_and_undecided_nights() -> None:
    nights = [{"verdict": v, "mde": m} for v, m in
              [("no_regression", 1.10), ("regression", 1.14), ("inconclusive", 1.30), ("invalid", None)]]
    record = calibration_record(nights, scenario="s", baseline="a", candidate="a", runner={})
    assert record["nights"] == 4 and record["false_alarms"] == 1 and record["undecided"] == 2
    assert record["mde"] == pytest.approx(1.14)
    assert record["false_alarm_bound"] == pytest.approx(clopper_pearson_upper(1, 4))


def test_quote_says_what_the_runner_measured_or_that_it_is_uncalibrated() -> None:
    record = {"nights": 30, "false_alarms": 0, "false_alarm_bound": clopper_pearson_upper(0, 30),
              "bound_confidence": 0.95, "mde": 1.12}
    assert quote(record) == "on this runner: 0 false alarms in 30 nights, <= 9.5% at 95%; detects x1.12"
    assert quote({**record, "false_alarms": 1, "nights": 1, "false_alarm_bound": 1.0, "mde": None}) == (
        "on this runner: 1 false alarm in 1 night, <= 100.0% at 95%; its detectable change unknown")
    assert quote(None).startswith("this runner is not calibrated")


def test_read_record_names_the_file_and_what_is_missing(tmp_path: Path) -> None:
    path = tmp_path / "cal.json"
    path.write_text(json.dumps({"nights": 3}))
    with pytest.raises(CalibrationError, match=r'"[^"]*cal.json" lacks false_alarms, false_alarm_bound'):
        read_record(path)
    path.write_text("[1")
    with pytest.raises(CalibrationError, match="is not JSON"):
        read_record(path)
    with pytest.raises(CalibrationError, match="is a directory"):
        read_record(tmp_path)
