"""Lease files cannot be turned against their user: the folder is private and checked, a planted link is
replaced, never written through, and read as an expired lease; a wall clock stepped back does not extend
a lease, because its end is on the boot clock."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from rushhour.experiments import leasefiles, leases
from rushhour.experiments.leasefiles import LeaseFolderError, lease_clock, lease_dir


def test_lease_folder_defaults_to_one_of_this_users_own(tmp_path: Path) -> None:
    runtime = tmp_path / "run-user"
    runtime.mkdir(mode=0o700)
    assert lease_dir({"XDG_RUNTIME_DIR": str(runtime)}) == runtime / "rushhour-leases"
    assert (os.stat(runtime / "rushhour-leases").st_mode & 0o777) == 0o700
    assert lease_dir({}).name == f"rushhour-leases-{os.getuid()}"


def test_a_lease_folder_that_is_a_link_or_open_to_others_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    with pytest.raises(LeaseFolderError, match=r'"[^"]*shared" is open to other users \(mode 0777\)'):
        lease_dir({"RUSHHOUR_LEASE_DIR": str(shared)})
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    (tmp_path / "planted").symlink_to(mine)
    with pytest.raises(LeaseFolderError, match="is a symbolic link"):
        lease_dir({"RUSHHOUR_LEASE_DIR": str(tmp_path / "planted")})


@pytest.mark.skipif(os.getuid() != 0, reason="giving a folder to another user needs root")
def test_a_lease_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 4242, -1)
    with pytest.raises(LeaseFolderError, match="belongs to user id 4242"):
        lease_dir({"RUSHHOUR_LEASE_DIR": str(theirs)})


def test_a_planted_link_is_replaced_never_written_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "leases"
    monkeypatch.setenv("RUSHHOUR_LEASE_DIR", str(folder))
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file", encoding="utf-8")
    path = leases.lease_file("redis-7000")
    path.symlink_to(victim)
    assert leases.read_lease(path) == 0.0, "a link must read as a lease already over"
    for predictable in (path.with_suffix(f".{os.getpid()}.tmp"), path.with_suffix(".tmp")):
        predictable.symlink_to(victim)  # the temporary names a writer could once be expected to use
    assert leases.write_lease(path, 20.0)
    assert victim.read_text(encoding="utf-8") == "the user's own file"
    assert not path.is_symlink() and json.loads(path.read_text())[leasefiles.END_FIELD] > lease_clock() + 19
    assert leases.new_lease_file("redis-7000", 5.0) == path and not path.is_symlink()
    assert victim.read_text(encoding="utf-8") == "the user's own file"


def test_a_wall_clock_stepped_back_does_not_extend_a_lease(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUSHHOUR_LEASE_DIR", str(tmp_path / "leases"))
    path = leases.new_lease_file("redis-7001", 2.0)
    real = time.time
    monkeypatch.setattr(leases.time, "time", lambda: real() - 3600.0)  # the date is set an hour back
    end = leases.read_lease(path)
    assert end is not None and 0 < end - leases.time.time() <= 2.0, "the step moved the lease's end"
    stepped = [real() - 3600.0]
    end = leases.read_lease(path, clock=lambda: stepped[0])
    assert end is not None and 0 < end - stepped[0] <= 2.0


def test_the_keeper_heals_on_time_though_the_date_is_set_an_hour_back_mid_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rushhour.experiments import leasekeeper

    boot, wall = [100.0], [1_800_000_000.0]
    healed_at: list[float] = []
    monkeypatch.setattr(leases, "lease_clock", lambda: boot[0])
    monkeypatch.setattr(leasefiles, "lease_clock", lambda: boot[0])
    monkeypatch.setattr("rushhour.experiments.local.redis.start_redis", lambda **kw: healed_at.append(boot[0]))
    monkeypatch.setattr("rushhour.experiments.local.redis.redis_running", lambda port: False)
    monkeypatch.setenv("RUSHHOUR_LEASE_DIR", str(tmp_path / "leases"))
    path = leases.new_lease_file("redis-7002", 10.0)

    def sleep(seconds: float) -> None:
        boot[0] += seconds
        wall[0] += seconds
        if 102.0 <= boot[0] < 102.0 + seconds:
            wall[0] -= 3600.0  # someone sets the date an hour back, two seconds in

    outcome = leasekeeper.keep("start_redis", 10.0, {"port": 7002, "lease_file": str(path)},
                               clock=lambda: wall[0], sleep=sleep)
    assert outcome == "healed" and healed_at == [pytest.approx(110.0)]
