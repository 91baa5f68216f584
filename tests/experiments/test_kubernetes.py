"""Kubernetes manifests and chaos objects, validated against the official client's models."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from rushhour.experiments.kubernetes import objects
from tests.support.manifests import documents

MODELS = {
    ("v1", "Namespace"): "V1Namespace",
    ("v1", "Service"): "V1Service",
    ("apps/v1", "Deployment"): "V1Deployment",
    ("networking.k8s.io/v1", "NetworkPolicy"): "V1NetworkPolicy",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Secret"): "V1Secret",
    ("v1", "ServiceAccount"): "V1ServiceAccount",
    ("v1", "PersistentVolumeClaim"): "V1PersistentVolumeClaim",
    ("rbac.authorization.k8s.io/v1", "Role"): "V1Role",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "V1RoleBinding",
    ("batch/v1", "Job"): "V1Job",
    ("batch/v1", "CronJob"): "V1CronJob",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "V1ClusterRole",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "V1ClusterRoleBinding",
}


def _normalise(value: Any) -> Any:
    """Quantities may be written as YAML numbers; the API (and the model) hold them as strings."""
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value


def round_trip(body: dict[str, Any]) -> dict[str, Any]:
    """Deserialize into the client model and back: a misspelt field is dropped, a missing
    required one raises, so equality with the input means the object is well formed."""
    from kubernetes.client import ApiClient  # the official client (0.4 s) only where a test uses it

    api = ApiClient()
    kind = MODELS[(body["apiVersion"], body["kind"])]
    model = api.deserialize(json.dumps(body), kind, "application/json")
    return dict(api.sanitize_for_serialization(model))


def _documents() -> list[dict[str, Any]]:
    return documents()


@pytest.mark.parametrize("doc", _documents(), ids=lambda d: f"{d['kind']}/{d['metadata']['name']}")
def test_manifest_matches_the_client_model(doc: dict[str, Any]) -> None:
    assert _normalise(round_trip(doc)) == _normalise(doc)


def test_pool_deployments_carry_the_labels_the_chaos_actions_select() -> None:
    deployments = {d["metadata"]["name"]: d for d in _documents() if d["kind"] == "Deployment"}
    for pool in ("quality", "fast"):
        labels = deployments[objects.deployment_name(pool)]["spec"]["template"]["metadata"]["labels"]
        selector = dict(part.split("=") for part in objects.pool_selector(pool).split(","))
        assert selector.items() <= labels.items()
    quality = deployments["rushhour-quality"]["spec"]["template"]["spec"]
    assert quality["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "1"
    key, value = objects.GPU_NODE_SELECTOR.split("=")
    assert quality["nodeSelector"] == {key: value}


def test_partition_policy_denies_everything_for_the_pool() -> None:
    policy = objects.partition_policy("quality", "drill")
    assert round_trip(policy) == policy
    assert policy["metadata"] == {
        "name": "rushhour-chaos-partition-quality",
        "namespace": "drill",
        "labels": {"app.kubernetes.io/name": "rushhour", "rushhour.io/chaos": "partition"},
    }
    assert policy["spec"]["podSelector"]["matchLabels"]["rushhour.io/pool"] == "quality"
    assert policy["spec"]["ingress"] == [] and policy["spec"]["egress"] == []


def test_replicas_patch_rejects_negative_counts() -> None:
    assert objects.replicas_patch(0) == {"spec": {"replicas": 0}}
    with pytest.raises(ValueError, match="-1 replicas"):
        objects.replicas_patch(-1)


@pytest.mark.skipif(
    not os.environ.get("KUBECONFIG"), reason="needs a Kubernetes cluster: KUBECONFIG not set"
)
def test_live_cluster_reports_the_quality_pool() -> None:
    from rushhour.experiments.kubernetes import probes

    assert probes.pool_ready_replicas(pool="quality", ns=os.environ.get("RUSHHOUR_NAMESPACE", "rushhour")) >= 0
