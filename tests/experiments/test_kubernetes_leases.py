"""Leases of the Kubernetes faults: marks on the objects, the sweep, the keeper the actions start."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from rushhour.experiments.kubernetes import actions, marked, objects
from rushhour.experiments.kubernetes.leases import sweep
from tests.experiments.test_kubernetes import round_trip


def _meta(name: str, annotations: dict[str, str] | None = None) -> SimpleNamespace:
    return SimpleNamespace(metadata=SimpleNamespace(name=name, annotations=annotations))


class FakeNetworking:
    def __init__(self, policies: list[SimpleNamespace]) -> None:
        self.policies = policies
        self.deleted: list[tuple[str, str]] = []
        self.selectors: list[str] = []

    def list_namespaced_network_policy(self, ns: str, label_selector: str) -> SimpleNamespace:
        self.selectors.append(label_selector)
        return SimpleNamespace(items=self.policies)

    def delete_namespaced_network_policy(self, name: str, ns: str) -> None:
        self.deleted.append((ns, name))


class FakeCore:
    def __init__(self, nodes: list[SimpleNamespace]) -> None:
        self.nodes = nodes
        self.patched: list[tuple[str, dict[str, Any]]] = []

    def list_node(self) -> SimpleNamespace:
        return SimpleNamespace(items=self.nodes)

    def patch_node(self, name: str, body: dict[str, Any]) -> None:
        self.patched.append((name, body))


def test_partition_policy_carries_its_lease_and_stays_a_valid_object() -> None:
    policy = objects.partition_policy("quality", "drill", expires_at=1000.5)
    assert round_trip(policy) == policy
    assert policy["metadata"]["annotations"] == {objects.LEASE_ANNOTATION: "1000.500"}
    assert objects.lease_expiry(policy["metadata"]["annotations"]) == 1000.5
    assert objects.lease_expiry({objects.LEASE_ANNOTATION: "garbage"}) == 0.0  # unreadable counts as expired
    assert objects.lease_expiry(None) is None


def test_cordon_patch_marks_the_node_and_uncordon_removes_the_marks() -> None:
    patch = objects.cordon_patch(50.0)
    assert patch["spec"] == {"unschedulable": True}
    assert patch["metadata"]["annotations"][objects.CORDONED_BY] == "rushhour"
    undo = objects.uncordon_patch()
    assert undo["spec"] == {"unschedulable": False}
    assert undo["metadata"]["annotations"] == {objects.CORDONED_BY: None, objects.LEASE_ANNOTATION: None}


def test_sweep_removes_only_expired_objects_of_ours() -> None:
    expired = _meta("rushhour-chaos-partition-quality", {objects.LEASE_ANNOTATION: "100"})
    current = _meta("rushhour-chaos-partition-fast", {objects.LEASE_ANNOTATION: "300"})
    networking = FakeNetworking([expired, current])
    core = FakeCore([
        _meta("gpu-a", {objects.CORDONED_BY: "rushhour", objects.LEASE_ANNOTATION: "150"}),
        _meta("gpu-b", {objects.CORDONED_BY: "rushhour", objects.LEASE_ANNOTATION: "900"}),
        _meta("gpu-c", {"someone-else": "x"}),  # cordoned or not, not ours: never touched
    ])
    found = sweep("drill", now=200.0, networking=networking, core=core)
    assert networking.selectors == [objects.CHAOS_LABEL]
    assert networking.deleted == [("drill", "rushhour-chaos-partition-quality")]
    assert [name for name, _ in core.patched] == ["gpu-a"] and core.patched[0][1] == objects.uncordon_patch()
    assert [(f["kind"], f["name"], f["removed"]) for f in found] == [
        ("NetworkPolicy", "drill/rushhour-chaos-partition-quality", True),
        ("NetworkPolicy", "drill/rushhour-chaos-partition-fast", False),
        ("Node", "gpu-a", True),
        ("Node", "gpu-b", False),
    ]


def test_a_sweep_given_a_kubeconfig_asks_the_cluster_and_context_it_names(tmp_path: Path) -> None:
    """The leak audit hands a chaos entry's KUBECONFIG to the sweep: its context's server is the one asked."""
    from rushhour.experiments.kubernetes import leases

    clusters = [{"name": name, "cluster": {"server": f"https://127.0.0.1:{port}"}} for name, port in (("a", 6443), ("b", 7443))]
    contexts = [{"name": name, "context": {"cluster": name, "user": "u"}} for name in ("a", "b")]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "clusters": clusters, "contexts": contexts,
                                          "users": [{"name": "u", "user": {"token": "t"}}], "current-context": "a"}))
    networking, core, apps = leases._apis({"KUBECONFIG": str(kubeconfig), "KUBERNETES_CONTEXT": "b"})
    assert {api.api_client.configuration.host for api in (networking, core, apps)} == {"https://127.0.0.1:7443"}
    networking, _, _ = leases._apis({"KUBECONFIG": str(kubeconfig)})
    assert networking.api_client.configuration.host == "https://127.0.0.1:6443"


def test_partition_pool_starts_its_keeper_and_lease_job_before_the_policy_and_holds_a_short_lease(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    order: list[str] = []
    created: list[dict[str, Any]] = []
    keepers: list[tuple[str, float, dict[str, Any]]] = []
    def create_network_policy(spec: dict[str, Any], ns: str, secrets: object) -> None:
        created.append(spec)
        order.append("policy")

    def spawn_keeper(undo: str, after: float, args: dict[str, Any], secrets: dict[str, str] | None = None) -> int:
        keepers.append((undo, after, args))
        order.append("keeper")
        return 4242

    monkeypatch.setattr(marked, "create_network_policy", create_network_policy)
    monkeypatch.setattr(marked, "spawn_keeper", spawn_keeper)
    def create_namespaced_job(ns: str, body: dict[str, Any]) -> SimpleNamespace:
        order.append("job")
        return SimpleNamespace(metadata=SimpleNamespace(uid="uid-7"))

    batch = SimpleNamespace(create_namespaced_job=create_namespaced_job)
    monkeypatch.setattr(actions, "client", SimpleNamespace(NetworkingV1Api=lambda api: None, BatchV1Api=lambda api: batch))
    monkeypatch.setattr(actions, "create_k8s_api_client", lambda secrets: None)
    monkeypatch.setattr(marked.time, "time", lambda: 1000.0)
    monkeypatch.delenv("RUSHHOUR_LEASE_S", raising=False)
    result = actions.partition_pool("quality", "drill", hold_s=0)
    assert result["lease_s"] == 600.0 and result["lease_keeper_pid"] == 4242  # nothing held: the ttl
    result = actions.partition_pool("quality", "drill", hold_s=600, ttl_s=1)
    actions.release("k8s|")
    assert result["lease_s"] == 20.0 and order == ["keeper", "job", "policy"] * 2
    assert created[-1]["metadata"]["ownerReferences"][0]["uid"] == "uid-7"
    assert objects.lease_expiry(created[-1]["metadata"]["annotations"]) == 1020.0
    assert keepers[-1] == ("sweep_kubernetes", 20.0 + marked.SWEEP_SLACK_S, {"ns": "drill"})
