from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from benchmarks.synth import make_answered_results, make_results
from rushhour.scenarios.cli.report import compare, report


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_results(tmp_path_factory.mktemp("cli") / "run", n_requests=2000)


@pytest.fixture(scope="module")
def answered_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run whose P99 is made of latencies (no failures near it), for the compare verdicts."""
    return make_answered_results(tmp_path_factory.mktemp("cli") / "answered", n_requests=2000)


@pytest.mark.slow
def test_report_exit_0_on_pass(run_dir: Path) -> None:
    result = CliRunner().invoke(report, [str(run_dir)])
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output and "report.html" in result.output


@pytest.mark.slow
def test_report_exit_1_on_missed_slo(tmp_path: Path) -> None:
    root = make_results(tmp_path / "run", n_requests=2000)
    scenario = yaml.safe_load((root / "scenario.yaml").read_text())
    scenario["slos"][2]["objective"] = 0.999
    (root / "scenario.yaml").write_text(yaml.safe_dump(scenario))
    result = CliRunner().invoke(report, [str(root)])
    assert result.exit_code == 1 and "availability" in result.output


def test_report_exit_2_on_missing_dir_or_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(report, [str(tmp_path / "absent")])
    assert result.exit_code == 2 and "does not exist" in result.output
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(report, [str(tmp_path / "empty")])
    assert result.exit_code == 2 and "scenario.yaml" in result.output


def test_report_exit_2_names_bad_slo_field(tmp_path: Path) -> None:
    root = make_results(tmp_path / "run", n_requests=500)
    scenario = yaml.safe_load((root / "scenario.yaml").read_text())
    scenario["slos"][0]["percentile"] = 120
    (root / "scenario.yaml").write_text(yaml.safe_dump(scenario))
    result = CliRunner().invoke(report, [str(root)])
    assert result.exit_code == 2 and 'scenario.yaml: slos[0].percentile: must be < 100' in result.output


@pytest.mark.slow
def test_report_exit_3_on_invalid_run(tmp_path: Path) -> None:
    root = make_results(tmp_path / "run", n_requests=2000)
    with (root / "events.jsonl").open("a") as events:
        events.write('{"type": "abort", "t_s": 5.0, "reason": "target unreachable"}\n')
    result = CliRunner().invoke(report, [str(root)])
    assert result.exit_code == 3 and "aborted" in result.output


@pytest.mark.slow
def test_compare_exit_codes(tmp_path: Path, answered_dir: Path) -> None:
    slow = make_answered_results(tmp_path / "slow", n_requests=2000, slowdown=1.3)
    regressed = CliRunner().invoke(compare, [str(answered_dir), str(slow)])
    assert regressed.exit_code == 1 and "REGRESSION" in regressed.output
    same = CliRunner().invoke(compare, [str(answered_dir), str(answered_dir)])
    assert same.exit_code == 0 and "NO REGRESSION" in same.output and "P99" in same.output
    missing = CliRunner().invoke(compare, [str(answered_dir), str(tmp_path / "nope")])
    assert missing.exit_code == 2


@pytest.mark.slow
def test_compare_says_why_it_decided_and_refuses_a_paired_test_on_other_schedules(tmp_path: Path, answered_dir: Path) -> None:
    slow = make_answered_results(tmp_path / "slow", n_requests=2000, slowdown=1.3)
    result = CliRunner().invoke(compare, [str(answered_dir), str(slow)])
    assert result.exit_code == 1
    assert "paired: yes" in result.output.lower() and "one group per priority" in result.output  # pairing, population
    other = make_results(tmp_path / "other", n_requests=1500, seed=99)
    refused = CliRunner().invoke(compare, ["--paired", str(answered_dir), str(other)])
    assert refused.exit_code == 2 and "schedule" in refused.output.lower()
    bad = CliRunner().invoke(compare, ["--population", "nonsense", str(answered_dir), str(answered_dir)])
    assert bad.exit_code == 2 and "nonsense" in bad.output


@pytest.mark.slow
def test_compare_accepts_a_baseline_of_several_runs(tmp_path: Path, run_dir: Path) -> None:
    second = make_results(tmp_path / "second", n_requests=2000, noise=0.05, noise_seed=3)
    result = CliRunner().invoke(compare, [str(run_dir), str(second), str(run_dir)])
    assert result.exit_code == 0, result.output
    assert "NO REGRESSION" in result.output


GARBAGE = b"\x00\x01\x02\x03\xff\xfe\x80\xd4garbage\x00"


@pytest.mark.parametrize("name", ["scenario.yaml", "events.jsonl"])
def test_report_exit_2_names_a_text_file_that_is_binary(tmp_path: Path, name: str) -> None:
    root = make_results(tmp_path / "run", n_requests=500)
    (root / name).write_bytes(GARBAGE)
    requests = (root / "requests.parquet").read_bytes()
    result = CliRunner().invoke(report, [str(root)])
    assert result.exit_code == 2, result.output
    assert f'"{root / name}" is not UTF-8 text' in result.output
    assert (root / "requests.parquet").read_bytes() == requests


@pytest.mark.parametrize("name", ["scenario.yaml", "events.jsonl"])
def test_compare_exit_2_names_a_text_file_that_is_binary(tmp_path: Path, run_dir: Path, name: str) -> None:
    root = make_results(tmp_path / "run", n_requests=500)
    (root / name).write_bytes(GARBAGE)
    for args in ([str(run_dir), str(root)], [str(root), str(run_dir)]):
        result = CliRunner().invoke(compare, args)
        assert result.exit_code == 2 and f'"{root / name}" is not UTF-8 text' in result.output, result.output


@pytest.mark.parametrize("args, text", [
    (["--metric", "status"], 'Invalid value for --metric: "status" is not a time column the gate can compare'),
    (["--population", "metric=chars"], 'Invalid value for --population: "chars" is not a time column'),
    (["--min-change", "nan"], """Invalid value for '--min-change': "nan" is not a finite number"""),
])
def test_compare_refuses_a_metric_that_is_no_time_and_a_min_change_that_is_not_finite(
        run_dir: Path, args: list[str], text: str) -> None:
    result = CliRunner().invoke(compare, [*args, str(run_dir), str(run_dir)])
    assert result.exit_code == 2 and text in result.output, result.output
