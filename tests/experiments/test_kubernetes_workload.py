"""Faults on a user's own Kubernetes workload (namespace + label selector), against a fake API
with the controllers their healing relies on: each row of docs/reliability.md's Kubernetes table
(harness SIGKILL, loss of the harness's host, an API outage) is one test here."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from chaoslib.exceptions import ActivityFailed

from rushhour.experiments import leases
from rushhour.experiments.kubernetes import leases as kleases
from rushhour.experiments.kubernetes import marked, selection, workload
from rushhour.experiments.kubernetes.objects import CORDONED_BY, LEASE_ANNOTATION
from rushhour.experiments.kubernetes.sweeper import sweep_namespaces
from tests.experiments.kubefake import NS, WEB, FakeKube, keeper_on, sweeper_of, workload_cluster
from tests.experiments.test_kubernetes import round_trip


@pytest.fixture
def kube(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    yield workload_cluster(monkeypatch)
    leases.release("k8s|")


# -- the objects -----------------------------------------------------------------------------------

def test_selector_becomes_the_policys_pod_selector() -> None:
    assert selection.parse_selector("app=web, tier!=cache,env in (prod, canary),!legacy,release") == {
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "NotIn", "values": ["cache"]},
            {"key": "env", "operator": "In", "values": ["prod", "canary"]},
            {"key": "legacy", "operator": "DoesNotExist"},
            {"key": "release", "operator": "Exists"},
        ],
    }
    with pytest.raises(ValueError, match="empty; it would select every pod"):
        selection.parse_selector(" ")
    with pytest.raises(ValueError, match='Cannot read "app=~web" in the label selector'):
        selection.parse_selector("tier=api,app=~web")


def test_lease_job_and_owned_policy_are_valid_client_objects() -> None:
    job = selection.lease_job("rushhour-partition-x", NS, 19.2)
    assert round_trip(job) == job
    assert job["spec"]["activeDeadlineSeconds"] == 20 and job["spec"]["ttlSecondsAfterFinished"] == 0
    policy = selection.owned_partition("rushhour-partition-x", NS, WEB, expires_at=1000.0,
                                       owner=selection.owner_reference("rushhour-partition-x", "uid-1"))
    assert round_trip(policy) == policy
    assert policy["spec"]["podSelector"] == {"matchLabels": {"app": "web"}}
    assert policy["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    assert selection.deadline_patch(started_at=1000.0, now=1100.0, lease_s=20.0) == {"spec": {"activeDeadlineSeconds": 120}}


def test_sweeper_manifest_is_valid_and_may_do_what_the_sweep_does() -> None:
    path = Path(workload.__file__).with_name("sweeper.yaml")
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    for doc in docs:
        assert round_trip(doc) == json.loads(json.dumps(doc)), doc["kind"]
    cron = next(d for d in docs if d["kind"] == "CronJob")
    container = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["python", "-m", "rushhour.experiments.kubernetes.sweeper"]
    assert {"name": "CHAOSTOOLKIT_IN_POD", "value": "true"} in container["env"]
    rules = {(r["resources"][0], verb) for r in next(d for d in docs if d["kind"] == "ClusterRole")["rules"] for verb in r["verbs"]}
    assert {("nodes", "list"), ("nodes", "patch"), ("deployments", "list"), ("deployments", "patch"),
            ("networkpolicies", "list"), ("networkpolicies", "delete")} <= rules


@pytest.mark.parametrize("path", sorted(Path(workload.__file__).parent.glob("workload-*.json")), ids=lambda p: p.stem)
def test_workload_experiment_is_valid_and_undoes_what_it_breaks(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from chaoslib import substitute
    from chaoslib.configuration import load_configuration
    from chaoslib.experiment import ensure_experiment_is_valid

    from rushhour.scenarios.spec.chaos import drives_admin_api

    experiment = json.loads(path.read_text())
    monkeypatch.setenv("RUSHHOUR_K8S_SELECTOR", WEB)
    ensure_experiment_is_valid(experiment)
    assert not drives_admin_api(experiment), "a workload of the user's needs no reference-server admin API"
    configuration = load_configuration(experiment["configuration"])
    undo = {"drain_workload_nodes": "uncordon_workload_nodes", "partition_workload": "heal_workload_partition",
            "scale_workload": "restore_workload_scale", "kill_workload_pods": None}
    for action in experiment["method"]:
        arguments = substitute(action["provider"]["arguments"], configuration, {})
        assert arguments["label_selector"] == WEB and arguments["ns"] == "default"
        func = action["provider"]["func"]
        assert hasattr(workload, func) and (undo[func] is None or "hold_s" in arguments)
        assert undo[func] is None or undo[func] in [r["provider"]["func"] for r in experiment["rollbacks"]]


@pytest.mark.parametrize("name", ["workload-partition", "workload-drain", "workload-scale-down"])
def test_workload_experiment_runs_through_chaos_toolkit_and_its_rollback_heals(name: str, kube: FakeKube,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from chaoslib.experiment import run_experiment

    from rushhour.experiments.kubernetes import probes

    monkeypatch.setattr(probes, "client", SimpleNamespace(CoreV1Api=lambda api: kube))
    monkeypatch.setattr(probes, "create_k8s_api_client", lambda secrets: None)
    monkeypatch.setattr(kleases, "_apis", lambda secrets: (kube, kube, kube))
    monkeypatch.setenv("RUSHHOUR_K8S_SELECTOR", WEB)
    monkeypatch.setenv("RUSHHOUR_K8S_NAMESPACE", NS)
    monkeypatch.setenv("RUSHHOUR_FAULT_HOLD_S", "0.2")
    experiment = json.loads(Path(workload.__file__).with_name(f"{name}.json").read_text())
    journal = run_experiment(experiment, settings={"runtime": {"rollbacks": {"strategy": "always"}}})
    assert journal["status"] == "completed" and journal["deviated"] is False, journal["status"]
    assert [r["status"] for r in journal["run"]] == ["succeeded"] and [r["status"] for r in journal["rollbacks"]] == ["succeeded"]
    assert kube.policies == {} and kube.jobs == {} and kube.deployments["web"].spec.replicas == 3
    assert [n for n, node in kube.nodes.items() if node.spec.unschedulable] == ["node-c"]  # the operator's cordon only
    assert len(kube.log) > 2, "the experiment broke nothing"


# -- pod kill ---------------------------------------------------------------------------------------

def test_pod_kill_goes_through_chaostoolkit_kubernetes(kube: FakeKube, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(workload, "terminate_pods", lambda **kw: calls.append(kw))
    assert workload.kill_workload_pods(WEB, NS, qty=2)["qty"] == 2
    assert calls[0]["label_selector"] == WEB and calls[0]["ns"] == NS and calls[0]["qty"] == 2 and calls[0]["grace_period"] == 0
    with pytest.raises(ActivityFailed, match="label selector is empty"):
        workload.kill_workload_pods("", NS)


def test_a_killed_pod_is_replaced_by_its_controller_after_any_loss(kube: FakeKube, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing of rushhour's has to live: the workload's controller replaces the pod, once the API is
    back if it was out (the real chaostoolkit-kubernetes `terminate_pods`, against the fake API)."""
    from types import SimpleNamespace

    import chaosk8s.pod.actions as pod_actions
    from kubernetes import client

    from rushhour.experiments.kubernetes import probes

    monkeypatch.setattr(pod_actions, "client", SimpleNamespace(CoreV1Api=lambda api: kube, V1DeleteOptions=client.V1DeleteOptions))
    monkeypatch.setattr(pod_actions, "create_k8s_api_client", lambda secrets: None)
    monkeypatch.setattr(probes, "client", SimpleNamespace(CoreV1Api=lambda api: kube))
    monkeypatch.setattr(probes, "create_k8s_api_client", lambda secrets: None)
    workload.kill_workload_pods(WEB, NS, qty=1)
    assert kube.log == ["pod web-1 deleted"] and probes.workload_ready_pods(WEB, NS) == 2
    kube.down = True
    kube.advance(30.0)
    kube.down = False
    assert probes.workload_ready_pods(WEB, NS) == 2  # no controller ran while the API was out
    kube.reconcile()
    assert probes.workload_ready_pods(WEB, NS) == 3 and probes.workload_ready_at_least(WEB, 3, NS)
    assert kube.log[-1].endswith("started by the ReplicaSet controller on node-a")


