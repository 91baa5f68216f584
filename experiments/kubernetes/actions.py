"""Chaos Toolkit actions for rushhour on Kubernetes, built on chaostoolkit-kubernetes.

Where chaostoolkit-kubernetes already does the job (terminating pods, draining nodes, scaling
Deployments, creating NetworkPolicies) these actions only add rushhour's labels and names, so an
experiment says "the quality pool" instead of a label selector. The cluster comes from the usual
kubeconfig or in-cluster credentials (see chaosk8s).

A partition, a cordon and a scale-down carry a lease (see `rushhour.experiments.leases`): first a detached
lease keeper is started and the object marked with its lease's end, then the fault is made; while
the experiment holds it, this process renews the mark every few seconds, and when the renewals
stop the keeper undoes it (see `rushhour.experiments.kubernetes.leases`). Nodes already unschedulable when
an experiment begins (an operator's cordon) are skipped: never marked, never uncordoned.
"""

from __future__ import annotations

from typing import Any

from chaosk8s import create_k8s_api_client
from chaosk8s.node.actions import drain_nodes
from chaosk8s.pod.actions import terminate_pods
from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Configuration, Secrets
from kubernetes import client

from rushhour.experiments.kubernetes import marked
from rushhour.experiments.kubernetes.leases import sweep
from rushhour.experiments.kubernetes.objects import (
    DEFAULT_NAMESPACE,
    GPU_NODE_SELECTOR,
    SCALED_FROM,
    deployment_name,
    partition_policy,
    policy_name,
    pool_selector,
    replicas_patch,
    restore_patch,
)
from rushhour.experiments.leases import lease_s, release

__all__ = [
    "cordon_gpu_nodes",
    "delete_pool_pods",
    "drain_gpu_nodes",
    "heal_pool_partition",
    "partition_pool",
    "scale_pool",
    "uncordon_gpu_nodes",
]


