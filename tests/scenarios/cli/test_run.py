"""`rushhour run` input handling: bad input exits 2, remote targets refused, dry run sends nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from rushhour.scenarios.cli.run import run
from tests.support.cli import invoke, scenario_file


def test_run_cli_bad_field_exits_2_naming_file_and_field(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, load={"max_lag_p99_ms": -1})
    code, output = invoke(run, str(path), "--dry-run")
    assert code == 2
    assert f"{path}: load.max_lag_p99_ms" in output


def test_run_cli_unknown_traffic_model_exits_2(tmp_path: Path) -> None:
    code, output = invoke(run, str(scenario_file(tmp_path)), "--traffic", "constant:-3", "--dry-run")
    assert code == 2 and "traffic.model" in output


def test_run_cli_bad_duration_flag_exits_2(tmp_path: Path) -> None:
    code, output = invoke(run, str(scenario_file(tmp_path)), "--duration", "forever", "--dry-run")
    assert code == 2 and "--duration" in output


def test_run_cli_missing_experiment_exits_2(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, chaos=[{"at": "00:00:05", "experiment": "nowhere.json"}])
    code, output = invoke(run, str(path), "--dry-run")
    assert code == 2 and "chaos[0].experiment" in output


# No test sends traffic anywhere; the addresses are private-range IPv6 literals and reserved names,
# so even a broken guard could not reach a real host from here.
@pytest.mark.parametrize("url", ["http://[fd00::1]:8000", "https://gpu-gateway.example.com"])
def test_run_cli_refuses_non_loopback_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.chdir(tmp_path)
    code, output = invoke(run, str(scenario_file(tmp_path)), "--target", url)  # not a dry run: refused anyway
    assert code == 2 and "--allow-remote" in output and url in output
    assert not (tmp_path / "results").exists()


def test_run_cli_refuses_non_loopback_in_file(tmp_path: Path) -> None:
    code, output = invoke(run, str(scenario_file(tmp_path, target={"url": "http://[fe80::1]:8000"})), "--dry-run")
    assert code == 2 and "target.url" in output


def test_run_cli_allow_remote_dry_run(tmp_path: Path) -> None:
    code, output = invoke(run, str(scenario_file(tmp_path)), "--target", "http://gpu-gateway.example.com:8000",
                           "--allow-remote", "--no-probe", "--dry-run")  # no probe: tests send only to loopback
    assert code == 0 and "http://gpu-gateway.example.com:8000" in output


def test_run_cli_dry_run_prints_plan_and_touches_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RUSHHOUR_STATE_DIR", str(tmp_path / "state"))  # no capacity cached: never measured here
    code, output = invoke(run, "promo-day", "--dry-run")
    assert code == 0, output
    assert "requests" in output and "scheduled" in output and "peak" in output
    assert "phases" in output and "peak" in output
    assert "capacity   peak 0.6x n-1 capacity = " in output and "not measured on this machine yet" in output
    assert "(19:00:00 model clock)  gpu-node-loss" in output and "130.0 s" in output and "held 30m = 5.0 s" in output
    assert list(tmp_path.iterdir()) == []


def test_run_cli_overrides_show_in_plan(tmp_path: Path) -> None:
    code, output = invoke(run, str(scenario_file(tmp_path)), "--traffic", "constant:20", "--duration", "30s",
                           "--seed", "3", "--processes", "2", "--dry-run")
    assert code == 0, output
    assert "constant:20" in output and "seed 3" in output and "2 Locust process(es)" in output
    assert "duration   30 s" in output


@pytest.mark.slow
def test_run_cli_refuses_a_results_folder_that_is_not_empty(tmp_path: Path) -> None:
    out = tmp_path / "earlier-run"
    (out / "load" / "control").mkdir(parents=True)
    (out / "summary.json").write_text("{}")
    code, output = invoke(run, str(scenario_file(tmp_path)), "--out", str(out))  # refused before anything boots
    assert code == 2, output
    assert f'"{out}" is not empty' in output and "load, summary.json" in output
    assert sorted(p.name for p in out.iterdir()) == ["load", "summary.json"]


def test_run_cli_refuses_a_file_as_results_folder(tmp_path: Path) -> None:
    out = tmp_path / "a-file"
    out.write_text("x")
    code, output = invoke(run, str(scenario_file(tmp_path)), "--out", str(out))
    assert code == 2 and str(out) in output and "is a file" in output


def test_default_results_folders_never_collide(tmp_path: Path) -> None:
    from rushhour.scenarios.run.resultsdir import claim_results_dir, new_results_dir

    made = {new_results_dir("smoke", tmp_path) for _ in range(50)}  # all within the same second or two
    assert len(made) == 50 and all(p.is_dir() and p.name.startswith("smoke-") for p in made)
    assert claim_results_dir(tmp_path / "fresh" / "deep").is_dir()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert claim_results_dir(empty) == empty


def test_drill_refuses_a_folder_claimed_by_another_run(tmp_path: Path) -> None:
    import dataclasses

    from rushhour.scenarios.cli.run import prepare
    from rushhour.scenarios.run.drill import Drill
    from rushhour.scenarios.run.resultsdir import ResultsDirError
    from rushhour.scenarios.spec.plan import Overrides

    plan = prepare(str(scenario_file(tmp_path)), Overrides(), allow_remote=False)
    out = tmp_path / "raced"
    out.mkdir()
    (out / "scenario.yaml").write_text("name: other\n")  # another run claimed it after our check
    with pytest.raises(ResultsDirError, match="already holds a run"):
        Drill(dataclasses.replace(plan), out).run()
    assert (out / "scenario.yaml").read_text() == "name: other\n"


@pytest.mark.parametrize("name", ["RUSHHOUR_URL", "RUSHHOUR_ADMIN_TOKEN"])
def test_run_cli_chaos_env_cannot_redirect_the_experiments(tmp_path: Path, name: str) -> None:
    entry = {"at": "00:00:01", "experiment": "cache-flush.json", "env": {name: "http://elsewhere.invalid:8000"}}
    code, output = invoke(run, str(scenario_file(tmp_path, chaos=[entry])), "--dry-run")
    assert code == 2 and f"chaos[0].env: the drill sets {name} itself" in output


def test_chaos_env_never_overrides_the_guarded_target() -> None:
    from rushhour.scenarios.spec.chaos import PlannedFault

    fault = PlannedFault.model_construct(name="f", experiment=Path("x.json"), scenario_time="0", offset_s=0.0,
                                         targets=[], env={"RUSHHOUR_URL": "http://elsewhere.invalid"}, hold_s=None)
    env = fault.process_env({"RUSHHOUR_URL": "http://127.0.0.1:8000", "RUSHHOUR_ADMIN_TOKEN": "t"})
    assert env["RUSHHOUR_URL"] == "http://127.0.0.1:8000"  # even a model built without validation


def test_run_cli_plans_closed_loop_for_other_protocols(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, load={"mode": "closed"},
                     target={"url": "http://127.0.0.1:9", "protocol": "openai-chat", "model": "m"})
    code, output = invoke(run, str(path), "--dry-run", "--no-probe")
    assert code == 0, output


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data/", "http://metadata.google.internal/x"])
def test_run_cli_dry_run_refuses_a_metadata_metrics_url_even_with_allow_remote(tmp_path: Path, url: str) -> None:
    path = scenario_file(tmp_path, target={"url": "http://127.0.0.1:9", "metrics_url": url})
    code, output = invoke(run, str(path), "--dry-run", "--no-probe", "--allow-remote")
    assert code == 2 and "target.metrics_url" in output and url in output and "never contacts" in output


def test_run_cli_dry_run_refuses_a_remote_metrics_url_without_allow_remote(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, target={"url": "http://127.0.0.1:9", "metrics_url": "http://[fd00::5]:9100/metrics"})
    code, output = invoke(run, str(path), "--dry-run", "--no-probe")
    assert code == 2 and "target.metrics_url" in output and "--allow-remote" in output


def test_run_cli_refuses_a_link_local_target_under_allow_remote(tmp_path: Path) -> None:
    code, output = invoke(run, str(scenario_file(tmp_path)), "--target", "http://[fe80::1]:8000", "--allow-remote",
                           "--no-probe", "--dry-run")
    assert code == 2 and "link-local" in output
