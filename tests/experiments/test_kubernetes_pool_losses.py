"""The reference server's pool faults on Kubernetes (`delete_pool_pods`, `cordon_gpu_nodes`,
`scale_pool`) after each loss of docs/reliability.md's table, against the fake API: they share the
marks and the sweep of a user's workload faults, and end the same way.

The user's case: a game day of the bundled server deployed in a cluster (namespace `rushhour`),
its harness lost mid-fault (the host gone, or the cluster's API out for a while).
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from rushhour.experiments import leases
from rushhour.experiments.kubernetes import actions
from rushhour.experiments.kubernetes import leases as kleases
from rushhour.experiments.kubernetes.objects import APP_LABEL, DEFAULT_NAMESPACE, POOL_LABEL
from rushhour.experiments.kubernetes.sweeper import sweep_namespaces
from tests.experiments.kubefake import FakeKube, sweeper_of, workload_cluster

POOL = {APP_LABEL: "rushhour-node", POOL_LABEL: "quality"}


@pytest.fixture
def kube(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    """The workload cluster with the quality pool's Deployment (2 replicas) in `rushhour`."""
    fake = workload_cluster(monkeypatch)
    fake.add_deployment("rushhour-quality", 2, dict(POOL), ns=DEFAULT_NAMESPACE)
    fake.reconcile()
    apis = SimpleNamespace(CoreV1Api=lambda api: fake, AppsV1Api=lambda api: fake)
    monkeypatch.setattr(actions, "client", apis)
    monkeypatch.setattr(actions, "create_k8s_api_client", lambda secrets: None)
    fake.log.clear()
    yield fake
    leases.release("k8s|")


def _faulted(kube: FakeKube) -> None:
    """A held cordon of the GPU nodes and a held scale-down of the pool, then the harness lost."""
    actions.cordon_gpu_nodes(hold_s=600)
    actions.scale_pool("quality", 0, hold_s=600)
    leases.release("k8s|")
    assert kube.nodes["node-a"].spec.unschedulable and kube.deployments["rushhour-quality"].spec.replicas == 0


def _healed(kube: FakeKube) -> bool:
    return (not kube.nodes["node-a"].spec.unschedulable and not kube.nodes["node-b"].spec.unschedulable
            and kube.deployments["rushhour-quality"].spec.replicas == 2
            and kube.nodes["node-c"].spec.unschedulable is True)  # the operator's cordon stays


def test_pool_cordon_and_scale_down_after_the_host_is_lost_are_undone_by_the_sweeper(kube: FakeKube) -> None:
    _faulted(kube)
    sweep = sweeper_of(kube)
    kube.advance(leases.DEFAULT_LEASE_S - 1)
    assert sweep_namespaces([DEFAULT_NAMESPACE], lambda ns: sweep(ns)) == 0
    assert not _healed(kube)
    kube.advance(60.0)  # the CronJob's next run
    assert sweep_namespaces([DEFAULT_NAMESPACE], lambda ns: sweep(ns)) == 0
    assert _healed(kube)


def test_pool_cordon_and_scale_down_through_an_api_outage_are_undone_by_the_keeper_once_it_is_back(
        kube: FakeKube) -> None:
    _faulted(kube)
    kube.down = True
    back_at = kube.now + 100.0
    messages: list[str] = []

    def sweeper() -> Any:
        kube.down = kube.now < back_at
        return sweeper_of(kube)(DEFAULT_NAMESPACE)

    outcome = kleases.keep_swept(DEFAULT_NAMESPACE, after_s=60, clock=lambda: kube.now, sleep=kube.advance,
                                 sweeper=sweeper, log=messages.append)
    assert outcome == "healed" and _healed(kube) and kube.now >= back_at
    assert any("retrying in" in message for message in messages)


def test_a_deleted_pool_pod_is_replaced_by_its_deployment_once_the_api_is_back(kube: FakeKube,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The real chaostoolkit-kubernetes `terminate_pods` against the fake API: nothing of rushhour's
    has to live for the pool to get its pod back."""
    import chaosk8s.pod.actions as pod_actions
    from kubernetes import client

    monkeypatch.setattr(pod_actions, "client", SimpleNamespace(CoreV1Api=lambda api: kube,
                                                               V1DeleteOptions=client.V1DeleteOptions))
    monkeypatch.setattr(pod_actions, "create_k8s_api_client", lambda secrets: None)
    actions.delete_pool_pods("quality", qty=1)
    pods = [p for p in kube.pods if p.metadata.namespace == DEFAULT_NAMESPACE]
    assert len(pods) == 1 and kube.log[0].endswith(" deleted")
    kube.down = True
    kube.advance(30.0)
    assert len([p for p in kube.pods if p.metadata.namespace == DEFAULT_NAMESPACE]) == 1
    kube.down = False
    kube.reconcile()
    assert len([p for p in kube.pods if p.metadata.namespace == DEFAULT_NAMESPACE]) == 2
