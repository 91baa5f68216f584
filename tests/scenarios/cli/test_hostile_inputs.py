"""Files nested 5,000 levels deep: every command refuses them with exit 2 naming the file, no traceback."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from rushhour.kernel.yamlfile import MAX_DEPTH, TooDeepError, load_yaml
from rushhour.scenarios.cli.main import cli
from tests.reports.helpers import requests_frame, write_run

DEEP = 5000
DEEP_FLOW = "[" * DEEP + "]" * DEEP


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    assert not isinstance(result.exception, RecursionError), result.output
    return result.exit_code, result.output


def test_load_yaml_refuses_block_and_flow_nesting_past_the_limit_and_reads_the_limit() -> None:
    for text in (f"a: {DEEP_FLOW}\n", "".join("  " * i + "k:\n" for i in range(DEEP))):
        with pytest.raises(TooDeepError, match=f"more than {MAX_DEPTH} levels"):
            load_yaml(text)
    at_limit = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    assert load_yaml(at_limit) is not None


def test_run_refuses_a_deep_scenario_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(f"name: deep\ntraffic: {{model: 'constant:1', duration: 5s}}\nslos: {DEEP_FLOW}\n")
    code, output = _invoke("run", str(path), "--dry-run")
    assert code == 2 and str(path) in output and "nested more than" in output


def test_traffic_refuses_a_deep_model_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "deep-model.yaml"
    path.write_text(f"name: deep\ncurve: {DEEP_FLOW}\n")
    code, output = _invoke("traffic", str(path))
    assert code == 2 and "deep-model.yaml" in output and "nested more than" in output


def test_run_refuses_a_deep_json_experiment_naming_the_file(tmp_path: Path) -> None:
    experiment = tmp_path / "deep.json"
    experiment.write_text('{"title": "x", "method": ' + DEEP_FLOW + "}")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({"name": "s", "traffic": {"model": "constant:1", "duration": "10s"},
                                        "chaos": [{"at": "00:00:02", "experiment": str(experiment)}]}))
    code, output = _invoke("run", str(scenario), "--dry-run")
    assert code == 2 and "deep.json" in output and "nested too deeply" in output


def test_report_refuses_a_deep_events_line_naming_file_and_line(tmp_path: Path) -> None:
    intended = np.arange(0.0, 10.0, 0.1)
    root = write_run(tmp_path / "run", requests_frame(intended, np.full(intended.size, 20.0)),
                     events=[{"type": "run_start", "t_s": 0.0}, {"type": "run_end", "t_s": 10.0, "duration_s": 10.0}])
    with (root / "events.jsonl").open("a") as events:
        events.write('{"type": "x", "deep": ' + DEEP_FLOW + "}\n")
    code, output = _invoke("report", str(root))
    assert code == 2 and "events.jsonl" in output and "line 3" in output and "nested too deeply" in output
    assert not (root / "summary.json").exists()


def test_report_refuses_a_deep_results_scenario(tmp_path: Path) -> None:
    intended = np.arange(0.0, 10.0, 0.1)
    root = write_run(tmp_path / "run", requests_frame(intended, np.full(intended.size, 20.0)))
    (root / "scenario.yaml").write_text(f"name: x\nchaos: {DEEP_FLOW}\n")
    code, output = _invoke("report", str(root))
    assert code == 2 and "scenario.yaml" in output and "nested more than" in output
    assert not (root / "summary.json").exists()
