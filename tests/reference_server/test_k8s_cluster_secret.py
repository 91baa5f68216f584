"""The drill's manifests take the cluster secret from one Secret on both ends, ship no usable
default, and let only the worker pods reach the master's Locust port."""

from __future__ import annotations

import pytest

from rushhour.scenarios.cli.errors import BadInput
from rushhour.scenarios.cli.scaleout import master_settings
from rushhour.scenarios.generator.clusterauth import SECRET_ENV
from tests.support.manifests import container, manifest


def _secret_ref(kind: str, name: str) -> dict[str, str]:
    env = {e["name"]: e for e in container(kind, name).get("env", [])}
    return dict(env[SECRET_ENV]["valueFrom"]["secretKeyRef"])


def test_master_and_workers_read_the_same_secret_key() -> None:
    master, worker = _secret_ref("Job", "rushhour-drill"), _secret_ref("Deployment", "rushhour-locust-worker")
    assert master == worker == {"name": "rushhour-cluster", "key": "secret"}
    assert "secret" in manifest("Secret", "rushhour-cluster")["stringData"]


def test_the_shipped_secret_is_a_placeholder_the_master_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_ENV, manifest("Secret", "rushhour-cluster")["stringData"]["secret"])
    with pytest.raises(BadInput, match="use at least 16"):
        master_settings("0.0.0.0:5557", None)


def test_only_worker_pods_reach_the_master_port() -> None:
    policy = manifest("NetworkPolicy", "rushhour-locust-master")["spec"]
    master_labels = manifest("Job", "rushhour-drill")["spec"]["template"]["metadata"]["labels"]
    worker_labels = manifest("Deployment", "rushhour-locust-worker")["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"].items() <= master_labels.items()
    assert policy["policyTypes"] == ["Ingress"] and len(policy["ingress"]) == 1
    rule = policy["ingress"][0]
    assert [p["podSelector"]["matchLabels"] for p in rule["from"]] == [
        {k: v for k, v in worker_labels.items() if k in rule["from"][0]["podSelector"]["matchLabels"]}]
    assert rule["from"][0]["podSelector"]["matchLabels"]["rushhour.io/role"] == "worker"
    assert rule["ports"] == [{"protocol": "TCP", "port": 5557}]
    assert not policy["podSelector"]["matchLabels"].items() <= worker_labels.items(), "the policy fences the workers"