# -- partition: owned by its lease Job, removed by the cluster --------------------------------------

def test_partition_starts_its_keeper_then_the_lease_job_then_the_owned_policy(kube: FakeKube) -> None:
    result = workload.partition_workload(WEB, NS, hold_s=600)
    name = selection.partition_name(WEB)
    assert kube.log == [f"keeper {NS}", f"job {name} created", f"policy {name} created"]
    assert result["lease_s"] == leases.DEFAULT_LEASE_S
    assert kube.policies[name].metadata.owner_references[0]["uid"] == kube.jobs[name].metadata.uid
    assert kube.jobs[name].spec.active_deadline_seconds == 20


def test_partition_heals_inside_the_cluster_with_the_harness_and_its_host_gone(kube: FakeKube) -> None:
    """Harness SIGKILL and host loss alike: no renewal, no keeper, no sweeper; the cluster ends it."""
    workload.partition_workload(WEB, NS, hold_s=600)
    leases.release("k8s|")  # the renewals stop with the harness
    name = selection.partition_name(WEB)
    kube.advance(19.0)
    assert name in kube.policies
    kube.advance(1.5)
    assert name not in kube.policies and name not in kube.jobs
    assert kube.log[-3:] == [f"job {name} failed: DeadlineExceeded", f"job {name} deleted by the TTL controller",
                             f"policy {name} deleted by the garbage collector"]


