"""The closed-loop throughput probe against services whose saturated throughput is known."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from rushhour.scenarios.capacity.bracket import knee_share
from rushhour.scenarios.capacity.job import CapacityJob
from rushhour.scenarios.capacity.runner import _planned
from rushhour.scenarios.capacity.steps import step_schedule
from rushhour.scenarios.capacity.target import Target
from rushhour.scenarios.capacity.throughput import FIRST_USERS, Level, closed_loop, next_users, row_sender
from rushhour.scenarios.cli.capacity import build_job
from rushhour.scenarios.spec.target import TargetProtocol
from rushhour.traffic_models import load_traffic_model
from tests.support.mdc import serve_mdc


def test_next_users_doubles_until_a_doubling_adds_too_little() -> None:
    assert next_users([]) == FIRST_USERS
    levels = [Level(4, 1.0, 40, 0)]
    assert next_users(levels) == 8
    levels.append(Level(8, 1.0, 80, 0))
    assert next_users(levels) == 16
    levels.append(Level(16, 1.0, 90, 0))  # 12% more: every slot already busy
    assert next_users(levels) is None


def test_next_users_stops_at_the_most_users_and_when_nothing_succeeds() -> None:
    assert next_users([Level(4, 1.0, 10, 0), Level(8, 1.0, 20, 0)], most=8) is None
    assert next_users([Level(4, 1.0, 0, 30)]) is None
    assert next_users([Level(4, 1.0, 10, 0), Level(8, 1.0, 25, 0)], most=12) == 12


def _slots(slots: int, service_s: float) -> tuple[threading.Semaphore, float]:
    return threading.Semaphore(slots), slots / service_s


def test_closed_loop_finds_the_saturation_of_a_service_with_fixed_slots() -> None:
    """A service of 8 slots each held 20 ms completes at most 400 answers/s: the loop doubles past
    8 users, sees no more gain, and reports at most that."""
    slots, service_s = 8, 0.02
    gate, most_rps = _slots(slots, service_s)

    def send(_i: int) -> bool:
        with gate:
            time.sleep(service_s)
        return True

    saturation = closed_loop(send, level_s=0.3)
    assert saturation.saturated
    users = [level.users for level in saturation.levels]
    assert users[:2] == [FIRST_USERS, 2 * FIRST_USERS] and users[-1] <= 4 * slots
    # each level's count is of answers in its own span: at most slots x span / service, plus the
    # answers of requests begun before the span (at most one per slot)
    assert all(level.ok <= most_rps * level.seconds + slots for level in saturation.levels)
    assert saturation.throughput_rps > 0


def test_closed_loop_counts_only_successful_answers() -> None:
    def send(i: int) -> bool:
        time.sleep(0.001)
        return i % 2 == 0

    saturation = closed_loop(send, level_s=0.2, most=8)
    assert all(level.failed > 0 and level.ok > 0 for level in saturation.levels)
    assert all(abs(level.ok - level.failed) <= 2 * level.users for level in saturation.levels)


@pytest.fixture
def mdc_url() -> Iterator[str]:
    yield from serve_mdc("4", "100")


@pytest.mark.slow
@pytest.mark.xdist_group("cpu-c")  # a closed loop judged against the server's known throughput: in a CPU lane
def test_closed_loop_over_http_finds_the_mdc_servers_saturated_throughput(mdc_url: str) -> None:
    """4 workers holding each request 100 ms: 40 answers/s with every worker busy, never more."""
    rows = step_schedule(load_traffic_model("constant:1"), rate_rps=100.0, duration_s=10.0, seed=3)
    with httpx.Client(base_url=mdc_url, trust_env=False) as client:
        saturation = closed_loop(row_sender(client, TargetProtocol(), rows, ("en-de",)))
    assert saturation.saturated, saturation
    assert 0.8 * 40.0 <= saturation.throughput_rps <= 40.0 * 1.1, saturation


def _p99_job(tmp_path: Path, url: str, *, min_rps: float) -> CapacityJob:
    """A capacity job against `url`: one request kind, a P99 within 500 ms, 60 s steps."""
    data = {"name": "mdc", "traffic": {"model": "constant:1", "duration": "60s", "seed": 3},
            "target": {"url": url}, "load": {"max_lag_p99_ms": 250},
            "slos": [{"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 500}]}
    path = tmp_path / "mdc.yaml"
    path.write_text(yaml.safe_dump(data))
    return build_job(str(path), target_url=url, slos=(), faults="none", min_rps=min_rps, max_rps=80.0,
                     precision=0.1, step_s=60.0, require_rps=None, out=tmp_path / "out", allow_remote=False, seed=None)


@pytest.mark.slow
@pytest.mark.xdist_group("cpu-c")
def test_a_probed_job_is_planned_around_the_mdc_servers_throughput(tmp_path: Path, mdc_url: str) -> None:
    """The runner's planning step: the probe under the condition, then the job's rates and step
    lengths from it (40 answers/s saturated: the search starts near 32 req/s, the estimated knee of
    a P99 of 500 ms, with 15 s steps)."""
    job = _p99_job(tmp_path, mdc_url, min_rps=20.0)
    said: list[str] = []
    calibrating = dataclasses.replace(job, probe=True, settings=dataclasses.replace(job.settings, generator_limits=True))
    planned, planning = _planned(calibrating, Target(mdc_url, None, mdc_url), "none", said.append)
    assert planning is not None and planning["plan"] is not None, said
    throughput = planning["probe"]["throughput_rps"]
    assert 0.8 * 40.0 <= throughput <= 1.1 * 40.0, said
    assert planned.start_rps == pytest.approx(knee_share(throughput, job.slos) * throughput * planned.settings.growth,
                                              rel=0.01)
    assert planned.rules.measure_s == planning["plan"]["step_duration_s"] < job.rules.measure_s
    assert planned.start_rps is not None
    assert planned.measure_at is not None and planned.measure_at(planned.start_rps) == planned.rules.measure_s
    assert planned.settings.min_rps < planned.start_rps < 40.0 < planned.settings.max_rps
    assert planned.settings.generator_limits
    assert planned.settings.accelerate_above == pytest.approx(throughput * planned.settings.growth ** 2, rel=0.01)
    assert any("throughput probe" in line for line in said) and any("searching" in line for line in said)
    unplanned, nothing = _planned(job, Target(mdc_url, None, mdc_url), "none", said.append)
    assert unplanned is job and nothing is None


def test_a_plan_after_a_known_failure_stays_below_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A re-measure's plan (the cached figure just missed its check at 30 req/s): the probe reads 40
    answers/s, whose estimated knee (~32) lies above the failure, so the search tops out at 30 and
    starts one precision below it, with the step length of that rate."""
    from rushhour.scenarios.capacity import runner
    from rushhour.scenarios.capacity.search import StepVerdict
    from rushhour.scenarios.capacity.throughput import Saturation

    monkeypatch.setattr(runner, "settle", lambda _url: None)
    monkeypatch.setattr(runner, "_flush_cache", lambda _target: None)
    monkeypatch.setattr(runner, "measure_throughput",
                        lambda _job, _url: Saturation((Level(4, 1.5, 45, 0), Level(8, 1.5, 60, 0)), True))
    url = "http://127.0.0.1:9"
    job = _p99_job(tmp_path, url, min_rps=6.0)
    said: list[str] = []
    known = StepVerdict(30.0, "fail", "p99", "check")
    free, _ = runner._planned(dataclasses.replace(job, probe=True), Target(url, None, url), "none", said.append)
    assert free.start_rps is not None and free.start_rps > 30.0  # the knee estimate alone would start above it
    planned, planning = runner._planned(dataclasses.replace(job, probe=True, known_fail=known),
                                        Target(url, None, url), "none", said.append)
    assert planning is not None and planning["plan"] is not None
    assert planned.settings.max_rps == 30.0 and planned.start_rps == pytest.approx(30.0 / planned.settings.growth)
    assert planning["plan"]["start_rps"] == pytest.approx(planned.start_rps, abs=0.01)
    assert planned.measure_at is not None and planned.start_rps is not None
    assert planned.rules.measure_s == planned.measure_at(planned.start_rps)
    too_low = StepVerdict(planned.settings.min_rps * 0.9, "fail", "p99", "check")
    unplanned, nothing = runner._planned(dataclasses.replace(job, probe=True, known_fail=too_low),
                                         Target(url, None, url), "none", said.append)
    assert nothing is not None and nothing["plan"] is None and unplanned.settings == job.settings
    assert "which just failed" in said[-1]
