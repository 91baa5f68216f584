"""The leak audit reports a partition's lease Job left in a namespace a fault touched, with or
without the NetworkPolicy it was made for, on the fake Kubernetes API.

The user's case: a rollback deleted the partition's NetworkPolicy but its Job delete failed (or
the other way round), so a rushhour Job sits in the user's namespace until its deadline; the
audit names it instead of calling the run clean. A Job of the user's own (no lease label) is not
rushhour's and is never reported.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from rushhour.experiments.kubernetes import leases as kleases
from rushhour.experiments.kubernetes.selection import lease_job, owned_partition, owner_reference
from rushhour.scenarios.run.audit.leakaudit import kubernetes_findings
from rushhour.scenarios.run.audit.scope import KubeScope
from tests.experiments.kubefake import FakeKube

TEAM = "team"
POLICY = "rushhour-partition-api"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeKube:
    kube = FakeKube(now=time.time())
    kube.add_node("node-a")
    monkeypatch.setattr(kleases, "_apis", lambda secrets: (kube, kube, kube))
    return kube


def _partition(kube: FakeKube, *, with_policy: bool) -> None:
    job = kube.create_namespaced_job(TEAM, lease_job(POLICY, TEAM, 300.0))
    if with_policy:
        owner = owner_reference(POLICY, str(job.metadata.uid))
        kube.create_namespaced_network_policy(TEAM, owned_partition(POLICY, TEAM, "app=api", owner=owner,
                                                                    expires_at=kube.now + 300.0))


def _findings(kube: FakeKube, ns: str = TEAM) -> dict[str, str]:
    return {f.target: f.detail for f in kubernetes_findings([KubeScope(ns)])}


def test_a_lease_job_left_without_its_partition_policy_is_a_finding(fake: FakeKube) -> None:
    _partition(fake, with_policy=False)
    found = _findings(fake)
    assert set(found) == {f"Job {TEAM}/{POLICY}"}
    assert f'without its partition NetworkPolicy "{POLICY}"' in found[f"Job {TEAM}/{POLICY}"]


def test_a_lease_job_beside_its_policy_is_reported_with_the_policy(fake: FakeKube) -> None:
    _partition(fake, with_policy=True)
    found = _findings(fake)
    assert set(found) == {f"Job {TEAM}/{POLICY}", f"NetworkPolicy {TEAM}/{POLICY}"}
    assert "is still there" in found[f"Job {TEAM}/{POLICY}"]


def test_the_users_own_jobs_and_other_namespaces_are_not_findings(fake: FakeKube) -> None:
    own: dict[str, Any] = {"metadata": {"name": "nightly-backup", "labels": {"app": "backup"}},
                           "spec": {"activeDeadlineSeconds": 600, "ttlSecondsAfterFinished": 60}}
    fake.create_namespaced_job(TEAM, own)
    fake.create_namespaced_job("other", lease_job(POLICY, "other", 300.0))
    assert _findings(fake) == {}


def test_a_cluster_that_cannot_list_jobs_leaves_the_namespace_unverified(fake: FakeKube) -> None:
    _partition(fake, with_policy=False)
    fake.down = True
    found = kubernetes_findings([KubeScope(TEAM)])
    assert [(f.kind, f.target) for f in found] == [("unverified", f"kubernetes:{TEAM}")]
