"""A key given twice in one YAML mapping is refused, by the loader and by every file that uses it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rushhour.kernel.yamlfile import DuplicateKeyError, load_yaml, yaml_problem
from rushhour.reference_server.config import ConfigError, read_config_file
from rushhour.scenarios.cli.run import run

ROOT = Path(__file__).resolve().parents[2]


def test_yaml_a_key_given_twice_names_the_key_and_both_lines() -> None:
    text = "slos:\n  - name: p99\n    threshold_ms: 500\n    threshold_ms: 5000\n"
    with pytest.raises(DuplicateKeyError) as raised:
        load_yaml(text)
    assert yaml_problem(raised.value) == 'the key "threshold_ms" is given twice (line 3 and line 4); keep one'
    with pytest.raises(DuplicateKeyError, match='"traffic" is given twice'):
        load_yaml("traffic: {model: a}\nname: x\ntraffic: {model: b}\n")
    assert isinstance(raised.value, yaml.YAMLError)  # every caller's YAML error handling still applies


def test_yaml_merge_keys_still_merge_and_may_be_overridden() -> None:
    text = "base: &b {x: 1, y: 2}\nother: &o {x: 9}\nd:\n  <<: [*b, *o]\n  x: 3\n"
    assert load_yaml(text)["d"] == {"x": 3, "y": 2}
    assert load_yaml("a: 1\nb: {a: 2}\n") == {"a": 1, "b": {"a": 2}}  # the same key in two mappings
    with pytest.raises(DuplicateKeyError, match='"y" is given twice'):
        load_yaml("base: &b {x: 1}\nd:\n  <<: *b\n  y: 1\n  y: 2\n")


def _dry_run(path: Path) -> tuple[int, str]:
    result = CliRunner().invoke(run, [str(path), "--dry-run"])
    return result.exit_code, result.output


def test_yaml_a_scenario_with_a_key_twice_exits_2_naming_the_file_and_the_key(tmp_path: Path) -> None:
    path = tmp_path / "twice.yaml"
    path.write_text("name: t\ntraffic:\n  model: constant:5\n  duration: 10s\n"
                    "slos:\n  - {name: a, kind: availability, objective: 0.99}\n"
                    "slos:\n  - {name: b, kind: availability, objective: 0.5}\n")
    code, output = _dry_run(path)
    assert code == 2, output
    assert f'{path}: the key "slos" is given twice (line 5 and line 7); keep one.' in output


def test_yaml_a_traffic_model_or_an_experiment_with_a_key_twice_exits_2(tmp_path: Path) -> None:
    model = tmp_path / "model.yaml"
    nightly = (ROOT / "traffic_models" / "nightly.yaml").read_text()
    model.write_text(nightly.replace("base_rps: 16\n", "base_rps: 16\nbase_rps: 160\n"))
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({"name": "t", "traffic": {"model": str(model), "duration": "10s"}}))
    code, output = _dry_run(scenario)
    assert code == 2 and 'model.yaml: the key "base_rps" is given twice' in output, output

    experiment = tmp_path / "e.yaml"
    experiment.write_text("title: x\ntitle: y\nmethod: []\n")
    scenario.write_text(yaml.safe_dump({"name": "t", "traffic": {"model": "constant:5", "duration": "10s"},
                                        "chaos": [{"at": "00:00:02", "experiment": str(experiment)}]}))
    code, output = _dry_run(scenario)
    assert code == 2 and f'Chaos experiment {experiment} cannot be read: the key "title" is given twice' in output, output


def test_yaml_a_server_config_with_a_key_twice_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "server.yaml"
    path.write_text("port: 8000\nport: 9000\n")
    with pytest.raises(ConfigError, match=r'server.yaml: is not valid YAML \(the key "port" is given twice'):
        read_config_file(path)
