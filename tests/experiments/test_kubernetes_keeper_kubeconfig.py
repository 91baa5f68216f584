"""The lease keeper reaches the cluster the experiment reached through a `KUBECONFIG` of the chaos
entry's `env:`: the keeper is handed that file, made absolute, and its client reads it from any folder.

The user's case: a scenario's chaos entry sets `KUBECONFIG: staging.kubeconfig` (a file beside the
experiment, where `chaos run` runs); the keeper starts in another folder, so a relative path would
name no file there, and the keeper would fall back to another cluster or none.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from rushhour.experiments import leases
from rushhour.experiments.kubernetes import leases as kleases
from rushhour.experiments.kubernetes import workload
from tests.experiments.kubefake import NS, WEB, FakeKube, workload_cluster

SERVER = "https://staging.k8s.invalid:6443"


@pytest.fixture
def kube(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    yield workload_cluster(monkeypatch)
    leases.release("k8s|")


def _kubeconfig(path: Path) -> None:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "staging",
        "clusters": [{"name": "staging", "cluster": {"server": SERVER}}],
        "users": [{"name": "drill", "user": {"token": "s3cret"}}],
        "contexts": [{"name": "staging", "context": {"cluster": "staging", "user": "drill"}}]}))


def test_the_keeper_is_handed_the_entrys_kubeconfig_made_absolute(kube: FakeKube, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    experiment_dir = tmp_path / "experiments"
    experiment_dir.mkdir()
    monkeypatch.chdir(experiment_dir)  # where `chaos run` runs the experiment
    monkeypatch.setenv("KUBECONFIG", "staging.kubeconfig")  # from the chaos entry's env:
    workload.partition_workload(WEB, NS, hold_s=0, ttl_s=30, secrets={"KUBERNETES_CONTEXT": "staging"})
    workload.scale_workload(WEB, NS, replicas=0, hold_s=0, ttl_s=30, secrets=None)
    wanted = str(experiment_dir / "staging.kubeconfig")
    assert kube.keeper_secrets == [{"KUBERNETES_CONTEXT": "staging", "KUBECONFIG": wanted}, {"KUBECONFIG": wanted}]


def test_each_file_of_a_kubeconfig_list_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(["a.yaml", "", "/etc/rushhour/b.yaml"]))
    assert kleases.keeper_secrets({})["KUBECONFIG"] == os.pathsep.join([str(tmp_path / "a.yaml"), "/etc/rushhour/b.yaml"])
    monkeypatch.delenv("KUBECONFIG")
    assert kleases.keeper_secrets({"KUBERNETES_HOST": SERVER}) == {"KUBERNETES_HOST": SERVER}


def test_the_keepers_client_reads_the_handed_kubeconfig_from_another_folder(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The keeper sweeps with no secrets of its own (`sweep(ns)`): its client reads the file
    spawn_keeper named in its environment, from the keeper's own folder."""
    experiment_dir, elsewhere = tmp_path / "experiments", tmp_path / "keeper"
    experiment_dir.mkdir()
    elsewhere.mkdir()
    _kubeconfig(experiment_dir / "staging.kubeconfig")
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config to fall back on
    monkeypatch.chdir(experiment_dir)
    monkeypatch.setenv("KUBECONFIG", "staging.kubeconfig")
    handed = kleases.keeper_secrets({})
    monkeypatch.chdir(elsewhere)  # the keeper's folder (spawn_keeper starts it in the repository)
    for key, value in handed.items():
        monkeypatch.setenv(key, value)
    _, core, _ = kleases._apis(None)
    configuration = core.api_client.configuration
    assert configuration.host == SERVER
    assert configuration.api_key == {"BearerToken": "Bearer s3cret"}
