"""Chaos Toolkit probes of rushhour's pools on Kubernetes (read-only)."""

from __future__ import annotations

from chaosk8s import create_k8s_api_client
from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Configuration, Secrets
from kubernetes import client
from kubernetes.client.rest import ApiException

from rushhour.experiments.kubernetes.objects import DEFAULT_NAMESPACE, deployment_name

__all__ = ["pool_ready_replicas", "pool_ready_replicas_at_least"]


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
