"""Chaos Toolkit probes on Kubernetes (read-only): rushhour's pools, and a user's workload by label selector."""

from __future__ import annotations

from typing import Any

from chaosk8s import create_k8s_api_client
from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Configuration, Secrets
from kubernetes import client
from kubernetes.client.rest import ApiException

from rushhour.experiments.kubernetes.objects import DEFAULT_NAMESPACE, deployment_name

__all__ = ["pool_ready_replicas", "pool_ready_replicas_at_least", "workload_ready_at_least", "workload_ready_pods"]


def pool_ready_replicas(
    pool: str = "quality",
    ns: str = DEFAULT_NAMESPACE,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> int:
    """How many pods of `pool`'s Deployment are ready to serve."""
    apps = client.AppsV1Api(create_k8s_api_client(secrets))
    try:
        deployment = apps.read_namespaced_deployment(deployment_name(pool), ns)
    except ApiException as exc:
        name = deployment_name(pool)
        raise ActivityFailed(
            f'Could not read Deployment "{name}" in namespace "{ns}": {exc.reason}.'
        ) from exc
    status = deployment.status
    return int(status.ready_replicas or 0) if status is not None else 0


def pool_ready_replicas_at_least(
    pool: str = "quality",
    n: int = 1,
    ns: str = DEFAULT_NAMESPACE,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> bool:
    """True when `pool` has at least `n` ready pods: enough capacity to call it recovered."""
    return pool_ready_replicas(pool, ns, configuration, secrets) >= int(n)


def workload_ready_pods(
    label_selector: str = "",
    ns: str = "default",
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> int:
    """How many pods that `label_selector` selects in `ns` are Ready (their Ready condition True)."""
    if not label_selector.strip():
        raise ActivityFailed('The label selector is empty; write the workload\'s labels, e.g. "app=web".')
    core = client.CoreV1Api(create_k8s_api_client(secrets))
    try:
        pods = core.list_namespaced_pod(ns, label_selector=label_selector).items
    except ApiException as exc:
        raise ActivityFailed(f'Could not list the pods "{label_selector}" in namespace "{ns}": {exc.reason}.') from exc
    return sum(1 for pod in pods if _ready(pod))


def workload_ready_at_least(
    label_selector: str = "",
    n: int = 1,
    ns: str = "default",
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> bool:
    """True when at least `n` pods of the workload are Ready: enough to call it recovered."""
    return workload_ready_pods(label_selector, ns, configuration, secrets) >= int(n)


def _ready(pod: Any) -> bool:
    conditions = getattr(pod.status, "conditions", None) or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)
