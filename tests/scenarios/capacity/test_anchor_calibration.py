"""A calibration measured while the machine changed carries the anchor's sentence into its record,
and the unconfirmed-calibration finding quotes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rushhour.reports.summary.finding_rules import calibration_findings
from rushhour.scenarios.capacity.calibrate import cache_dir, calibrated_peak
from rushhour.scenarios.spec.model import load_scenario
from rushhour.scenarios.spec.peak import RelativePeak

SCENARIO = {
    "name": "cal", "traffic": {"model": "promo-day", "time_scale": 360, "peak_rps": "0.7x capacity",
                               "start_clock": "06:00", "duration": "180s"},
    "target": {"embedded": {"nodes": 2, "max_batch_size": 8}},
    "slos": [{"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 5000, "priority": "free"}],
}
SLOWED = ("the machine answered the same load (20.0 req/s) 18% slower after step 6 than at step 1 "
          "(99% interval 1.120-1.240): the figure holds for the machine as it ran, not a steady one")


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RUSHHOUR_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def _document(changed: bool) -> dict[str, object]:
    drift = {"changed": changed, "sentence": SLOWED if changed else "the machine answered the same load alike"}
    entry = {"condition": "none", "capacity_rps": 40.0, "bracket": [40.0, 44.0], "summary": "40 req/s",
             "generator_bound": False, "ceiling": False, "confirmed": not changed, "machine_drift": drift}
    return {"conditions": [entry]}


@pytest.mark.parametrize("changed", [True, False])
def test_the_calibration_record_carries_the_drift_sentence_and_the_finding_quotes_it(
        tmp_path: Path, changed: bool) -> None:
    path = tmp_path / "cal.yaml"
    path.write_text(yaml.safe_dump(json.loads(json.dumps(SCENARIO))))
    calibration = calibrated_peak(load_scenario(path), RelativePeak(0.7, "none"), source=str(path),
                                  base_dir=path.parent, run=lambda _job: _document(changed))
    assert calibration.capacity_rps == 40.0
    assert calibration.machine_drift == (SLOWED if changed else None)
    assert calibration.confirmed is (not changed)
    assert any(cache_dir().glob("*.json")) is (not changed)  # a figure from a changing machine is never cached
    findings = calibration_findings({"scenario": {"calibration": calibration.model_dump()}})
    if changed:
        [finding] = findings
        assert finding.severity == "warn"
        assert f"The search's anchor saw it: {SLOWED}." in finding.text
    else:
        assert findings == []
