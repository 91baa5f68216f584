"""The local actions and probes against the in-process fake server: what they send and return."""

from __future__ import annotations

import json
from typing import Any

import pytest
from chaoslib.exceptions import ActivityFailed

from rushhour.experiments.local import actions, probes

Fake = tuple[Any, dict[str, Any], dict[str, Any]]


def test_kill_node_without_id_picks_first_ready_node_of_pool(fake_cluster: Fake) -> None:
    cluster, config, secrets = fake_cluster
    cluster.states["quality-0"] = "down"
    result = actions.kill_node(pool="quality", configuration=config, secrets=secrets)
    assert result["node"] == "quality-1"
    assert cluster.calls == [("POST", "/admin/nodes/quality-1/kill", None)]
    json.dumps(result)


def test_actions_accept_secrets_nested_by_scope(fake_cluster: Fake) -> None:
    cluster, config, secrets = fake_cluster
    actions.kill_node(node_id="fast-0", configuration=config, secrets={"rushhour": secrets})
    assert cluster.states["fast-0"] == "down"


@pytest.mark.slow
def test_fault_actions_send_the_contract_bodies(fake_cluster: Fake) -> None:
    cluster, config, secrets = fake_cluster
    kw: dict[str, Any] = {"configuration": config, "secrets": secrets}
    actions.partition_node(node_id="quality-1", mode="reset", ttl_s=5, **kw)
    actions.partition_node(node_id="quality-1", mode="blackhole", ttl_s=5, **kw)
    actions.add_latency(node_id="quality-0", latency_ms=300, jitter_ms=50, ttl_s=9, **kw)
    actions.inject_errors(node_id="fast-0", error_rate=0.25, ttl_s=7, **kw)
    actions.heal_node(node_id="quality-1", **kw)
    assert cluster.calls == [
        ("POST", "/admin/nodes/quality-1/faults", {"kind": "reset", "ttl_s": 5.0}),
        ("POST", "/admin/nodes/quality-1/faults", {"kind": "partition", "ttl_s": 5.0}),
        (
            "POST",
            "/admin/nodes/quality-0/faults",
            {"kind": "latency", "latency_ms": 300.0, "jitter_ms": 50.0, "ttl_s": 9.0},
        ),
        ("POST", "/admin/nodes/fast-0/faults", {"kind": "errors", "error_rate": 0.25, "ttl_s": 7.0}),
        ("DELETE", "/admin/nodes/quality-1/faults", None),
    ]


@pytest.mark.slow
def test_pool_actions_touch_every_node_of_the_pool_in_order(fake_cluster: Fake) -> None:
    cluster, config, secrets = fake_cluster
    kw: dict[str, Any] = {"configuration": config, "secrets": secrets}
    restarted = actions.restart_pool(pool="quality", **kw)
    assert restarted["nodes"] == ["quality-0", "quality-1", "quality-10"]
    assert all(body == {"warm": False} for _, _, body in cluster.calls)
    cluster.calls.clear()
    actions.kill_pool(pool="quality", **kw)
    assert probes.ready_nodes(pool="quality", **kw) == []
    assert probes.node_states(pool="fast", **kw) == {"fast-0": "ready"}
    assert actions.recover_pool(pool="quality", **kw)["restarted"] == restarted["nodes"]
    assert probes.all_nodes_ready(**kw) is True


def test_admin_actions_hit_their_endpoints(fake_cluster: Fake) -> None:
    cluster, config, secrets = fake_cluster
    kw: dict[str, Any] = {"configuration": config, "secrets": secrets}
    actions.scale_pool(pool="fast", nodes=3, **kw)
    actions.flush_cache(**kw)
    actions.reset(**kw)
    paths = [(m, p, b) for m, p, b in cluster.calls]
    assert paths == [
        ("POST", "/admin/pools/fast/scale", {"nodes": 3}),
        ("POST", "/admin/cache/flush", None),
        ("POST", "/admin/reset", None),
    ]


def test_wrong_token_fails_with_a_sentence_naming_the_status(fake_cluster: Fake) -> None:
    _, config, _ = fake_cluster
    with pytest.raises(ActivityFailed, match="answered 401"):
        actions.reset(configuration=config, secrets={"admin_token": "wrong"})


def test_unknown_node_and_bad_arguments_fail(fake_cluster: Fake) -> None:
    _, config, secrets = fake_cluster
    kw: dict[str, Any] = {"configuration": config, "secrets": secrets}
    with pytest.raises(ActivityFailed, match="404"):
        actions.kill_node(node_id="quality-99", **kw)
    with pytest.raises(ActivityFailed, match='"sideways"'):
        actions.partition_node(mode="sideways", **kw)
    with pytest.raises(ActivityFailed, match="between 0 and 1"):
        actions.inject_errors(error_rate=2.0, **kw)
    with pytest.raises(ActivityFailed, match='Pool "gpu"'):
        actions.kill_pool(pool="gpu", **kw)


def test_unreachable_server_fails_as_activity_failed() -> None:
    with pytest.raises(ActivityFailed, match="Could not reach"):
        actions.reset(configuration={"rushhour_url": "http://127.0.0.1:9"}, secrets={})


@pytest.mark.slow
def test_capacity_and_readiness_probes(fake_cluster: Fake) -> None:
    cluster, config, secrets = fake_cluster
    kw: dict[str, Any] = {"configuration": config, "secrets": secrets}
    cluster.states["quality-1"] = "warming"
    assert probes.ready_nodes(pool="quality", **kw) == ["quality-0", "quality-10"]
    assert probes.ready_nodes_at_least(pool="quality", n=2, **kw) is True
    assert probes.ready_nodes_at_least(pool="quality", n=3, **kw) is False
    assert probes.all_nodes_ready(pool="quality", **kw) is False
    assert probes.server_ready(**kw) is True
    assert probes.translation_served(**kw) is True
    cluster.states["quality-0"] = "down"
    assert probes.translation_served(allow_degraded=False, **kw) is False


@pytest.mark.slow
def test_slo_probes_from_metrics_deltas(fake_cluster: Fake) -> None:
    cluster, config, secrets = fake_cluster
    kw: dict[str, Any] = {"configuration": config, "secrets": secrets}
    cluster.buckets = {0.1: 50.0, 0.5: 90.0, 1.0: 100.0, float("inf"): 100.0}
    cluster.by_status = {"200": 99.0, "503": 1.0}
    # the counters above are history before the window: with no traffic in it, nothing is judged
    window = probes.slo_window(window_s=0.05, **kw)
    assert window["requests"] == 0 and window["p99_ms"] == 0.0
    assert probes.slo_met(p99_ms=1.0, max_error_rate=0.0, window_s=0.05, **kw) is True
