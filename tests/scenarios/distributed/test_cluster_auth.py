"""A real master on loopback lets in only workers that prove the cluster secret: a stranger is
refused and contributes nothing while the drill waits for the rightful worker; a worker refuses a
target its own guard does not allow; a worker with no master gives up after --connect-timeout."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from rushhour.kernel.processes import free_port, stop_process
from tests.scenarios.distributed.cluster_drill import SCENARIO, cluster_env, generator_target, rushhour, start

pytestmark = pytest.mark.slow


def _scenario(url: str) -> str:
    return SCENARIO.format(name="cluster-auth", duration="2s", seed=3, url=url)


@pytest.fixture
def target() -> Iterator[str]:
    with generator_target() as url:
        yield url


def test_a_stranger_with_a_wrong_secret_is_refused_and_the_drill_waits_for_the_rightful_worker(
    tmp_path: Path, target: str,
) -> None:
    (tmp_path / "scenario.yaml").write_text(_scenario(target), encoding="utf-8")
    bind = f"127.0.0.1:{free_port()}"
    master = start(rushhour("run", str(tmp_path / "scenario.yaml"), "--workers", "1", "--master-bind", bind,
                            "--no-probe", "--out", str(tmp_path / "out")), tmp_path / "master.log")
    procs = [master]
    try:
        stranger = subprocess.run(rushhour("worker", "--master", bind, "--name", "stranger", "--work-dir",
                                           str(tmp_path / "s"), "--connect-timeout", "60"),
                                  env=cluster_env("a-wrong-secret-of-some-length"), capture_output=True, text=True,
                                  timeout=90, check=False)
        assert stranger.returncode != 0
        assert "the cluster secret did not match" in stranger.stderr
        assert "rushhour " not in stranger.stderr.replace("`rushhour worker", ""), "the master's version leaked"
        rightful = start(rushhour("worker", "--master", bind, "--name", "rightful", "--work-dir",
                                  str(tmp_path / "r")), tmp_path / "rightful.log")
        procs.append(rightful)
        assert master.wait(timeout=150) == 0, (tmp_path / "master.log").read_text()
    finally:
        for proc in procs:
            stop_process(proc, grace_s=5)
    out = tmp_path / "out"
    requests = pd.read_parquet(out / "requests.parquet")
    assert len(requests) == len(pd.read_parquet(out / "schedule.parquet")) > 5
    assert requests["ok"].all() and (requests["fired"] == 1).all()
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    workers = next(e for e in events if e["type"] == "workers")["workers"]
    assert [w["host"] for w in workers] == ["rightful"]
    rejections = next(e for e in events if e["type"] == "cluster_rejections")
    assert any("did not match" in reason for reason in rejections["refused"])


def test_a_worker_refuses_a_remote_target_the_master_names_and_the_drill_stops_with_why(tmp_path: Path) -> None:
    (tmp_path / "scenario.yaml").write_text(_scenario("http://[fd77::1]:18080"), encoding="utf-8")
    bind = f"127.0.0.1:{free_port()}"
    master = start(rushhour("run", str(tmp_path / "scenario.yaml"), "--workers", "1", "--master-bind", bind,
                            "--no-probe", "--allow-remote", "--out", str(tmp_path / "out")), tmp_path / "master.log",
                   secret=None)
    try:
        worker = subprocess.run(rushhour("worker", "--master", bind, "--work-dir", str(tmp_path / "w")),
                                env=cluster_env(None), capture_output=True, text=True, timeout=90, check=False)
        assert master.wait(timeout=90) == 3
    finally:
        stop_process(master, grace_s=5)
    assert worker.returncode == 2 and "not on this worker's machine" in worker.stderr, worker.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert "refused by the worker" in " ".join(summary["aborted"])
    assert not pd.read_parquet(tmp_path / "out" / "requests.parquet")["fired"].any()


def test_a_worker_without_a_master_says_so_and_gives_up_after_its_connect_timeout(tmp_path: Path) -> None:
    done = subprocess.run(rushhour("worker", "--master", f"127.0.0.1:{free_port()}", "--connect-timeout", "2",
                                   "--work-dir", str(tmp_path)), env=cluster_env(None), capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 3
    assert "no master welcomed this worker: waited 2 s" in done.stderr
