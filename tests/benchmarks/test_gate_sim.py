"""The gate simulation judges nights laid out as the nightly scenario's, against their known truth."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from benchmarks import gate_sim


def test_gate_sim_lays_nights_out_as_rushhour_ab_does_for_the_nightly_scenario() -> None:
    assert gate_sim.DESIGN.interleave == "requests" and gate_sim.DESIGN.trial_s == pytest.approx(5.0)
    assert gate_sim.DESIGN.trials // 2 * gate_sim.DESIGN.trial_s == pytest.approx(gate_sim.SCENARIO.traffic.duration_s)
    assert gate_sim.DESIGN.warmup_pairs > 0


@pytest.mark.parametrize("process", ["quiet", "server state"])
def test_gate_sim_passes_same_code_and_flags_a_thirty_percent_slowdown(process: str) -> None:
    same = [gate_sim.judge_night(1.0, 0.0025, process, seed)[0] for seed in range(3)]
    slowed = [gate_sim.judge_night(1.3, 0.0025, process, seed)[0] for seed in range(3)]
    assert "flagged" not in same and same.count("passed") >= 2
    assert slowed == ["flagged"] * 3


def test_gate_sim_writes_its_table_as_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sim.json"
    monkeypatch.setattr(sys, "argv", ["gate_sim", "--nights", "1", "--processes", "quiet", "--out", str(out)])
    gate_sim.main()
    written = json.loads(out.read_text())
    rows = written["rows"]
    assert written["slo_thresholds"] == {"p99-paid": 1.25, "p99-free": 1.25}
    assert [r["kind"] for r in rows] == list(gate_sim.KINDS) and all(r["nights"] == 1 for r in rows)
    assert "| quiet | x1.3 | 1 | 1 |" in capsys.readouterr().out
