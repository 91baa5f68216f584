"""Kubernetes faults on renewed leases, against fakes of the official client: the keeper and the
mark come before the fault, an operator's cordon survives a drain, a scale-to-zero is scaled
back by its keeper, and renewals move the marks while the experiment holds the fault."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from rushhour.experiments import leases
from rushhour.experiments.kubernetes import actions, marked, objects
from rushhour.experiments.kubernetes.leases import keep_swept, sweep


def _merge(annotations: dict[str, str], patch: dict[str, Any]) -> dict[str, str]:
    for key, value in (patch.get("metadata", {}).get("annotations") or {}).items():
        if value is None:
            annotations.pop(key, None)
        else:
            annotations[key] = value
    return annotations


class FakeCore:
    """Nodes as the API holds them: spec.unschedulable and annotations, merge patches applied."""

    def __init__(self, nodes: dict[str, bool], log: list[str]) -> None:
        self.nodes = {name: SimpleNamespace(metadata=SimpleNamespace(name=name, annotations={}),
                                            spec=SimpleNamespace(unschedulable=cordoned))
                      for name, cordoned in nodes.items()}
        self.log = log

    def list_node(self, label_selector: str = "") -> SimpleNamespace:
        return SimpleNamespace(items=list(self.nodes.values()))

    def read_node(self, name: str) -> SimpleNamespace:
        return self.nodes[name]

    def patch_node(self, name: str, body: dict[str, Any]) -> None:
        node = self.nodes[name]
        _merge(node.metadata.annotations, body)
        if "spec" in body:
            node.spec.unschedulable = body["spec"]["unschedulable"]
        if "spec" in body:
            self.log.append(f"patch {name} {'cordon' if body['spec']['unschedulable'] else 'uncordon'}")


class FakeApps:
    def __init__(self, replicas: int, log: list[str]) -> None:
        self.deployment = SimpleNamespace(metadata=SimpleNamespace(name="rushhour-quality", annotations={}),
                                          spec=SimpleNamespace(replicas=replicas))
        self.log = log

    def read_namespaced_deployment(self, name: str, ns: str) -> SimpleNamespace:
        return self.deployment

    def list_namespaced_deployment(self, ns: str) -> SimpleNamespace:
        return SimpleNamespace(items=[self.deployment])

    def patch_namespaced_deployment(self, name: str, ns: str, body: dict[str, Any]) -> None:
        _merge(self.deployment.metadata.annotations, body)
        if "spec" in body:
            self.deployment.spec.replicas = body["spec"]["replicas"]
            self.log.append(f"scale {body['spec']['replicas']}")


class NoPolicies:
    def list_namespaced_network_policy(self, ns: str, label_selector: str) -> SimpleNamespace:
        return SimpleNamespace(items=[])


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    log: list[str] = []
    core = FakeCore({"gpu-a": False, "gpu-b": True, "gpu-c": False}, log)  # gpu-b: an operator's cordon
    apps = FakeApps(2, log)
    fake_client = SimpleNamespace(CoreV1Api=lambda api: core, AppsV1Api=lambda api: apps)
    monkeypatch.setattr(actions, "client", fake_client)
    monkeypatch.setattr(actions, "create_k8s_api_client", lambda secrets: None)
    def spawn_keeper(undo: str, after: float, args: dict[str, Any], secrets: dict[str, str] | None = None) -> int:
        log.append(f"keeper {undo}")
        return 4242

    def drain_nodes(name: str, timeout: float, secrets: object) -> list[str]:
        log.append(f"drain {name}")
        return [name]

    monkeypatch.setattr(marked, "spawn_keeper", spawn_keeper)
    monkeypatch.setattr(actions, "drain_nodes", drain_nodes)
    return SimpleNamespace(core=core, apps=apps, log=log)


def _sweep(cluster: SimpleNamespace, now: float) -> list[dict[str, Any]]:
    return sweep("rushhour", now=now, networking=NoPolicies(), core=cluster.core, apps=cluster.apps)


def test_drain_marks_and_starts_its_keeper_before_it_evicts(cluster: SimpleNamespace) -> None:
    drained = actions.drain_gpu_nodes(count=2, hold_s=0, ttl_s=60)
    assert drained == ["gpu-a", "gpu-c"], "an operator's cordoned node was chosen"
    assert cluster.log == ["keeper sweep_kubernetes", "patch gpu-a cordon", "patch gpu-c cordon",
                           "drain gpu-a", "drain gpu-c"]


def test_an_operators_cordon_survives_a_drain_its_rollback_and_its_keeper(cluster: SimpleNamespace) -> None:
    actions.drain_gpu_nodes(count=3, hold_s=0, ttl_s=60)
    assert objects.CORDONED_BY not in cluster.core.nodes["gpu-b"].metadata.annotations
    assert actions.uncordon_gpu_nodes() == ["gpu-a", "gpu-c"]
    assert cluster.log[-2:] == ["patch gpu-a uncordon", "patch gpu-c uncordon"]
    assert cluster.core.nodes["gpu-b"].spec.unschedulable is True
    actions.cordon_gpu_nodes(hold_s=0, ttl_s=1)
    _sweep(cluster, now=10**12)  # every lease long expired: the keeper's sweep
    assert cluster.core.nodes["gpu-b"].spec.unschedulable is True
    assert not cluster.core.nodes["gpu-a"].spec.unschedulable and not cluster.core.nodes["gpu-c"].spec.unschedulable


def test_a_drain_that_dies_mid_eviction_is_undone_by_its_keeper(cluster: SimpleNamespace,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    def killed(name: str, timeout: int, secrets: object) -> list[str]:
        raise KeyboardInterrupt  # the harness dies here: no rollback will come

    monkeypatch.setattr(actions, "drain_nodes", killed)
    with pytest.raises(KeyboardInterrupt):
        actions.drain_gpu_nodes(count=1, hold_s=600)
    leases.release("k8s|")  # the dead harness renews nothing
    assert cluster.core.nodes["gpu-a"].spec.unschedulable is True
    expires = objects.lease_expiry(cluster.core.nodes["gpu-a"].metadata.annotations)
    assert expires is not None
    clock = SimpleNamespace(now=expires - 5.0)
    outcome = keep_swept(after_s=30, clock=lambda: clock.now, sleep=lambda s: setattr(clock, "now", clock.now + s),
                         sweeper=lambda: _sweep(cluster, clock.now))
    assert outcome == "healed" and cluster.core.nodes["gpu-a"].spec.unschedulable is False
    assert clock.now >= expires and cluster.core.nodes["gpu-b"].spec.unschedulable is True


def test_scale_to_zero_is_marked_with_its_lease_and_scaled_back_when_it_lapses(cluster: SimpleNamespace) -> None:
    result = actions.scale_pool("quality", 0, hold_s=0, ttl_s=30)
    assert cluster.log == ["keeper sweep_kubernetes", "scale 0"] and result["restore_to"] == 2
    assert cluster.apps.deployment.metadata.annotations[objects.SCALED_FROM] == "2"
    expires = objects.lease_expiry(cluster.apps.deployment.metadata.annotations) or 0.0
    assert [f["removed"] for f in _sweep(cluster, now=expires - 1)] == [False]
    assert [f["removed"] for f in _sweep(cluster, now=expires + 1)] == [True]
    assert cluster.apps.deployment.spec.replicas == 2 and cluster.apps.deployment.metadata.annotations == {}


def test_scaling_back_is_the_rollback_and_removes_the_mark(cluster: SimpleNamespace) -> None:
    actions.scale_pool("quality", 0, hold_s=0, ttl_s=30)
    actions.scale_pool("quality", 2)
    assert cluster.apps.deployment.spec.replicas == 2 and cluster.apps.deployment.metadata.annotations == {}
    assert _sweep(cluster, now=10**12) == []


def test_a_held_cordon_is_renewed_on_the_node(cluster: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(leases.LEASE_ENV, "0.4")
    actions.cordon_gpu_nodes(hold_s=60)
    first = objects.lease_expiry(cluster.core.nodes["gpu-a"].metadata.annotations) or 0.0
    time.sleep(0.35)
    leases.release("k8s|")
    renewed = objects.lease_expiry(cluster.core.nodes["gpu-a"].metadata.annotations) or 0.0
    assert renewed > first, "the held cordon's lease was not renewed"
    assert objects.CORDONED_BY not in cluster.core.nodes["gpu-b"].metadata.annotations
