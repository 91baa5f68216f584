"""The `steps` drift check: a machine that slows in the middle of a search is flagged at the step
after which it changed, a steady one is not, and `--drift-check` refuses an unknown value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rushhour.reports.capacity.document_model import ConditionResult
from rushhour.reports.capacity.page import render_capacity_html
from rushhour.reports.estimate.anchor import family_confidence
from rushhour.scenarios.capacity.job import STEP_ANCHOR_S
from rushhour.scenarios.cli.capacity import capacity
from tests.scenarios.capacity.search_standins import KneeAt60, search_condition


class _ShiftingService(KneeAt60):
    """From its `slow_from`-th step on (None: never) the machine's service times are 20% longer."""

    seed = 7
    slow_from: int | None = None

    def speed(self) -> float:
        return 1.2 if self.slow_from is not None and self.index >= self.slow_from else 1.0


def _search(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, slow_from: int | None) -> tuple[dict[str, Any], list[str]]:
    monkeypatch.setattr(_ShiftingService, "slow_from", slow_from)
    return search_condition(monkeypatch, _ShiftingService, tmp_path, "steps")


def test_a_machine_that_slows_mid_search_is_flagged_at_the_step_after_which_it_changed(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    entry, said = _search(monkeypatch, tmp_path, slow_from=6)
    service = _ShiftingService.last
    # step 1 passes (the anchor); after every later step, a window at the anchor's rate
    assert service.rates[0] == 20.0 and service.rates[2] == 20.0 and service.rates[4] == 20.0
    drift = entry["machine_drift"]
    assert drift["check"] == "steps" and drift["changed"] is True
    windows = drift["windows"]
    assert [w["after_step"] for w in windows] == list(range(2, service.index - 1, 2))
    assert service.rates[-1] == 20.0  # and the anchor's full step at the end, as with `ends`
    assert all(w["step"] == w["after_step"] + 1 for w in windows)
    # the machine slowed at runner step 6: the window after step 6 (run as step 7) is the first slow one
    assert [w["after_step"] for w in windows if w["changed"]][0] == 6
    assert not any(w["changed"] for w in windows if w["after_step"] < 6)
    assert drift["changed_after_step"] == 6 and drift["steps"] == [1, 7]
    assert 1.1 < drift["ratio"] < 1.3
    assert entry["confirmed"] is False
    assert "20% slower after step 6 than at step 1" in entry["summary"]
    assert len(entry["steps"]) == len(windows) + 1  # the short windows are not search steps
    assert any("anchor after step 6: end/start 1." in line for line in said)
    # every comparison at the family's level, the short windows and the end's together
    assert drift["confidence"] == pytest.approx(family_confidence(len(windows) + 1))
    parsed = ConditionResult.model_validate(entry | {"interrupted": False})
    assert parsed.machine_drift is not None and parsed.machine_drift.changed_after_step == 6
    html = render_capacity_html({"scenario": "s", "target": "t", "aborted": None, "slos": [], "wall_s": 1.0,
                                 "settings": {"step_duration_s": 30.0, "warmup_s": 5.0, "precision": 0.05, "seed": 1},
                                 "environment": {}, "conditions": [entry | {"steps": []}]})  # the anchor's part alone
    assert "Unconfirmed: the machine answered the same load (20.0 req/s) 2" in html
    assert "slower after step 6 than at step 1" in html
    assert f"in a short window after every later step ({len(windows)} windows" in html and "after step 6," in html


def test_a_steady_machine_is_not_flagged_by_the_step_windows(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    entry, _ = _search(monkeypatch, tmp_path, slow_from=None)
    drift = entry["machine_drift"]
    assert drift["check"] == "steps" and len(drift["windows"]) >= 3
    assert not any(w["changed"] for w in drift["windows"]) and drift["changed"] is False
    assert drift["changed_after_step"] is None
    assert entry["confirmed"] is True and "not confirmed" not in entry["summary"]
    assert drift["steps"] == [1, _ShiftingService.last.index]  # the end's full step, the last compared
    # each short window is measured whole (one look at its end, never curtailed): at a rate where
    # 10 s cannot show a P99 met, a judged window would end at its first check with too few answers
    shorts = [rules for rules, step in zip(_ShiftingService.last.rules, range(1, 99)) if step in
              {w["step"] for w in drift["windows"]}]
    assert shorts and all(r is not None and (r.measure_s, r.looks, r.curtail) == (STEP_ANCHOR_S, 1, False)
                          for r in shorts)


def test_an_unknown_drift_check_is_refused_with_exit_2() -> None:
    result = CliRunner().invoke(capacity, ["scenarios/smoke.yaml", "--drift-check", "always", "--dry-run"])
    assert result.exit_code == 2
    assert "'always' is not one of 'ends', 'steps'" in result.output
