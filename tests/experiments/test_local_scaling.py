"""A local scale is a fault with a lease: a real lease keeper scales the pool back when the lease lapses
(with the admin token from its environment, never its command line), and the rollback ends the lease."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from rushhour.experiments import leasekeeper, leases
from rushhour.experiments.local import actions, scaling

Fake = tuple[Any, dict[str, Any], dict[str, Any]]


@pytest.fixture(autouse=True)
def private_leases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUSHHOUR_LEASE_DIR", str(tmp_path / "leases"))
    monkeypatch.setattr(scaling, "_ORIGINAL", {})


def _scaled_to(cluster: Any, pool: str, count: int) -> None:
    """What the gateway does on a scale (the fake only records the call)."""
    with cluster.lock:
        for node in [n for n in cluster.states if n.startswith(pool + "-")][count:]:
            del cluster.states[node]


def test_a_lapsed_scale_lease_is_undone_by_a_real_keeper_with_the_token(fake_cluster: Fake) -> None:
    cluster, config, secrets = fake_cluster
    result = actions.scale_pool("quality", 0, ttl_s=1.5, configuration=config, secrets=secrets)
    _scaled_to(cluster, "quality", 0)
    keeper = psutil.Process(result["lease_keeper_pid"])
    assert result["original_nodes"] == 3 and secrets["admin_token"] not in " ".join(keeper.cmdline())
    assert "RUSHHOUR_CLUSTER_SECRET" not in keeper.environ()
    deadline = time.monotonic() + 20
    restore = ("POST", "/admin/pools/quality/scale", {"nodes": 3})
    while restore not in cluster.calls and time.monotonic() < deadline:
        time.sleep(0.1)
    assert cluster.calls == [("POST", "/admin/pools/quality/scale", {"nodes": 0}), restore]
    keeper.wait(timeout=10)
    assert not leases.lease_file(scaling._lease_name(config["rushhour_url"], "quality")).exists()


def test_scaling_back_to_the_original_size_is_the_rollback_and_ends_the_lease(
    fake_cluster: Fake, monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster, config, secrets = fake_cluster
    spawned: list[tuple[str, dict[str, Any], dict[str, str]]] = []

    def spawn(undo: str, after_s: float, args: dict[str, Any], env: dict[str, str]) -> int:
        spawned.append((undo, args, env))
        return 1

    monkeypatch.setattr(scaling, "spawn_keeper", spawn)
    actions.scale_pool("quality", 1, configuration=config, secrets=secrets)
    actions.scale_pool("quality", 0, configuration=config, secrets=secrets)  # a second scale keeps the first size
    assert [(undo, args["nodes"]) for undo, args, _ in spawned] == [("restore_pool_size", 3)]
    assert spawned[0][2] == {"RUSHHOUR_ADMIN_TOKEN": secrets["admin_token"]}
    path = Path(spawned[0][1]["lease_file"])
    assert path.exists()
    assert actions.scale_pool("quality", 3, configuration=config, secrets=secrets)["restored"]
    assert not path.exists() and actions.restore_pool("quality", configuration=config, secrets=secrets) == {
        "pool": "quality", "restored": False}
    assert [body["nodes"] for _, _, body in cluster.calls] == [1, 0, 3]


def test_the_keeper_waits_out_a_renewed_scale_lease_then_restores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    sizes: list[int] = []
    monkeypatch.setattr(leases, "lease_clock", lambda: now[0])
    monkeypatch.setattr(scaling, "pool_size_is", lambda url, pool, nodes: now[0] < 1 or bool(sizes))
    monkeypatch.setattr(scaling, "restore_pool_size", lambda url, pool, nodes: sizes.append(nodes))
    monkeypatch.setattr(leases, "lease_dir", lambda: tmp_path)
    path = leases.lease_file("scale-x-quality")
    monkeypatch.setattr("rushhour.experiments.leasefiles.lease_clock", lambda: now[0])
    leases.new_lease_file("scale-x-quality", 10.0)

    def sleep(seconds: float) -> None:
        now[0] += seconds

    outcome = leasekeeper.keep("restore_pool_size", 10.0, {"url": "http://127.0.0.1:1", "pool": "quality",
                                                           "nodes": 3, "lease_file": str(path)},
                               clock=lambda: now[0], sleep=sleep)
    assert outcome == "healed" and sizes == [3] and now[0] == pytest.approx(10.0)
