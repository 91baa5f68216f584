"""A drill of a scenario that states no SLO, against a service that fails every request, fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rushhour.scenarios.cli.run import run
from tests.support.targets import serve_target


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_no_slo_drill_against_a_service_failing_everything_fails(tmp_path: Path) -> None:
    # It serves no /v1/translate: every request is answered 404. The lag limit is loosened because a
    # 3 s drill's lag P99 is its slowest send, which a loaded test machine can push past 50 ms; this
    # test is about the availability verdict, not the generator's health.
    with serve_target() as (url, _state):
        scenario = {"name": "noslo", "traffic": {"model": "constant:5", "duration": "3s"}, "slos": [],
                    "target": {"url": url}, "load": {"request_timeout_s": 5, "max_lag_p99_ms": 2000}}
        path = tmp_path / "noslo.yaml"
        path.write_text(yaml.safe_dump(scenario))
        result = CliRunner().invoke(run, [str(path), "--out", str(tmp_path / "results"), "--no-probe"])
    summary = json.loads((tmp_path / "results" / "summary.json").read_text())
    assert summary["requests"]["attempted"] > 0 and summary["requests"]["ok"] == 0
    assert summary["verdict"] == "fail" and result.exit_code == 1, result.output
    assert summary["slos"][0]["name"] == "availability (implicit)" and "implicit" in summary["implicit_slo"]
    assert "implicit availability" in (tmp_path / "results" / "report.md").read_text()
