"""Leases: a configurable margin, and the detached keeper that undoes a fault its target cannot time out."""

from __future__ import annotations

import os
import time

import psutil
import pytest
from chaoslib.exceptions import ActivityFailed

from experiments import leasekeeper, leases


def test_lease_margin_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(leases.MARGIN_ENV, raising=False)
    assert leases.lease_s(1.0, hold_s=10.0) == 10.0 + leases.LEASE_MARGIN_S
    monkeypatch.setenv(leases.MARGIN_ENV, "4")
    assert leases.lease_s(1.0, hold_s=10.0) == 14.0
    assert leases.lease_s(1.0, hold_s=10.0, lease_margin_s=0) == 10.0  # an explicit margin wins
    monkeypatch.setenv(leases.MARGIN_ENV, "soon")
    with pytest.raises(ActivityFailed, match='RUSHHOUR_LEASE_MARGIN_S="soon"'):
        leases.lease_s(1.0, hold_s=10.0)


def test_lease_must_be_positive_and_bounded() -> None:
    for ttl in (0.0, float("nan"), 1e12):
        with pytest.raises(ActivityFailed, match="lease"):
            leases.lease_s(ttl)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_keeper_undoes_the_fault_when_the_lease_runs_out(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, object]] = []
    monkeypatch.setattr("experiments.local.redis.start_redis", lambda **kw: calls.append(kw))
    monkeypatch.setattr("experiments.local.redis.redis_running", lambda port: False)
    clock = Clock()
    outcome = leasekeeper.keep("start_redis", 5.5, {"port": 7000, "command": ""}, clock=clock, sleep=clock.sleep)
    assert outcome == "healed" and calls == [{"port": 7000, "command": ""}] and clock.now == pytest.approx(5.5)


def test_keeper_exits_early_when_the_rollback_came_first(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, object]] = []
    monkeypatch.setattr("experiments.local.redis.start_redis", lambda **kw: calls.append(kw))
    clock = Clock()
    monkeypatch.setattr("experiments.local.redis.redis_running", lambda port: clock.now >= 3)
    assert leasekeeper.keep("start_redis", 600, {"port": 7000}, clock=clock, sleep=clock.sleep) == "undone"
    assert calls == [] and clock.now == 3


def test_keeper_refuses_an_unknown_undo() -> None:
    with pytest.raises(ValueError, match='"rm_rf" is not an undo'):
        leasekeeper.keep("rm_rf", 1, {})
    assert leasekeeper.main(["rm_rf", "1", "{}"]) == 1
    assert leasekeeper.main([]) == 2


def test_spawned_keeper_is_detached_and_ends_with_its_lease() -> None:
    pid = leases.spawn_keeper("start_redis", 0.5, {"port": 1, "command": "true {port}"})
    proc = psutil.Process(pid)
    assert os.getsid(pid) == pid != os.getsid(0)  # its own session: no terminal signal reaches it
    give_up = time.monotonic() + 20
    while proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE and time.monotonic() < give_up:
        time.sleep(0.1)
    assert proc.status() == psutil.STATUS_ZOMBIE or not proc.is_running()
    proc.wait(timeout=5)
