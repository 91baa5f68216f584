"""Faults on a user's own Kubernetes workload (namespace + label selector), against a fake API
with the controllers their healing relies on: each row of docs/reliability.md's Kubernetes table
(harness SIGKILL, loss of the harness's host, an API outage) is one test here."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from chaoslib.exceptions import ActivityFailed

from rushhour.experiments import leases
from rushhour.experiments.kubernetes import leases as kleases
from rushhour.experiments.kubernetes import selection, workload
from rushhour.experiments.kubernetes.objects import CHAOS_LABEL, CORDONED_BY, LEASE_ANNOTATION, SCALED_FROM
from rushhour.experiments.kubernetes.sweeper import sweep_namespaces
from tests.experiments.kubefake import FakeKube
from tests.experiments.test_kubernetes import round_trip

WEB = "app=web"
NS = "shop"


@pytest.fixture
def kube(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    fake = FakeKube(now=time.time())
    for name in ("node-a", "node-b"):
        fake.add_node(name)
    fake.add_node("node-c", cordoned=True)  # an operator's cordon: never ours
    fake.add_pod("web-1", "node-a", {"app": "web"})
    fake.add_pod("web-2", "node-b", {"app": "web"})
    fake.add_pod("web-3", "node-c", {"app": "web"})
    fake.add_pod("db-1", "node-b", {"app": "db"})
    fake.add_deployment("web", 3, {"app": "web"})
    fake.add_deployment("db", 1, {"app": "db"})
    monkeypatch.setattr(workload, "_apis", lambda secrets: workload.Apis(fake, fake, fake, fake))
    monkeypatch.setattr(workload, "create_network_policy",
                        lambda spec, ns, secrets: fake.create_namespaced_network_policy(ns, spec))
    monkeypatch.setattr(workload, "drain_nodes", lambda name, timeout, secrets: fake.log.append(f"drain {name}"))

    def spawn_keeper(undo: str, after: float, args: dict[str, Any], secrets: dict[str, str] | None = None) -> int:
        fake.log.append(f"keeper {args['ns']}")
        fake.keeper_secrets.append(dict(secrets or {}))
        return 4242

    monkeypatch.setattr(workload, "spawn_keeper", spawn_keeper)
    monkeypatch.delenv(leases.LEASE_ENV, raising=False)
    yield fake
    leases.release("k8s|")


def _sweep(kube: FakeKube) -> Any:
    return lambda ns=NS: kleases.sweep(ns, now=kube.now, networking=kube, core=kube, apps=kube)


def _keeper(kube: FakeKube, messages: list[str] | None = None) -> str:
    """The harness-side keeper, on the fake cluster's clock (each of its waits advances it)."""
    return kleases.keep_swept(NS, after_s=60, clock=lambda: kube.now, sleep=kube.advance, sweeper=_sweep(kube),
                              log=(messages.append if messages is not None else lambda m: None))


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
    monkeypatch.setattr(actions, "create_network_policy", lambda spec, ns, secrets: kube.create_namespaced_network_policy(ns, spec))
    monkeypatch.setattr(actions, "spawn_keeper", lambda undo, after, args, secrets=None: 4242)
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
    assert _keeper(kube) == "healed"
    assert leases.DEFAULT_LEASE_S <= kube.now - started <= leases.DEFAULT_LEASE_S + kleases.CHECK_EVERY_S
    assert kube.nodes["node-a"].spec.unschedulable is False and kube.deployments["web"].spec.replicas == 3
    assert kube.deployments["web"].metadata.annotations == {} and kube.nodes["node-c"].spec.unschedulable is True


