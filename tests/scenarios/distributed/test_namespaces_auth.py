"""Across real separate hosts (network namespaces): a master bound beyond loopback lets in only
workers that prove the cluster secret. A stranger on another host with a wrong secret is refused
and the drill completes with the rightful worker. Skipped, with the reason, without namespaces."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.scenarios.distributed.netns import MASTER_ADDRESS, NetnsHosts, rushhour
from tests.scenarios.distributed.test_namespaces import MASTER_PORT, hosts  # noqa: F401 - the fixture

SECRET = "namespaces-auth-secret-0123456789"


@pytest.mark.slow
def test_namespaces_a_stranger_on_another_host_is_refused_and_the_rightful_worker_runs(
    hosts: NetnsHosts, tmp_path: Path,  # noqa: F811
) -> None:
    (tmp_path / "right.secret").write_text(SECRET)
    (tmp_path / "wrong.secret").write_text("not-the-right-secret-0123456789")
    (tmp_path / "scenario.yaml").write_text((tmp_path / "scenario.yaml").read_text().replace("constant:40", "constant:10"))
    master = hosts.start(hosts.master, rushhour("run", str(tmp_path / "scenario.yaml"), "--workers", "1",
                                                "--master-bind", f"{MASTER_ADDRESS}:{MASTER_PORT}", "--secret-file",
                                                str(tmp_path / "right.secret"), "--no-probe", "--out",
                                                str(tmp_path / "out")), tmp_path / "master.log")
    stranger = hosts.run(hosts.workers[1], rushhour(
        "worker", "--master", f"{MASTER_ADDRESS}:{MASTER_PORT}", "--name", "stranger", "--secret-file",
        str(tmp_path / "wrong.secret"), "--allowed-host", MASTER_ADDRESS, "--work-dir", str(tmp_path / "s")),
        timeout_s=120)
    assert stranger.returncode != 0 and "the cluster secret did not match" in stranger.stderr, stranger.stderr
    hosts.start(hosts.workers[0], rushhour("worker", "--master", f"{MASTER_ADDRESS}:{MASTER_PORT}", "--name", "w0",
                                           "--secret-file", str(tmp_path / "right.secret"), "--allowed-host",
                                           MASTER_ADDRESS, "--work-dir", str(tmp_path / "r")), tmp_path / "w0.log")
    assert master.wait(timeout=240) == 0, (tmp_path / "master.log").read_text()
    requests = pd.read_parquet(tmp_path / "out" / "requests.parquet")
    assert requests["ok"].all() and (requests["fired"] == 1).all()
    events = [json.loads(line) for line in (tmp_path / "out" / "events.jsonl").read_text().splitlines()]
    assert [w["host"] for w in next(e for e in events if e["type"] == "workers")["workers"]] == ["w0"]
    assert any("did not match" in r for r in next(e for e in events if e["type"] == "cluster_rejections")["refused"])
