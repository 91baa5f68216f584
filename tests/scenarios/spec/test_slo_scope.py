"""An SLO whose priority, request_kind, mode or phase names nothing of the traffic model would
be judged on no request; it is refused before the drill (or the capacity search) starts."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rushhour.scenarios.cli.main import _register, cli
from rushhour.scenarios.spec.model import BUNDLED_DIR, load_scenario
from rushhour.scenarios.spec.plan import check_slo_scopes
from rushhour.traffic_models import load_traffic_model

SLO = {"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 5000}


def _scenario(tmp_path: Path, **scope: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "s", "traffic": {"model": "constant:3", "duration": "10s", "seed": 1},
                                    "slos": [{**SLO, **scope}]}))
    return path


@pytest.mark.parametrize("command", [["run", "--no-probe"], ["capacity"]])
@pytest.mark.parametrize(("field", "value", "words"), [
    ("priority", "vip", "is not a priority of the traffic mix (paid, free, batch)."),
    ("request_kind", "video", "is not a request kind of the traffic mix (short, document)."),
    ("mode", "turbo", "is not a mode of the traffic mix (auto, fast, quality)."),
    ("phase", "lunch", "is not a phase of the traffic model (warm-up, base)."),
])
def test_slo_scope_matching_nothing_exits_2(tmp_path: Path, command: list[str], field: str, value: str,
                                            words: str) -> None:
    path = _scenario(tmp_path, **{field: value})
    _register()
    result = CliRunner().invoke(cli, [command[0], str(path), "--dry-run", *command[1:]])
    assert result.exit_code == 2 and f'{path}: slos[0].{field}: "{value}" {words}' in result.output


def test_slo_scope_of_the_mix_and_phases_is_accepted(tmp_path: Path) -> None:
    path = _scenario(tmp_path, priority="batch", request_kind="document", mode="fast", phase="base")
    _register()
    result = CliRunner().invoke(cli, ["run", str(path), "--dry-run", "--no-probe"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("bundled", sorted(path.stem for path in BUNDLED_DIR.glob("*.yaml")))
def test_slo_scope_of_every_bundled_scenario_is_accepted(bundled: str) -> None:
    scenario = load_scenario(bundled)
    model = load_traffic_model(scenario.traffic.model)
    check_slo_scopes(scenario.slos, model, source=bundled)
