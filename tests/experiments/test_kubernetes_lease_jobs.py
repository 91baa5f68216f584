"""The sweep deletes a partition's lease Job whose deadline has passed, and the policy it owns goes
with it, against the fake API.

The user's case: the harness's host is lost during a partition, and the cluster's TTL controller
is off or lags, so the lease Job fails at its deadline but stays, and with it the NetworkPolicy it
owns. The in-cluster sweeper (and the keeper, and the leak audit) delete such a Job; one whose
deadline is still ahead, and a Job of the user's own, are left alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from rushhour.experiments import leases
from rushhour.experiments.kubernetes import leases as kleases
from rushhour.experiments.kubernetes import selection, workload
from rushhour.experiments.kubernetes.sweeper import sweep_namespaces
from tests.experiments.kubefake import NS, WEB, FakeKube, keeper_on, sweeper_of, workload_cluster


@pytest.fixture
def kube(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    fake = workload_cluster(monkeypatch)
    fake.ttl_controller = False  # the finished lease Job is not deleted by the cluster
    yield fake
    leases.release("k8s|")


def _partition_left(kube: FakeKube) -> str:
    """A partition whose holder was lost (no renewal, no rollback); its name."""
    workload.partition_workload(WEB, NS, hold_s=600)
    leases.release("k8s|")
    return selection.partition_name(WEB)


def _lines(out: str) -> set[tuple[str, bool]]:
    return {(row["kind"], row["removed"]) for row in map(json.loads, out.splitlines())}


def test_the_sweeper_leaves_a_lease_job_before_its_deadline_and_deletes_it_after(
        kube: FakeKube, capsys: pytest.CaptureFixture[str]) -> None:
    name = _partition_left(kube)
    kube.advance(leases.DEFAULT_LEASE_S - 1)
    assert sweep_namespaces([NS], sweeper_of(kube)) == 0
    assert name in kube.jobs and name in kube.policies
    assert _lines(capsys.readouterr().out) == {("Job", False), ("NetworkPolicy", False)}
    kube.advance(60.0)  # the next CronJob run: the Job has failed at its deadline but is still there
    assert kube.jobs[name].status.failed_at is not None and name in kube.policies
    assert sweep_namespaces([NS], sweeper_of(kube)) == 0
    assert kube.jobs == {} and kube.policies == {}
    assert _lines(capsys.readouterr().out) == {("Job", True), ("NetworkPolicy", True)}


def test_a_deleted_lease_job_takes_the_policy_it_owns_with_it(kube: FakeKube) -> None:
    """A policy whose mark was renewed past the Job's deadline is not expired itself; it goes
    because its owner does (the garbage collector, after the sweep's delete)."""
    name = _partition_left(kube)
    kube.advance(leases.DEFAULT_LEASE_S + 1)
    kube.patch_namespaced_network_policy(name, NS, {"metadata": {"annotations": {
        selection.LEASE_ANNOTATION: f"{kube.now + 3600:.3f}"}}})
    found = {(f["kind"], f["removed"]) for f in sweeper_of(kube)()}
    assert found == {("Job", True), ("NetworkPolicy", False)}
    assert kube.jobs == {} and kube.policies == {}
    assert kube.log[-2:] == [f"job {name} deleted", f"policy {name} deleted by the garbage collector"]


def test_a_lease_job_without_a_readable_deadline_counts_as_expired_and_the_users_jobs_are_not_ours(
        kube: FakeKube) -> None:
    own: dict[str, Any] = {"metadata": {"name": "nightly-backup", "labels": {"app": "backup"}},
                           "spec": {"activeDeadlineSeconds": 1, "ttlSecondsAfterFinished": 60}}
    kube.create_namespaced_job(NS, own)
    mangled = kube.create_namespaced_job(NS, selection.lease_job("rushhour-partition-x", NS, 300.0))
    mangled.spec.active_deadline_seconds = None
    kube.advance(3600.0)
    found = sweeper_of(kube)()
    assert [(f["kind"], f["name"], f["removed"]) for f in found] == [("Job", f"{NS}/rushhour-partition-x", True)]
    assert list(kube.jobs) == ["nightly-backup"]


def test_job_lease_end_is_the_start_plus_the_deadline() -> None:
    from types import SimpleNamespace

    started = datetime.fromtimestamp(1000.0, UTC)
    job = SimpleNamespace(spec=SimpleNamespace(active_deadline_seconds=120), status=SimpleNamespace(start_time=started),
                          metadata=SimpleNamespace(creation_timestamp=None))
    assert kleases.job_lease_end(job) == 1120.0
    job.status.start_time, job.metadata.creation_timestamp = None, datetime.fromtimestamp(900.0, UTC)
    assert kleases.job_lease_end(job) == 1020.0  # not started yet: counted from its creation
    job.metadata.creation_timestamp = None
    assert kleases.job_lease_end(job) is None


def test_the_keeper_deletes_a_lease_job_left_past_its_deadline(kube: FakeKube) -> None:
    name = _partition_left(kube)
    messages: list[str] = []
    assert keeper_on(kube, messages) == "healed"
    assert kube.jobs == {} and kube.policies == {}
    assert f"lease of Job {NS}/{name} expired: undone" in messages


def test_the_leak_audit_reports_a_lease_job_once_removed_or_left(kube: FakeKube,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kleases, "_apis", lambda secrets: (kube, kube, kube))
    name = _partition_left(kube)
    swept, jobs = kleases.audit_namespace(NS, now=kube.now)
    assert [f["kind"] for f in swept] == ["NetworkPolicy"] and [j["name"] for j in jobs] == [f"{NS}/{name}"]
    kube.advance(leases.DEFAULT_LEASE_S + 1)
    swept, jobs = kleases.audit_namespace(NS, now=kube.now)
    assert {(f["kind"], f["removed"]) for f in swept} == {("Job", True), ("NetworkPolicy", True)} and jobs == []
