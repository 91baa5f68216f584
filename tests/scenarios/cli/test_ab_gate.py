"""The nightly gate's hard cases against ground-truth targets: rare failures in both arms, a
cache-warm baseline, and the runner's calibration quoted by later verdicts."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rushhour.kernel.contract import AB_JSON_FILE
from rushhour.kernel.processes import free_port, stop_process
from rushhour.scenarios.cli.ab import ab
from tests.support.waiting import wait_for_http

SUPPORT = Path(__file__).resolve().parents[2] / "support"
P99 = {"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 5000, "priority": "paid"}
P95 = {**P99, "name": "p95", "percentile": 95}


@pytest.fixture
def target() -> Iterator[Callable[..., str]]:
    """Start a ground-truth target script of tests/support with its arguments; stopped by PID."""
    started: list[subprocess.Popen[bytes]] = []

    def start(script: str, *args: object) -> str:
        port = free_port()
        proc = subprocess.Popen([sys.executable, str(SUPPORT / script), str(port), *map(str, args)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append(proc)
        url = f"http://127.0.0.1:{port}"
        assert wait_for_http(url, proc=proc), f"{script} did not start"
        return url

    yield start
    for proc in started:
        stop_process(proc, grace_s=2.0)


def _scenario(tmp_path: Path, *, rate: int, duration: str, slo: dict) -> Path:
    """One priority of chat-sized texts from a Zipf catalog (texts repeat within a night, as in service)."""
    model = tmp_path / "paid.yaml"
    model.write_text(yaml.safe_dump({
        "description": "paid chat-sized texts", "base_rps": rate, "curve": "flat",
        "mix": {"kinds": {"short": {"fraction": 1.0, "chars": {"median": 90, "sigma": 0.7, "min": 5, "max": 800}}},
                "priorities": {"paid": {"fraction": 1.0, "deadline_ms": 5000}}}}))
    path = tmp_path / "gate.yaml"
    path.write_text(yaml.safe_dump({"name": "gate", "traffic": {"model": str(model), "duration": duration},
                                    "load": {"max_lag_p99_ms": 300}, "slos": [slo]}))
    return path


def _night(scenario: Path, out: Path, baseline: str, candidate: str, *extra: str) -> tuple[int, str, dict]:
    result = CliRunner().invoke(ab, [str(scenario), "--baseline", baseline, "--candidate", candidate,
                                     "--out", str(out), "--trials", "64", *extra])
    doc = json.loads((out / AB_JSON_FILE).read_text()) if (out / AB_JSON_FILE).exists() else {}
    return result.exit_code, result.output, doc


@pytest.mark.slow
@pytest.mark.parametrize(("candidate_ms", "expected"), [(300, 0), (390, 1)], ids=["same-code", "x1.3-slower"])
def test_ab_one_in_four_hundred_failing_in_both_arms(tmp_path: Path, target: Callable[..., str],
                                                     candidate_ms: int, expected: int) -> None:
    """Both targets fail 1 request in 400 at once (0.25%) and answer the rest in a known time: the
    same code passes with the default 0.5-point margin shown, and a x1.3 slower one is flagged."""
    scenario = _scenario(tmp_path, rate=60, duration="40s", slo=P99)
    code, output, doc = _night(scenario, tmp_path / "out", target("timed_target.py", 300, 400),
                               target("timed_target.py", candidate_ms, 400))
    assert code == expected, output
    assert all(0.0 < doc["arms"][arm]["error_share"] < 0.006 for arm in ("baseline", "candidate"))
    [group] = doc["groups"]
    assert group["compared"] and group["samples"]["baseline"] > 1000
    if expected == 0:
        assert group["ci_high"] < 1.1
    else:  # a busy machine adds x ms to both: (390 + x) / (300 + x)
        assert 1.15 < group["ratio"] < 1.35  # the answers' P99: instant failures left out, not counted as fast
    if expected == 0:
        assert doc["errors"][0]["not_worse"]
        assert "shown not worse by more than 0.50 percentage points" in doc["sentence"]
    else:
        assert doc["sentence"].startswith("Regression: candidate/baseline P99")


@pytest.mark.slow
def test_ab_cache_warm_baseline_against_a_cold_twin_is_invalid_and_fresh_texts_cure_it(
        tmp_path: Path, target: Callable[..., str]) -> None:
    scenario = _scenario(tmp_path, rate=20, duration="12s", slo=P95)
    warm = target("cache_target.py", 150)
    _night(scenario, tmp_path / "night1", warm, warm, "--seed", "5")  # the long-lived baseline sees the texts
    code, output, doc = _night(scenario, tmp_path / "night2", warm, target("cache_target.py", 150), "--seed", "5")
    assert code == 3, output
    assert doc["verdict"] == "invalid" and doc["cache"]["confounded"]
    assert doc["cache"]["baseline"] > 0.95 and doc["cache"]["candidate"] < 0.8
    assert "the baseline answered" in doc["sentence"] and "from its cache" in doc["sentence"]
    assert "Regression" not in output
    code, output, doc = _night(scenario, tmp_path / "night3", warm, target("cache_target.py", 150))  # fresh seed
    assert not doc["cache"]["confounded"], output
    assert abs(doc["cache"]["baseline"] - doc["cache"]["candidate"]) < 0.1
    assert doc["design"]["seed"] != 5 and doc["design"]["text_salt"] != 0


@pytest.mark.slow
def test_ab_calibrate_writes_a_record_that_later_verdicts_quote(tmp_path: Path, target: Callable[..., str]) -> None:
    scenario = _scenario(tmp_path, rate=30, duration="8s", slo=P95)
    url = target("timed_target.py", 200)
    record = tmp_path / "runner" / "ab-calibration.json"
    record.parent.mkdir()
    result = CliRunner().invoke(ab, ["calibrate", str(scenario), "--baseline", url, "--nights", "2",
                                     "--record", str(record), "--out", str(tmp_path / "nights"), "--trials", "32"])
    assert result.exit_code == 0, result.output
    data = json.loads(record.read_text())
    assert data["nights"] == 2 and len(data["night_rows"]) == 2
    alarms = sum(row["verdict"] == "regression" for row in data["night_rows"])
    assert data["false_alarms"] == alarms
    assert data["false_alarm_bound"] == pytest.approx(1 - 0.05 ** 0.5 if alarms == 0 else 1.0, rel=1e-6)
    assert len({row["seed"] for row in data["night_rows"]}) == 2  # a fresh seed per night
    assert (tmp_path / "nights" / "night-001" / AB_JSON_FILE).exists()
    quoted = f"on this runner: {alarms} false alarm"
    assert quoted in result.output
    code, output, doc = _night(scenario, tmp_path / "later", url, url, "--calibration", str(record))
    assert quoted in doc["sentence"] and doc["calibration"]["nights"] == 2
    assert output.strip().splitlines()[-1] == doc["sentence"]


def test_ab_unreadable_calibration_record_exits_2_naming_it(tmp_path: Path) -> None:
    record = tmp_path / "bad.json"
    record.write_text("{not json")
    scenario = _scenario(tmp_path, rate=10, duration="4s", slo=P95)
    result = CliRunner().invoke(ab, [str(scenario), "--baseline", "embedded", "--candidate", "embedded",
                                     "--calibration", str(record), "--dry-run"])
    assert result.exit_code == 2 and f'"{record}" is not JSON' in result.output


def test_ab_dry_run_says_the_drawn_seed_and_the_warm_up(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, rate=10, duration="20s", slo=P95)
    seeds = set()
    for _ in range(2):
        result = CliRunner().invoke(ab, [str(scenario), "--baseline", "embedded", "--candidate", "embedded",
                                         "--trials", "40", "--dry-run"])
        assert result.exit_code == 0, result.output
        line = next(x for x in result.output.splitlines() if x.startswith("seed"))
        assert "the first 2 slice pair(s) warm both arms" in line
        seeds.add(line.split()[1])
    assert len(seeds) == 2  # drawn per night
    pinned = CliRunner().invoke(ab, [str(scenario), "--baseline", "embedded", "--candidate", "embedded",
                                     "--seed", "9", "--dry-run"])
    assert "seed       9 " in pinned.output
