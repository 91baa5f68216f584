"""Each child gets only the rushhour secret it uses: Locust none (a distributed master gets the cluster
secret from the session), a chaos run the admin token the drill hands it, the reference server its admin
token; none of them the cluster secret by inheritance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rushhour.reference_server import launch
from rushhour.scenarios.load.locust import proxy_free_env
from rushhour.scenarios.run.chaos import process as chaosproc

SECRETS = {"RUSHHOUR_CLUSTER_SECRET": "cluster-secret-0123456789", "RUSHHOUR_ADMIN_TOKEN": "inherited-admin-token"}


class Captured(Exception):
    """Raised by the stand-in Popen once it has seen the environment."""


@pytest.fixture
def popen_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    seen: dict[str, Any] = {}

    def popen(*args: Any, **kwargs: Any) -> None:
        seen.update(kwargs["env"])
        raise Captured

    monkeypatch.setattr(chaosproc.subprocess, "Popen", popen)
    monkeypatch.setattr(launch.subprocess, "Popen", popen)
    return seen


def test_locust_inherits_no_rushhour_secret(popen_env: dict[str, Any]) -> None:
    env = proxy_free_env()
    assert not set(SECRETS) & set(env) and "PATH" in env


def test_a_chaos_run_gets_the_token_it_is_handed_and_not_the_cluster_secret(
    popen_env: dict[str, Any], tmp_path: Path,
) -> None:
    proc = chaosproc.ChaosProcess(name="x", experiment=tmp_path / "x.json", out_dir=tmp_path,
                                  env={"RUSHHOUR_ADMIN_TOKEN": "the-drills-token"})
    with pytest.raises(Captured):
        proc.launch()
    assert popen_env["RUSHHOUR_ADMIN_TOKEN"] == "the-drills-token" and "RUSHHOUR_CLUSTER_SECRET" not in popen_env


def test_the_reference_server_keeps_its_admin_token_but_not_the_cluster_secret(
    popen_env: dict[str, Any], tmp_path: Path,
) -> None:
    with pytest.raises(Captured):
        launch.ServerProcess(log_path=tmp_path / "server.log").start()
    assert popen_env["RUSHHOUR_ADMIN_TOKEN"] == "inherited-admin-token" and "RUSHHOUR_CLUSTER_SECRET" not in popen_env
