"""Leases: short and renewed while held, and the detached keeper that undoes a fault its target cannot time out."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from chaoslib.exceptions import ActivityFailed

from rushhour.experiments import leasekeeper, leases


def _renewer(log: list[float], *, held: bool = True) -> Callable[[float], bool]:
    """A renew callback that records each renewal and says whether the target still holds the fault."""
    def renew(seconds: float) -> bool:
        log.append(seconds)
        return held
    return renew

def test_held_lease_is_short_and_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(leases.LEASE_ENV, raising=False)
    assert leases.lease_s(600.0, hold_s=600.0) == leases.DEFAULT_LEASE_S == 20.0  # renewed, not hold-long
    assert leases.lease_s(60.0) == 60.0  # nothing held: the TTL as given
    monkeypatch.setenv(leases.LEASE_ENV, "4")
    assert leases.lease_s(1.0, hold_s=10.0) == 4.0
    for raw in ("soon", "0", "-3"):
        monkeypatch.setenv(leases.LEASE_ENV, raw)
        with pytest.raises(ActivityFailed, match=f'RUSHHOUR_LEASE_S="{raw}"'):
            leases.lease_s(1.0, hold_s=10.0)
    monkeypatch.setenv(leases.MARGIN_ENV, "soon")
    with pytest.raises(ActivityFailed, match='RUSHHOUR_LEASE_MARGIN_S="soon"'):
        leases.default_margin_s()


def test_hold_lease_renews_until_released_and_stops_when_nothing_is_held() -> None:
    renewals: list[float] = []
    leases.hold_lease("t|a", _renewer(renewals), 0.4, hold_s=60, every_s=0.02)
    time.sleep(0.2)
    assert len(renewals) >= 3 and set(renewals) == {0.4}
    assert leases.release("t|") == 1
    time.sleep(0.05)
    count = len(renewals)
    time.sleep(0.1)
    assert len(renewals) == count, "renewed after the release"
    gone: list[float] = []
    leases.hold_lease("t|b", _renewer(gone, held=False), 0.4, hold_s=60, every_s=0.02)
    time.sleep(0.15)
    assert len(gone) == 1, "renewed a fault the target said was no longer held"
    leases.release("t|")


def test_hold_lease_stops_at_the_end_of_hold_plus_margin() -> None:
    renewals: list[float] = []
    leases.hold_lease("t|c", _renewer(renewals), 0.4, hold_s=0.05, every_s=0.02, margin_s=0.05)
    time.sleep(0.3)
    count = len(renewals)
    time.sleep(0.1)
    assert 1 <= count == len(renewals)


def test_lease_file_renewal_and_removal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUSHHOUR_LEASE_DIR", str(tmp_path))
    path = leases.new_lease_file("redis-7000", 20.0)
    first = leases.read_lease(path)
    assert path.parent == tmp_path and first is not None and first > time.time() + 19
    assert leases.write_lease(path, 60.0) and (leases.read_lease(path) or 0) > first + 39
    path.write_text("mangled")
    assert leases.read_lease(path) == 0.0  # unreadable counts as expired
    path.unlink()
    assert leases.read_lease(path) is None and not leases.write_lease(path, 20.0)


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
    monkeypatch.setattr("rushhour.experiments.local.redis.start_redis", lambda **kw: calls.append(kw))
    monkeypatch.setattr("rushhour.experiments.local.redis.redis_running", lambda port: False)
    clock = Clock()
    outcome = leasekeeper.keep("start_redis", 5.5, {"port": 7000, "command": ""}, clock=clock, sleep=clock.sleep)
    assert outcome == "healed" and calls == [{"port": 7000, "command": ""}] and clock.now == pytest.approx(5.5)


def test_keeper_waits_for_the_fault_to_appear_before_judging_it_undone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Started before the fault: Redis still up at first is not an undo; up again after it was down is."""
    calls: list[dict[str, object]] = []
    monkeypatch.setattr("rushhour.experiments.local.redis.start_redis", lambda **kw: calls.append(kw))
    clock = Clock()
    monkeypatch.setattr("rushhour.experiments.local.redis.redis_running", lambda port: not 2 <= clock.now < 5)
    assert leasekeeper.keep("start_redis", 600, {"port": 7000}, clock=clock, sleep=clock.sleep) == "undone"
    assert calls == [] and clock.now == 5


def test_keeper_follows_a_renewed_lease_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, object]] = []
    monkeypatch.setattr("rushhour.experiments.local.redis.start_redis", lambda **kw: calls.append(kw))
    monkeypatch.setattr("rushhour.experiments.local.redis.redis_running", lambda port: False)
    clock = Clock()
    monkeypatch.setattr(leases, "lease_clock", clock)  # the boot clock the lease files are written on
    path = tmp_path / "lease.json"

    def sleep(seconds: float) -> None:  # renewed every 5 s until t=30, then the holder is gone
        clock.sleep(seconds)
        if clock.now <= 30 and clock.now % 5 == 0:
            path.write_text(json.dumps({"expires_boot": clock.now + 20}))

    path.write_text(json.dumps({"expires_boot": 20}))
    outcome = leasekeeper.keep("start_redis", 20, {"port": 7000, "lease_file": str(path)}, clock=clock, sleep=sleep)
    assert outcome == "healed" and calls == [{"port": 7000}] and clock.now == pytest.approx(50)
    assert not path.exists()


def test_keeper_exits_when_the_rollback_removed_the_lease(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rushhour.experiments.local.redis.redis_running", lambda port: False)
    clock = Clock()
    outcome = leasekeeper.keep("start_redis", 20, {"port": 7000, "lease_file": str(tmp_path / "gone.json")},
                               clock=clock, sleep=clock.sleep)
    assert outcome == "undone" and clock.now == 0


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
