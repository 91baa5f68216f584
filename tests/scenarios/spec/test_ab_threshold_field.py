"""A latency SLO's `ab_threshold`: a ratio above 1, on latency kinds only; anything else refused
with exit 2 naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rushhour.scenarios.cli.main import _register, cli
from rushhour.scenarios.spec.model import load_scenario

SLO = {"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 5000}


def _scenario(tmp_path: Path, slo: dict[str, object]) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "s", "traffic": {"model": "constant:3", "duration": "10s", "seed": 1},
                                    "slos": [slo]}))
    return path


def test_ab_threshold_is_read() -> None:
    scenario = load_scenario("scenarios/nightly.yaml")
    own = {slo.name: slo.ab_threshold for slo in scenario.slos}
    assert own["p99-paid"] == own["p99-free"] == 1.25 and own["p50-paid"] is None


@pytest.mark.parametrize("value", [1.0, 0.9])
def test_ab_threshold_at_or_below_1_exits_2(tmp_path: Path, value: float) -> None:
    path = _scenario(tmp_path, {**SLO, "ab_threshold": value})
    _register()
    result = CliRunner().invoke(cli, ["run", str(path), "--dry-run", "--no-probe"])
    assert result.exit_code == 2 and str(path) in result.output and "ab_threshold" in result.output


def test_ab_threshold_on_an_availability_slo_exits_2(tmp_path: Path) -> None:
    path = _scenario(tmp_path, {"name": "ok", "kind": "availability", "objective": 0.99, "ab_threshold": 1.2})
    _register()
    result = CliRunner().invoke(cli, ["run", str(path), "--dry-run", "--no-probe"])
    assert result.exit_code == 2 and str(path) in result.output and "ab_threshold is for latency kinds" in result.output
