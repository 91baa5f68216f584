"""The lease keeper reaches its cluster with the credentials the fault was made with, for every
place chaostoolkit-kubernetes reads them: the experiment's `secrets`, else the environment.

The fault's client is built by chaostoolkit-kubernetes in the folder `chaos run` runs the
experiment in; the keeper's by `sweep(ns)` with no secrets, in another folder, from the
environment `spawn_keeper` gives it (this process's, without rushhour's own secrets, plus
`keeper_secrets`). The two must name the same server, the same token, the same certificate files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from chaosk8s import create_k8s_api_client

from rushhour.experiments.kubernetes import leases as kleases
from rushhour.kernel.processes import child_env

SERVER = "https://prod.k8s.invalid:6443"


def _folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The experiment's folder (with its certificates) and the keeper's; no kubeconfig anywhere."""
    experiment, keeper = tmp_path / "experiment", tmp_path / "keeper"
    (experiment / "certs").mkdir(parents=True)
    keeper.mkdir()
    for name in ("ca.pem", "client.pem", "client.key"):
        (experiment / "certs" / name).write_text("-----BEGIN-----\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("KUBECONFIG", "CHAOSTOOLKIT_IN_POD", "KUBERNETES_CONTEXT", *kleases.FILE_KEYS):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(experiment)
    return experiment, keeper


def _keepers_configuration(secrets: dict[str, Any], keeper: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The keeper's client configuration: the environment spawn_keeper builds, read in its own folder."""
    env = child_env(extra=kleases.keeper_secrets(secrets))
    monkeypatch.chdir(keeper)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    _, core, _ = kleases._apis(None)
    return core.api_client.configuration


def _same_file(experiment: Path, fault_path: str | None, keeper_path: str | None) -> bool:
    return (fault_path is not None and keeper_path is not None and Path(keeper_path).is_absolute()
            and Path(keeper_path).is_file() and (experiment / fault_path).resolve() == Path(keeper_path).resolve())


def test_a_token_and_a_relative_ca_file_in_the_secrets_reach_the_keeper_as_the_fault_used_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    experiment, keeper = _folders(tmp_path, monkeypatch)
    secrets = {"KUBERNETES_HOST": SERVER, "KUBERNETES_API_KEY": "s3cret", "KUBERNETES_VERIFY_SSL": "true",
               "KUBERNETES_CA_CERT_FILE": "certs/ca.pem", "rushhour_token": "not-for-it"}
    fault = create_k8s_api_client(secrets).configuration
    kept = _keepers_configuration(secrets, keeper, monkeypatch)
    assert (kept.host, kept.api_key, kept.api_key_prefix, kept.verify_ssl) == (
        fault.host, fault.api_key, fault.api_key_prefix, fault.verify_ssl) == (
        SERVER, {"authorization": "s3cret"}, {"authorization": "Bearer"}, True)
    assert _same_file(experiment, fault.ssl_ca_cert, kept.ssl_ca_cert)
    assert "rushhour_token" not in kleases.keeper_secrets(secrets)


def test_client_certificates_named_in_the_environment_reach_the_keeper_made_absolute(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chaos entry's `env:` (or the runner's) names the files relative to the experiment's folder."""
    experiment, keeper = _folders(tmp_path, monkeypatch)
    monkeypatch.setenv("KUBERNETES_HOST", SERVER)
    monkeypatch.setenv("KUBERNETES_CERT_FILE", "certs/client.pem")
    monkeypatch.setenv("KUBERNETES_KEY_FILE", "certs/client.key")
    fault = create_k8s_api_client(None).configuration
    kept = _keepers_configuration({}, keeper, monkeypatch)
    assert kept.host == fault.host == SERVER
    assert _same_file(experiment, fault.cert_file, kept.cert_file)
    assert _same_file(experiment, fault.key_file, kept.key_file)


def test_the_secrets_win_over_the_environment_for_the_keeper_as_for_the_fault(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, keeper = _folders(tmp_path, monkeypatch)
    monkeypatch.setenv("KUBERNETES_HOST", "https://other.k8s.invalid:6443")
    monkeypatch.setenv("KUBERNETES_API_KEY", "the-runners")
    secrets = {"KUBERNETES_HOST": SERVER, "KUBERNETES_API_KEY": "the-experiments"}
    fault = create_k8s_api_client(secrets).configuration
    kept = _keepers_configuration(secrets, keeper, monkeypatch)
    assert (kept.host, kept.api_key) == (fault.host, fault.api_key) == (SERVER, {"authorization": "the-experiments"})


def test_what_chaostoolkit_kubernetes_reads_only_from_the_environment_is_not_taken_from_the_secrets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`CHAOSTOOLKIT_IN_POD` and `KUBECONFIG` in the secrets do not change the fault's client, so
    they do not change the keeper's: it would otherwise reach another cluster than the fault."""
    _, keeper = _folders(tmp_path, monkeypatch)
    secrets = {"KUBERNETES_HOST": SERVER, "CHAOSTOOLKIT_IN_POD": "true", "KUBECONFIG": "elsewhere.kubeconfig"}
    fault = create_k8s_api_client(secrets).configuration
    assert kleases.keeper_secrets(secrets) == {"KUBERNETES_HOST": SERVER}
    assert _keepers_configuration(secrets, keeper, monkeypatch).host == fault.host == SERVER


def test_the_context_the_experiment_chose_in_its_kubeconfig_is_the_keepers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kubeconfig with two clusters: the experiment's `KUBERNETES_CONTEXT` (its secrets), not the
    file's current context, is the one the keeper asks, as for the fault."""
    import yaml

    _, keeper = _folders(tmp_path, monkeypatch)
    clusters = [{"name": name, "cluster": {"server": f"https://{name}.k8s.invalid:6443"}} for name in ("staging", "prod")]
    contexts = [{"name": name, "context": {"cluster": name, "user": "u"}} for name in ("staging", "prod")]
    Path("team.kubeconfig").write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "clusters": clusters, "contexts": contexts,
        "users": [{"name": "u", "user": {"token": "t"}}], "current-context": "staging"}))
    monkeypatch.setenv("KUBECONFIG", "team.kubeconfig")  # the chaos entry's env:
    kept = _keepers_configuration({"KUBERNETES_CONTEXT": "prod"}, keeper, monkeypatch)
    assert kept.host == "https://prod.k8s.invalid:6443"
