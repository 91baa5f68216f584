"""The calibration step on its own (`rushhour capacity --calibrate`): a dry run measures nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rushhour.scenarios.cli.capacity import capacity

ROOT = Path(__file__).resolve().parents[3]


def test_calibrate_dry_run_names_the_placeholder_and_boots_nothing(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUSHHOUR_STATE_DIR", str(tmp_path / "state"))
    result = CliRunner().invoke(capacity, [str(ROOT / "scenarios" / "promo-day.yaml"), "--calibrate", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "capacity [n-1]:" in result.output and "not measured on this machine yet" in result.output
    assert "promo-day: peak_rps 0.6x n-1 capacity = " in result.output
    assert not (tmp_path / "state").exists()  # no search ran, nothing was cached