def test_a_held_partition_renews_the_jobs_deadline_and_the_mark(kube: FakeKube) -> None:
    workload.partition_workload(WEB, NS, hold_s=0, ttl_s=20)
    name = selection.partition_name(WEB)
    job = kube.jobs[name]
    job.status.start_time = job.status.start_time.fromtimestamp(time.time() - 100, job.status.start_time.tzinfo)
    assert kleases.partition_renewer(kube, kube, name, NS)(20.0) is True
    assert job.spec.active_deadline_seconds in (120, 121)  # 100 s already run plus the 20 s lease
    assert float(kube.policies[name].metadata.annotations[LEASE_ANNOTATION]) >= time.time() + 19


def test_partition_outlives_an_api_outage_and_ends_when_the_api_is_back(kube: FakeKube) -> None:
    workload.partition_workload(WEB, NS, hold_s=600)
    leases.release("k8s|")
    name = selection.partition_name(WEB)
    kube.down = True
    kube.advance(120.0)  # no controller runs while the API server is out; the CNI keeps enforcing
    assert name in kube.policies
    kube.down = False
    kube.reconcile()
    assert name not in kube.policies and name not in kube.jobs


def test_a_reference_pool_partition_is_owned_by_its_lease_job_too(kube: FakeKube, monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from rushhour.experiments.kubernetes import actions

    monkeypatch.setattr(actions, "client", SimpleNamespace(NetworkingV1Api=lambda api: kube, BatchV1Api=lambda api: kube))
    monkeypatch.setattr(actions, "create_k8s_api_client", lambda secrets: None)
    monkeypatch.setattr(marked, "create_network_policy", lambda spec, ns, secrets: kube.create_namespaced_network_policy(ns, spec))
    monkeypatch.setattr(marked, "spawn_keeper", lambda undo, after, args, secrets=None: 4242)
    monkeypatch.setattr(kleases, "_apis", lambda secrets: (kube, kube, kube))  # the rollback's sweep
    actions.partition_pool("quality", NS, hold_s=600)
    leases.release("k8s|")
    name = "rushhour-chaos-partition-quality"
    assert kube.policies[name].metadata.owner_references[0]["uid"] == kube.jobs[name].metadata.uid
    kube.advance(leases.DEFAULT_LEASE_S + 0.5)
    assert name not in kube.policies and name not in kube.jobs
    actions.partition_pool("quality", NS, hold_s=600)
    actions.heal_pool_partition("quality", NS)
    assert kube.policies == {} and kube.jobs == {}


def test_partition_rollback_deletes_policy_and_job_and_tolerates_a_second_run(kube: FakeKube) -> None:
    workload.partition_workload(WEB, NS, hold_s=600)
    name = selection.partition_name(WEB)
    assert workload.heal_workload_partition(WEB, NS)["policy"] == name
    assert kube.policies == {} and kube.jobs == {}
    workload.heal_workload_partition(WEB, NS)


# -- cordon, drain, scale-down: what Kubernetes cannot undo by itself -------------------------------

def test_drain_picks_the_workloads_nodes_marks_them_first_and_skips_an_operators_cordon(kube: FakeKube) -> None:
    assert workload.drain_workload_nodes(WEB, NS, count=5, hold_s=0, ttl_s=60) == ["node-a", "node-b"]
    assert kube.log == [f"keeper {NS}", "cordon node-a", "cordon node-b", "drain node-a", "drain node-b"]
    assert CORDONED_BY not in kube.nodes["node-c"].metadata.annotations
    assert workload.uncordon_workload_nodes() == ["node-a", "node-b"]
    assert kube.nodes["node-c"].spec.unschedulable is True


def test_cordon_and_scale_down_are_undone_by_the_keeper_after_a_harness_sigkill(kube: FakeKube) -> None:
    workload.drain_workload_nodes(WEB, NS, count=1, hold_s=600)
    scaled = workload.scale_workload(WEB, NS, replicas=0, hold_s=600)
    assert scaled["scaled"] == {"web": 3} and kube.deployments["db"].spec.replicas == 1
    leases.release("k8s|")  # SIGKILL: no rollback, no renewal; the keeper (own session) lives on
    started = kube.now
    assert keeper_on(kube) == "healed"
    assert leases.DEFAULT_LEASE_S <= kube.now - started <= leases.DEFAULT_LEASE_S + kleases.CHECK_EVERY_S
    assert kube.nodes["node-a"].spec.unschedulable is False and kube.deployments["web"].spec.replicas == 3
    assert kube.deployments["web"].metadata.annotations == {} and kube.nodes["node-c"].spec.unschedulable is True


def test_cordon_and_scale_down_are_undone_by_the_in_cluster_sweeper_after_the_host_is_lost(kube: FakeKube,
                                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    workload.cordon_workload_nodes(WEB, NS, hold_s=600)
    workload.scale_workload(WEB, NS, replicas=1, hold_s=600)
    leases.release("k8s|")  # the host is gone: no renewal and no keeper either
    kube.advance(leases.DEFAULT_LEASE_S - 1)
    assert sweep_namespaces([NS], sweeper_of(kube)) == 0  # a CronJob run before the lease ends
    assert kube.nodes["node-a"].spec.unschedulable is True and kube.deployments["web"].spec.replicas == 1
    kube.advance(60.0)  # the next run, a minute later
    assert sweep_namespaces([NS], sweeper_of(kube)) == 0
    assert not kube.nodes["node-a"].spec.unschedulable and not kube.nodes["node-b"].spec.unschedulable
    assert kube.deployments["web"].spec.replicas == 3 and kube.nodes["node-c"].spec.unschedulable is True
    removed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {(r["kind"], r["removed"]) for r in removed} == {("Node", False), ("Deployment", False), ("Node", True),
                                                             ("Deployment", True)}


def test_scale_down_refuses_a_negative_count_and_leaves_smaller_deployments(kube: FakeKube) -> None:
    with pytest.raises(ActivityFailed, match="-1 replicas"):
        workload.scale_workload(WEB, NS, replicas=-1)
    result = workload.scale_workload("app=db", NS, replicas=1, hold_s=0, ttl_s=30)
    assert result["scaled"] == {} and result["lease_keeper_pid"] is None and kube.log == []
    assert workload.restore_workload_scale(WEB, NS) == {}
