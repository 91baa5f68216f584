"""`rushhour capacity` input handling: bad input exits 2 with a sentence, remote targets refused,
the dry run prints the plan and each SLO's floor; the exit code follows --require."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rushhour.scenarios.capacity.runner import _exit_code
from rushhour.scenarios.cli.capacity import build_job, capacity
from rushhour.scenarios.spec.model import ScenarioError

SLOS = [{"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 500},
        {"name": "availability", "kind": "availability", "objective": 0.95}]


def _scenario(tmp_path: Path, **extra: object) -> Path:
    data = {"name": "t", "traffic": {"model": "constant:5", "duration": "10s"},
            "target": {"url": "http://127.0.0.1:9"}, "slos": SLOS, **extra}
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(capacity, list(args))
    return result.exit_code, result.output


def test_capacity_cli_dry_run_prints_rates_and_floors(tmp_path: Path) -> None:
    code, output = _invoke(str(_scenario(tmp_path)), "--dry-run")
    assert code == 0, output
    assert "rates      10.5 to 105 req/s" in output  # the P99 floor at 30 s steps is 314 / 30 = 10.5 req/s
    assert "needs 314 requests: from 10.5 req/s" in output and "conditions none" in output


@pytest.mark.parametrize("args, text", [
    (("--slo", "p42"), 'no SLO named "p42"'),
    (("--min-rps", "2"), 'SLO "p99" needs 314 requests'),
    (("--step-duration", "2s"), "shorter than 5 s"),
    (("--step-duration", "soon"), "--step-duration"),
    (("--faults", "n-2"), '"n-2" is neither none, n-1 nor an experiment file'),
    (("--min-rps", "50", "--max-rps", "40"), "--min-rps 50 must be below --max-rps 40"),
    (("--precision", "2"), "--precision"),
    (("--target", "ftp://127.0.0.1:1"), "must start with http://"),
])
def test_capacity_cli_bad_input_exits_2_naming_it(tmp_path: Path, args: tuple[str, ...], text: str) -> None:
    code, output = _invoke(str(_scenario(tmp_path)), *args, "--dry-run")
    assert code == 2 and text in output, output


@pytest.mark.parametrize("args, text", [
    (("--min-rps", "10", "--max-rps", "5"), "--min-rps 10 must be below --max-rps 5."),
    (("--max-rps", "5"), "--max-rps 5 must be above the lowest rate the SLOs can be shown met at, 10.5 req/s"),
    (("--seed", "-1"), "'--seed': -1 is not in the range x>=0"),
    (("--max-rps", "inf"), """'--max-rps': "inf" is not a finite number"""),
    (("--min-rps", "nan"), """'--min-rps': "nan" is not a finite number"""),
    (("--require", "inf"), """'--require': "inf" is not a finite number"""),
    (("--precision", "nan"), """'--precision': "nan" is not a finite number"""),
    (("--faults", "none,none"), '--faults: "none,none" names "none" twice'),
    (("--faults", "none,"), '--faults: "none," has an empty item'),
])
def test_capacity_cli_refuses_contradictory_or_non_finite_flags(tmp_path: Path, args: tuple[str, ...],
                                                                 text: str) -> None:
    code, output = _invoke(str(_scenario(tmp_path)), *args, "--dry-run")
    assert code == 2 and text in output, output


@pytest.mark.parametrize("body, text", [
    ("{bad json", "cannot be read: Expecting property name"),
    ("[]", "is not a mapping"),
    ("{}", "has no title or no method"),
])
def test_capacity_cli_checks_an_experiment_file_as_run_does(tmp_path: Path, body: str, text: str) -> None:
    (tmp_path / "fault.json").write_text(body)
    code, output = _invoke(str(_scenario(tmp_path)), "--faults", "none,fault.json", "--dry-run")
    assert code == 2 and "--faults:" in output and "fault.json" in output and text in output, output


def test_capacity_cli_unknown_scenario_exits_2(tmp_path: Path) -> None:
    code, output = _invoke(str(tmp_path / "nowhere.yaml"), "--dry-run")
    assert code == 2 and "nowhere.yaml" in output


# No test sends traffic anywhere: the addresses are reserved names and private IPv6 literals.
@pytest.mark.parametrize("url", ["http://[fd00::1]:8000", "https://gpu-gateway.example.com"])
def test_capacity_cli_refuses_non_loopback_targets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.chdir(tmp_path)
    code, output = _invoke(str(_scenario(tmp_path)), "--target", url)  # not a dry run: refused anyway
    assert code == 2 and "--allow-remote" in output and url in output
    assert not (tmp_path / "results").exists()


def test_capacity_cli_refuses_a_remote_url_in_the_file(tmp_path: Path) -> None:
    code, output = _invoke(str(_scenario(tmp_path, target={"url": "http://[fe80::1]:8000"})), "--dry-run")
    assert code == 2 and "target.url" in output


def test_capacity_cli_allow_remote_dry_run(tmp_path: Path) -> None:
    code, output = _invoke(str(_scenario(tmp_path)), "--target", "http://gpu.example.com:8000", "--allow-remote",
                           "--dry-run")
    assert code == 0 and "http://gpu.example.com:8000" in output


def _condition(capacity: float | None, *, bound: bool = False, below: bool = False) -> dict[str, object]:
    return {"capacity_rps": capacity, "generator_bound": bound, "below_min": below}


def test_capacity_exit_code_follows_require_and_validity() -> None:
    assert _exit_code([_condition(40.0)], None, None) == 0
    assert _exit_code([_condition(40.0), _condition(25.0)], None, 30.0) == 1  # every condition must meet it
    assert _exit_code([_condition(40.0)], None, 30.0) == 0
    assert _exit_code([_condition(None, below=True)], None, None) == 1
    assert _exit_code([_condition(40.0, bound=True)], None, 10.0) == 3
    assert _exit_code([_condition(40.0)], "interrupted", None) == 3


def test_capacity_takes_target_and_seed_through_the_overrides_as_run_does(tmp_path: Path) -> None:
    """--target and --seed replace the scenario's fields (an embedded server dropped), so the job's
    scenario is the one searched; a bad --target is refused in run's words."""
    path = _scenario(tmp_path, target={"embedded": {}}, traffic={"model": "constant:5", "duration": "10s", "seed": 7})
    job = build_job(str(path), target_url="http://127.0.0.1:7", slos=(), faults="none", min_rps=None, max_rps=None,
                    precision=0.1, step_s=30.0, require_rps=None, out=None, allow_remote=False, seed=41)
    assert (job.seed, job.scenario.traffic.seed) == (41, 41)
    assert (str(job.scenario.target.url), job.scenario.target.embedded, job.target_url) == \
        ("http://127.0.0.1:7", None, "http://127.0.0.1:7")
    kept = build_job(str(path), target_url=None, slos=(), faults="none", min_rps=None, max_rps=None, precision=0.1,
                     step_s=30.0, require_rps=None, out=None, allow_remote=False, seed=None)
    assert (kept.seed, kept.scenario.traffic.seed, kept.target_url) == (7, 7, None)
    assert kept.scenario.target.embedded is not None
    with pytest.raises(ScenarioError, match=rf"^{path}: --target: .*must start with http://"):
        build_job(str(path), target_url="ftp://127.0.0.1:1", slos=(), faults="none", min_rps=None, max_rps=None,
                  precision=0.1, step_s=30.0, require_rps=None, out=None, allow_remote=False, seed=None)
