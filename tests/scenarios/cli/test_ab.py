"""`rushhour ab` end to end against targets of known timing, the embedded server, and bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from rushhour.kernel.contract import AB_HTML_FILE, AB_JSON_FILE, AB_MD_FILE, JUNIT_FILE, REQUESTS_FILE
from rushhour.kernel.processes import free_port, stop_process
from rushhour.scenarios.cli.ab import ab
from tests.support.traffic import short_texts
from tests.support.waiting import wait_for_http

TIMED_TARGET = Path(__file__).resolve().parents[2] / "support" / "timed_target.py"
SLOS = [{"name": "p99-free", "kind": "latency", "percentile": 99, "threshold_ms": 5000, "priority": "free"},
        {"name": "p99-paid", "kind": "latency", "percentile": 99, "threshold_ms": 5000, "priority": "paid"}]
P95_SLOS = [{**slo, "name": str(slo["name"]).replace("p99", "p95"), "percentile": 95} for slo in SLOS]
"""P95 needs 200 answers per arm and priority, which a test's half minute of load holds (P99 needs 1,000)."""


def _scenario(tmp_path: Path, *, slos: list[dict] | None = None, rate: int = 20, duration: str = "18s",
              model: str | None = None) -> Path:
    data = {"name": "abt", "traffic": {"model": model or f"constant:{rate}", "duration": duration, "seed": 7},
            "target": {"embedded": {"nodes": 1, "max_batch_size": 4}},
            "load": {"max_lag_p99_ms": 200}, "slos": SLOS if slos is None else slos}
    path = tmp_path / "abt.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(ab, list(args))
    return result.exit_code, result.output


