"""The lease keeper and the in-cluster sweeper of the Kubernetes faults, against the fake API:
retries through an API outage, marks without a lease, the experiment's credentials, the log in the
results folder, a namespace the sweeper cannot sweep."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rushhour.experiments import leases
from rushhour.experiments.kubernetes import leases as kleases
from rushhour.experiments.kubernetes import workload
from rushhour.experiments.kubernetes.objects import CHAOS_LABEL, CORDONED_BY, SCALED_FROM
from rushhour.experiments.kubernetes.sweeper import sweep_namespaces
from tests.experiments.kubefake import NS, WEB, FakeKube, keeper_on, sweeper_of, workload_cluster


@pytest.fixture
def kube(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    yield workload_cluster(monkeypatch)
    leases.release("k8s|")


def test_the_keeper_retries_through_an_api_outage_with_backoff_then_heals(kube: FakeKube) -> None:
    workload.scale_workload(WEB, NS, replicas=0, hold_s=600)
    leases.release("k8s|")
    kube.down = True
    restore_at = kube.now + 100.0
    messages: list[str] = []

    def sweeper() -> Any:
        if kube.now >= restore_at:
            kube.down = False
        return sweeper_of(kube)()

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
    assert keeper_on(kube) == "gave up"
    kube.down = False
    assert sweep_namespaces([NS], sweeper_of(kube)) == 0
    assert not kube.nodes["node-a"].spec.unschedulable


def test_an_object_of_ours_without_a_lease_counts_as_expired(kube: FakeKube) -> None:
    kube.create_namespaced_network_policy(NS, {"metadata": {"name": "left", "labels": {CHAOS_LABEL: "partition"}}, "spec": {}})
    kube.patch_node("node-a", {"metadata": {"annotations": {CORDONED_BY: "rushhour"}}, "spec": {"unschedulable": True}})
    kube.patch_namespaced_deployment("web", NS, {"metadata": {"annotations": {SCALED_FROM: "3"}}, "spec": {"replicas": 0}})
    found = sweeper_of(kube)()
    assert {(f["kind"], f["removed"]) for f in found} == {("NetworkPolicy", True), ("Node", True), ("Deployment", True)}
    assert kube.policies == {} and not kube.nodes["node-a"].spec.unschedulable and kube.deployments["web"].spec.replicas == 3


# -- the keeper's credentials and log ----------------------------------------------------------------

def test_the_keeper_gets_the_experiments_credentials_in_its_environment(kube: FakeKube,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)  # the runner's own, which the keeper would be handed too
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
