"""The drill's audit step after workload faults: it sweeps the user's namespace the experiments were
pointed at (with their credentials) on the fake Kubernetes API, and reports what rushhour left there."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rushhour.experiments.kubernetes import leases as kleases
from rushhour.experiments.kubernetes.objects import CHAOS_LABEL, CORDONED_BY, LEASE_ANNOTATION, SCALED_FROM
from rushhour.scenarios.run.audit.leakaudit import LeakAudit
from rushhour.scenarios.run.audit.steps import WAIT_ENV, audit_target
from rushhour.scenarios.spec.chaos import PlannedFault
from tests.experiments.kubefake import FakeKube
from tests.support.stub import stub_server

EXPERIMENTS = Path(__file__).resolve().parents[4] / "experiments" / "kubernetes"
TEAM = "team"
"""The user's workload namespace: not the fake's default one, so a sweep of the wrong namespace finds nothing."""


def _plan(*names: str) -> Any:
    env = {"RUSHHOUR_K8S_NAMESPACE": TEAM, "RUSHHOUR_K8S_SELECTOR": "app=api", "KUBERNETES_CONTEXT": "staging"}
    return SimpleNamespace(chaos=[PlannedFault(name=name, experiment=EXPERIMENTS / f"workload-{name}.json",
                                               scenario_time="20:00:00", offset_s=0.0, targets=[], env=env)
                                  for name in names])


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> tuple[FakeKube, list[dict[str, str]]]:
    """The fake API behind the audit's sweep, recording the credentials each sweep was given."""
    monkeypatch.setenv(WAIT_ENV, "0")
    fake, given = FakeKube(now=time.time()), []
    fake.add_node("node-a")
    fake.add_deployment("api", 2, {"app": "api"}, ns=TEAM)

    def apis(secrets: Any) -> tuple[FakeKube, FakeKube, FakeKube]:
        given.append(dict(secrets or {}))
        return fake, fake, fake

    monkeypatch.setattr(kleases, "_apis", apis)
    return fake, given


def _audit(plan: Any) -> dict[str, Any]:
    audit = LeakAudit()
    with stub_server({}) as (url, _):  # not the reference server: no /v1/status to check
        audit_target(audit, plan, url=url)
    return audit.result()


def test_the_audit_finds_what_rushhour_left_in_the_users_workload_namespace(
        cluster: tuple[FakeKube, list[dict[str, str]]]) -> None:
    fake, given = cluster
    past, ahead = str(fake.now - 30), str(fake.now + 300)
    fake.add_deployment("worker", 0, {"app": "api"}, ns=TEAM, annotations={SCALED_FROM: "3", LEASE_ANNOTATION: past})
    fake.create_namespaced_network_policy(TEAM, {"metadata": {"name": "rushhour-partition-api", "labels": {
        CHAOS_LABEL: "partition"}, "annotations": {LEASE_ANNOTATION: ahead}}, "spec": {}})
    fake.add_deployment("elsewhere", 0, {"app": "x"}, ns="other", annotations={SCALED_FROM: "1", LEASE_ANNOTATION: past})
    fake.nodes["node-a"].metadata.annotations.update({CORDONED_BY: "rushhour", LEASE_ANNOTATION: past})
    fake.nodes["node-a"].spec.unschedulable = True
    record = _audit(_plan("scale-down", "partition", "drain"))
    assert record["clean"] is False and "kubernetes" in record["checked"]
    found = {f["target"]: f["detail"] for f in record["findings"]}
    assert set(found) == {f"Deployment {TEAM}/worker", f"NetworkPolicy {TEAM}/rushhour-partition-api", "Node node-a"}
    assert "removed by the audit" in found[f"Deployment {TEAM}/worker"] and "still there" in \
        found[f"NetworkPolicy {TEAM}/rushhour-partition-api"]
    assert fake.deployments["worker"].spec.replicas == 3 and fake.nodes["node-a"].spec.unschedulable is False
    assert fake.deployments["elsewhere"].spec.replicas == 0  # a namespace no fault touched is not the audit's
    assert given and all(g == {"KUBERNETES_CONTEXT": "staging"} for g in given)


def test_a_clean_run_in_the_users_namespace_has_no_finding(cluster: tuple[FakeKube, list[dict[str, str]]]) -> None:
    fake, given = cluster
    record = _audit(_plan("scale-down", "partition", "drain", "pod-kill"))
    assert record["clean"] is True and "kubernetes" in record["checked"] and record["findings"] == []
    assert len(given) == 1  # one namespace, one set of credentials: one sweep