@contextmanager
def _timed_targets() -> Iterator[Callable[..., str]]:
    """Start ground-truth targets (`tests/support/timed_target.py`); each is stopped by PID."""
    started: list[subprocess.Popen[bytes]] = []

    def start(delay_ms: float, fail_every: int = 0) -> str:
        port = free_port()
        proc = subprocess.Popen([sys.executable, str(TIMED_TARGET), str(port), str(delay_ms), str(fail_every)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append(proc)
        url = f"http://127.0.0.1:{port}"
        assert wait_for_http(url, proc=proc), "the timed target did not start"
        return url

    try:
        yield start
    finally:
        for proc in started:
            stop_process(proc, grace_s=2.0)


@pytest.fixture
def timed_target() -> Iterator[Callable[..., str]]:
    with _timed_targets() as start:
        yield start


def _run(tmp_path: Path, baseline: str, candidate: str, *extra: str, slos: list[dict] | None = None,
         duration: str = "18s", rate: int = 20) -> tuple[int, str, dict]:
    out = tmp_path / "out"
    path = _scenario(tmp_path, slos=slos, duration=duration, rate=rate)
    code, output = _invoke(str(path), "--baseline", baseline, "--candidate", candidate, "--out", str(out),
                           *(extra or ("--trials", "24")))
    doc = json.loads((out / AB_JSON_FILE).read_text()) if (out / AB_JSON_FILE).exists() else {}
    return code, output, doc


@pytest.mark.slow
@pytest.mark.parametrize("interleave", ["requests", "trials"])
def test_ab_same_timing_is_no_regression(tmp_path: Path, timed_target: Callable[..., str], interleave: str) -> None:
    """Both targets answer in 300 ms: long beside the delays a busy machine adds, so the median's
    interval can exclude the threshold on a loaded machine too; arms taking turns (trials) need that
    more than random arms. Half a minute of load cannot show failure shares within half a point
    (no failure in ~600 attempts bounds the share below ~0.8%), so the margin is two points here."""
    code, output, doc = _run(tmp_path, timed_target(300), timed_target(300), "--trials", "80",
                             "--interleave", interleave, "--error-margin", "0.02",
                             slos=[{**SLOS[0], "name": "p50-free", "percentile": 50}], duration="40s", rate=40)
    assert code == 0, output
    assert doc["verdict"] == "no_regression"
    assert all(0.9 < g["ratio"] < 1.1 and g["ci_high"] < 1.1 for g in doc["groups"])
    assert output.strip().splitlines()[-1].startswith("No regression:")
    for name in (AB_HTML_FILE, AB_MD_FILE, JUNIT_FILE):
        assert (tmp_path / "out" / name).stat().st_size > 0


@pytest.fixture(scope="module")
def slower_candidate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str, dict]:
    """One run of a 300 ms baseline against a 390 ms candidate (30 s of load, its P95 compared per
    priority), read by the two tests below: the verdict, and the same verdict rebuilt
    from a copy of its folder.

    30% slower, on delays long beside what a busy machine adds to both arms: a late send or
    answer of x ms shows the ratio as (390 + x) / (300 + x), still above 1.2 with x = 150 ms
    (at 100/130 ms, x = 50 ms already brings it down to 1.2)."""
    root = tmp_path_factory.mktemp("ab-slower")
    with pytest.MonkeyPatch.context() as env, _timed_targets() as start:
        env.setenv("RUSHHOUR_STATE_DIR", str(root / "state"))  # the run is made before each test's own state dir
        env.setenv("RUSHHOUR_NO_OVERHEAD_CHECK", "1")
        code, output, doc = _run(root, start(300), start(390), "--trials", "48", slos=P95_SLOS, duration="30s",
                                 rate=40)
    return root / "out", code, output, doc


@pytest.mark.slow
def test_ab_thirty_percent_slower_candidate_is_a_regression(slower_candidate: tuple[Path, int, str, dict]) -> None:
    out, code, output, doc = slower_candidate
    assert code == 1, output
    assert doc["verdict"] == "regression"
    assert all(1.2 < g["ratio"] < 1.4 and g["ci_low"] > 1.0 for g in doc["groups"])
    last = output.strip().splitlines()[-1]
    assert last.startswith("Regression:") and "x1.1 threshold" in last
    requests = pd.read_parquet(out / REQUESTS_FILE)
    sent = requests[requests["ok"]]
    means = sent.groupby("arm")["latency_ms"].median()
    assert 385 < means["candidate"] < 420 and 295 < means["baseline"] < 330  # the targets' own times, seen
    per_arm = requests.groupby("arm").size()  # each request to a random arm, at twice the rate: 40/s each
    assert ((per_arm > 0.85 * 40 * 30) & (per_arm < 1.15 * 40 * 30)).all(), per_arm.to_dict()


@pytest.mark.slow
def test_ab_candidate_shedding_a_tenth_instantly_is_a_regression(tmp_path: Path,
                                                                timed_target: Callable[..., str]) -> None:
    code, output, doc = _run(tmp_path, timed_target(100), timed_target(100, fail_every=10), slos=P95_SLOS)
    assert code == 1, output
    assert doc["arms"]["candidate"]["error_share"] == pytest.approx(0.10, abs=0.02)
    assert doc["arms"]["baseline"]["failed"] == 0
    assert all(row["worse"] for row in doc["errors"])
    assert output.strip().splitlines()[-1].startswith("Regression: the candidate failed")


@pytest.mark.slow
def test_ab_report_rebuilds_the_same_verdict(tmp_path: Path, slower_candidate: tuple[Path, int, str, dict]) -> None:
    from rushhour.scenarios.cli.report import report

    made, code, _, doc = slower_candidate
    shutil.copytree(made, tmp_path / "out")
    (tmp_path / "out" / AB_JSON_FILE).unlink()
    rebuilt = CliRunner().invoke(report, [str(tmp_path / "out")])
    assert rebuilt.exit_code == code == 1
    assert json.loads((tmp_path / "out" / AB_JSON_FILE).read_text())["groups"] == doc["groups"]


@pytest.mark.slow
def test_ab_two_embedded_reference_servers(tmp_path: Path) -> None:
    # chat-sized texts: what is tested is one server per arm and the verdict, not the documents' compute
    path = _scenario(tmp_path, slos=[SLOS[0]], duration="12s", model=str(short_texts(tmp_path, 4)))
    code, output = _invoke(str(path), "--baseline", "embedded", "--candidate", "embedded", "--trials", "8",
                           "--out", str(tmp_path / "out"))
    doc = json.loads((tmp_path / "out" / AB_JSON_FILE).read_text())
    assert code == doc["exit_code"] and code in (0, 3), output  # same server: never a regression
    assert doc["arms"]["baseline"]["ok"] > 0 and doc["arms"]["candidate"]["ok"] > 0
    assert doc["targets"]["baseline"].startswith("embedded (http://127.0.0.1:")
    assert doc["targets"]["baseline"] != doc["targets"]["candidate"]  # one server per arm


def test_ab_requests_design_draws_twice_the_rate_so_each_arm_carries_the_scenario(tmp_path: Path) -> None:
    path = str(_scenario(tmp_path, rate=20, duration="18s"))
    pinned = ("--seed", "11")  # the same draw in both plans: the comparison measures the design alone
    code, output = _invoke(path, "--baseline", "embedded", "--candidate", "embedded", *pinned, "--dry-run")
    assert code == 0, output
    assert "the requests in twos, one to each arm" in output and "2x the scenario's rate" in output
    requests_line = next(line for line in output.splitlines() if line.startswith("requests"))
    mean = float(requests_line.split("mean ")[1].split("/s")[0])
    _, trials_output = _invoke(path, "--baseline", "embedded", "--candidate", "embedded", "--interleave", "trials",
                               *pinned, "--dry-run")
    trials_line = next(line for line in trials_output.splitlines() if line.startswith("requests"))
    assert mean == pytest.approx(2 * float(trials_line.split("mean ")[1].split("/s")[0]), rel=0.1)
    assert 0.85 * 40 < mean < 1.15 * 40


def test_ab_unknown_target_exits_2_naming_it(tmp_path: Path) -> None:
    code, output = _invoke(str(_scenario(tmp_path)), "--baseline", "embeded", "--candidate", "embedded", "--dry-run")
    assert code == 2 and '--baseline: "embeded" is not a target' in output


def test_ab_unreachable_target_exits_2_naming_it(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    code, output = _invoke(str(_scenario(tmp_path)), "--baseline", "embedded", "--candidate", url,
                           "--out", str(tmp_path / "out"))
    assert code == 2 and f"--candidate {url}: the probe failed" in output
    assert not (tmp_path / "out").exists()  # refused before anything was booted or written


def test_ab_remote_target_needs_allow_remote(tmp_path: Path) -> None:
    code, output = _invoke(str(_scenario(tmp_path)), "--baseline", "http://[fd77::1]", "--candidate", "embedded")
    assert code == 2 and "--allow-remote" in output


def test_ab_scenario_without_latency_slo_exits_2_with_the_reason(tmp_path: Path) -> None:
    path = _scenario(tmp_path, slos=[{"name": "avail", "kind": "availability", "objective": 0.99}])
    code, output = _invoke(str(path), "--baseline", "embedded", "--candidate", "embedded", "--dry-run")
    assert code == 2 and "has no latency SLO" in output and "availability" in output


def test_ab_trials_not_a_multiple_of_four_exits_2(tmp_path: Path) -> None:
    code, output = _invoke(str(_scenario(tmp_path)), "--baseline", "embedded", "--candidate", "embedded",
                           "--trials", "10", "--dry-run")
    assert code == 2 and "--trials 10" in output


def test_ab_dry_run_prints_the_trial_order(tmp_path: Path) -> None:
    code, output = _invoke(str(_scenario(tmp_path)), "--baseline", "embedded", "--candidate", "embedded",
                           "--trials", "8", "--interleave", "trials", "--dry-run")
    assert code == 0, output
    order = next(line for line in output.splitlines() if line.startswith("trials")).split("order ")[1][:8]
    assert sorted(order[:4]) == sorted(order[4:]) == ["A", "A", "B", "B"]