def delete_pool_pods(
    pool: str = "quality",
    qty: int = 1,
    all_pods: bool = False,
    grace_period: int = 0,
    ns: str = DEFAULT_NAMESPACE,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Delete model pods of `pool` (GPU pods for the quality pool), as a lost GPU node would.

    qty: how many pods, in name order; all_pods: every pod of the pool instead.
    grace_period: seconds the pod gets to stop (0: killed at once).
    ns: the namespace rushhour runs in.

    Undone by the Deployment, which schedules replacements; their cold start is the experiment.
    """
    terminate_pods(
        label_selector=pool_selector(pool),
        all=bool(all_pods),
        qty=int(qty),
        grace_period=int(grace_period),
        ns=ns,
        secrets=secrets,
    )
    return {"pool": pool, "qty": "all" if all_pods else int(qty), "namespace": ns}


def cordon_gpu_nodes(
    label_selector: str = GPU_NODE_SELECTOR,
    hold_s: float = 0.0,
    ttl_s: float = 600.0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> list[str]:
    """Mark the GPU nodes unschedulable, so no replacement model pod can land on them.

    label_selector: which nodes; by default those the NVIDIA device plugin labels as GPU nodes.
    Nodes already unschedulable (cordoned by an operator) are left alone.
    hold_s: how long the experiment holds the fault; its lease is renewed meanwhile (see `lease_s`).
    ttl_s: the lease when nothing is held.

    Undo with `uncordon_gpu_nodes`; a lease keeper uncordons them when the lease lapses.
    """
    core = client.CoreV1Api(create_k8s_api_client(secrets))
    return marked.cordon_marked(core, _schedulable(core, label_selector), ns=DEFAULT_NAMESPACE, lease=lease_s(ttl_s, hold_s),
                         hold_s=hold_s, secrets=secrets)


def uncordon_gpu_nodes(
    label_selector: str = GPU_NODE_SELECTOR,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> list[str]:
    """Make the GPU nodes rushhour cordoned schedulable again: the undo of `cordon_gpu_nodes`,
    `drain_gpu_nodes`. A node without rushhour's mark (an operator's cordon) stays as it is."""
    core = client.CoreV1Api(create_k8s_api_client(secrets))
    return marked.uncordon_marked(core, core.list_node(label_selector=label_selector).items)


def drain_gpu_nodes(
    label_selector: str = GPU_NODE_SELECTOR,
    count: int = 1,
    timeout: int = 120,
    hold_s: float = 0.0,
    ttl_s: float = 600.0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> list[str]:
    """Cordon and evict `count` GPU nodes, as a maintenance or a failing host would.

    Only schedulable nodes are chosen (an operator's cordon is not taken over); each is marked
    with rushhour's lease and its keeper started before anything is evicted.
    timeout: seconds to wait for the evictions.
    hold_s, ttl_s: the cordon's lease, as for `cordon_gpu_nodes`.

    Undo with `uncordon_gpu_nodes`; the evicted pods are rescheduled by their Deployments.
    """
    core = client.CoreV1Api(create_k8s_api_client(secrets))
    chosen = _schedulable(core, label_selector)[:max(0, int(count))]
    marked.cordon_marked(core, chosen, ns=DEFAULT_NAMESPACE, lease=lease_s(ttl_s, hold_s), hold_s=hold_s, secrets=secrets)
    for name in chosen:
        drain_nodes(name=name, timeout=int(timeout), secrets=secrets)
    return chosen


def partition_pool(
    pool: str = "quality",
    ns: str = DEFAULT_NAMESPACE,
    hold_s: float = 0.0,
    ttl_s: float = 600.0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Cut every pod of `pool` off the network with a deny-all NetworkPolicy.

    Needs a CNI that enforces NetworkPolicies (Calico, Cilium...); elsewhere nothing breaks.
    hold_s: how long the experiment holds the fault; the lease covers it (see `lease_s`).
    ttl_s: the lease when nothing is held.

    Undo with `heal_pool_partition`, which deletes the policy and its lease Job. Without it the
    cluster undoes the fault by itself: the policy is owned by a lease Job whose deadline is the
    lease (see `rushhour.experiments.kubernetes.selection`), so when the renewals stop the Job
    fails, is deleted, and the garbage collector deletes the policy; a lease keeper deletes it too.
    """
    lease, name = lease_s(ttl_s, hold_s), policy_name(pool)
    api = create_k8s_api_client(secrets)
    keeper = marked.partition_leased(client.NetworkingV1Api(api), client.BatchV1Api(api), name, ns, _owned_policy(pool, ns),
                              lease=lease, hold_s=float(hold_s), secrets=secrets)
    return {"pool": pool, "policy": name, "lease_job": name, "namespace": ns, "lease_s": lease, "lease_keeper_pid": keeper}


def heal_pool_partition(
    pool: str = "quality",
    ns: str = DEFAULT_NAMESPACE,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Delete the partition NetworkPolicy of `pool` and its lease Job (the undo of `partition_pool`),
    and every expired lease of rushhour's in `ns`."""
    api = create_k8s_api_client(secrets)
    marked.remove_partition(client.NetworkingV1Api(api), client.BatchV1Api(api), policy_name(pool), ns)
    swept = sweep(ns, secrets=secrets)
    return {"pool": pool, "policy": policy_name(pool), "namespace": ns, "swept": swept}


def scale_pool(
    pool: str = "quality",
    replicas: int = 0,
    ns: str = DEFAULT_NAMESPACE,
    hold_s: float = 0.0,
    ttl_s: float = 600.0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Scale the Deployment of `pool`; 0 then back up is a cold start of the whole pool.

    replicas: the replica count to set.
    hold_s, ttl_s: the lease of a scale-down (fewer replicas than now), as for `partition_pool`:
    the Deployment is marked with the count to restore, and a lease keeper scales it back when
    the lease lapses unrenewed.

    Undo by scaling back to the manifest's count (2 for quality, 1 for fast); scaling to the
    marked count removes the mark.
    """
    try:
        replicas_patch(int(replicas))
    except ValueError as exc:
        raise ActivityFailed(str(exc)) from exc
    apps = client.AppsV1Api(create_k8s_api_client(secrets))
    name, wanted = deployment_name(pool), int(replicas)
    release(f"k8s|deployment|{ns}/{name}")
    current = apps.read_namespaced_deployment(name, ns)
    before = int(marked.marks_of(current).get(SCALED_FROM) or (current.spec.replicas if current.spec else 0) or 0)
    if wanted >= before:
        apps.patch_namespaced_deployment(name, ns, restore_patch(wanted))
        return {"pool": pool, "deployment": name, "replicas": wanted}
    lease = lease_s(ttl_s, hold_s)
    keeper = marked.start_keeper(ns, lease, secrets)
    marked.scale_down_marked(apps, name, ns, replicas=wanted, before=before, lease=lease, hold_s=float(hold_s))
    return {"pool": pool, "deployment": name, "replicas": wanted, "restore_to": before, "lease_s": lease,
            "lease_keeper_pid": keeper}


def _schedulable(core: Any, label_selector: str) -> list[str]:
    """Nodes matching `label_selector` that are schedulable now (an operator's cordon excluded)."""
    return [str(n.metadata.name) for n in core.list_node(label_selector=label_selector).items
            if n.metadata and not (n.spec is not None and n.spec.unschedulable)]


def _owned_policy(pool: str, ns: str) -> Any:
    """The partition policy of `pool`, owned by its lease Job (`marked.partition_leased` builds it)."""

    def build(owner: dict[str, Any], expires_at: float) -> dict[str, Any]:
        policy = partition_policy(pool, ns, expires_at=expires_at)
        policy["metadata"]["ownerReferences"] = [owner]
        return policy

    return build