def test_cordon_and_scale_down_are_undone_by_the_in_cluster_sweeper_after_the_host_is_lost(kube: FakeKube,
                                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    workload.cordon_workload_nodes(WEB, NS, hold_s=600)
    workload.scale_workload(WEB, NS, replicas=1, hold_s=600)
    leases.release("k8s|")  # the host is gone: no renewal and no keeper either
    kube.advance(leases.DEFAULT_LEASE_S - 1)
    assert sweep_namespaces([NS], _sweep(kube)) == 0  # a CronJob run before the lease ends
    assert kube.nodes["node-a"].spec.unschedulable is True and kube.deployments["web"].spec.replicas == 1
    kube.advance(60.0)  # the next run, a minute later
    assert sweep_namespaces([NS], _sweep(kube)) == 0
    assert not kube.nodes["node-a"].spec.unschedulable and not kube.nodes["node-b"].spec.unschedulable
    assert kube.deployments["web"].spec.replicas == 3 and kube.nodes["node-c"].spec.unschedulable is True
    removed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {(r["kind"], r["removed"]) for r in removed} == {("Node", False), ("Deployment", False), ("Node", True),
                                                             ("Deployment", True)}


def test_the_keeper_retries_through_an_api_outage_with_backoff_then_heals(kube: FakeKube) -> None:
    workload.scale_workload(WEB, NS, replicas=0, hold_s=600)
    leases.release("k8s|")
    kube.down = True
    restore_at = kube.now + 100.0
    messages: list[str] = []

    def sweeper() -> Any:
        if kube.now >= restore_at:
            kube.down = False
        return _sweep(kube)()

    outcome = kleases.keep_swept(NS, after_s=60, clock=lambda: kube.now, sleep=kube.advance, sweeper=sweeper,
                                 log=messages.append)
    waits = [float(m.rsplit(" ", 2)[1]) for m in messages if "retrying in" in m]
    assert outcome == "healed" and kube.deployments["web"].spec.replicas == 3
    assert waits[:5] == [2.0, 4.0, 8.0, 16.0, 30.0] and set(waits[4:]) == {kleases.MAX_BACKOFF_S}
    assert "503" in messages[0] and messages[-1] == f"lease of Deployment {NS}/web expired: undone"


def test_an_outage_longer_than_the_keepers_patience_is_left_to_the_sweeper(kube: FakeKube) -> None:
    workload.cordon_workload_nodes(WEB, NS, hold_s=600)
    leases.release("k8s|")
    kube.down = True
    assert _keeper(kube) == "gave up"
    kube.down = False
    assert sweep_namespaces([NS], _sweep(kube)) == 0
    assert not kube.nodes["node-a"].spec.unschedulable


def test_an_object_of_ours_without_a_lease_counts_as_expired(kube: FakeKube) -> None:
    kube.create_namespaced_network_policy(NS, {"metadata": {"name": "left", "labels": {CHAOS_LABEL: "partition"}}, "spec": {}})
    kube.patch_node("node-a", {"metadata": {"annotations": {CORDONED_BY: "rushhour"}}, "spec": {"unschedulable": True}})
    kube.patch_namespaced_deployment("web", NS, {"metadata": {"annotations": {SCALED_FROM: "3"}}, "spec": {"replicas": 0}})
    found = _sweep(kube)()
    assert {(f["kind"], f["removed"]) for f in found} == {("NetworkPolicy", True), ("Node", True), ("Deployment", True)}
    assert kube.policies == {} and not kube.nodes["node-a"].spec.unschedulable and kube.deployments["web"].spec.replicas == 3


# -- the keeper's credentials and log ----------------------------------------------------------------

def test_the_keeper_gets_the_experiments_credentials_in_its_environment(kube: FakeKube) -> None:
    secrets = {"KUBERNETES_CONTEXT": "prod-eu", "KUBERNETES_API_KEY": "s3cret", "rushhour_token": "not-for-it"}
    workload.partition_workload(WEB, NS, hold_s=0, ttl_s=30, secrets=secrets)
    workload.scale_workload(WEB, NS, replicas=0, hold_s=0, ttl_s=30, secrets=secrets)
    assert kube.keeper_secrets == [{"KUBERNETES_CONTEXT": "prod-eu", "KUBERNETES_API_KEY": "s3cret"}] * 2
    assert kleases.keeper_secrets(None) == {}


def test_the_keepers_client_reads_those_credentials_from_its_environment(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The keeper sweeps with no secrets of its own (`sweep(ns)`): chaostoolkit-kubernetes then
    builds the client from the KUBERNETES_* variables spawn_keeper put in its environment."""
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config to prefer
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("CHAOSTOOLKIT_IN_POD", raising=False)
    for key, value in kleases.keeper_secrets({"KUBERNETES_HOST": "https://k8s.invalid:6443",
                                               "KUBERNETES_API_KEY": "s3cret"}).items():
        monkeypatch.setenv(key, value)
    networking, core, apps = kleases._apis(None)
    configuration = core.api_client.configuration
    assert configuration.host == "https://k8s.invalid:6443"
    assert configuration.api_key["authorization"] == "s3cret"
    assert configuration.api_key_prefix["authorization"] == "Bearer"


def test_keeper_logs_beside_the_chaos_runs_journal() -> None:
    argv = ["chaos", "run", "--journal-path", "/r/promo-day-1/chaos/partition.journal.json", "x.json"]
    assert leases.keeper_log_path(argv) == Path("/r/promo-day-1/chaos/lease-keeper.log")
    assert leases.keeper_log_path(["chaos", "--journal-path=/r/x/chaos/j.json"]) == Path("/r/x/chaos/lease-keeper.log")


@pytest.mark.slow
def test_a_spawned_keeper_writes_into_the_results_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chaos_dir = tmp_path / "results" / "drill" / "chaos"
    monkeypatch.setattr("sys.argv", ["chaos", "run", "--journal-path", str(chaos_dir / "p.journal.json")])
    pid = leases.spawn_keeper("no_such_undo", 1.0, {})
    deadline = time.monotonic() + 60
    while os.waitpid(pid, os.WNOHANG) == (0, 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    log = (chaos_dir / "lease-keeper.log").read_text()
    assert '"no_such_undo" is not an undo the lease keeper knows' in log


def test_scale_down_refuses_a_negative_count_and_leaves_smaller_deployments(kube: FakeKube) -> None:
    with pytest.raises(ActivityFailed, match="-1 replicas"):
        workload.scale_workload(WEB, NS, replicas=-1)
    result = workload.scale_workload("app=db", NS, replicas=1, hold_s=0, ttl_s=30)
    assert result["scaled"] == {} and result["lease_keeper_pid"] is None and kube.log == []
    assert workload.restore_workload_scale(WEB, NS) == {}


def test_sweeper_goes_on_past_a_namespace_it_cannot_sweep_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    def sweeper(ns: str) -> list[dict[str, Any]]:
        if ns == "locked":
            raise PermissionError("forbidden")
        return [{"kind": "Node", "name": "node-a", "expires_at": 1.0, "removed": True}]

    assert sweep_namespaces(["locked", NS], sweeper) == 1
    out, err = capsys.readouterr()
    assert json.loads(out) == {"namespace": NS, "kind": "Node", "name": "node-a", "expires_at": 1.0, "removed": True}
    assert "namespace locked not swept: PermissionError: forbidden" in err
    assert sweep_namespaces([NS], sweeper) == 0
