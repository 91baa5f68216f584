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

import time
from typing import Any

from chaosk8s import create_k8s_api_client
from chaosk8s.networking.actions import create_network_policy
from chaosk8s.node.actions import drain_nodes
from chaosk8s.pod.actions import terminate_pods
from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Configuration, Secrets
from kubernetes import client
from kubernetes.client.rest import ApiException

from rushhour.experiments.kubernetes.leases import keeper_secrets, partition_renewer, renewer, sweep
from rushhour.experiments.kubernetes.objects import (
    CORDONED_BY,
    DEFAULT_NAMESPACE,
    GPU_NODE_SELECTOR,
    SCALED_FROM,
    cordon_patch,
    deployment_name,
    partition_policy,
    policy_name,
    pool_selector,
    replicas_patch,
    restore_patch,
    scale_down_patch,
    uncordon_patch,
)
from rushhour.experiments.kubernetes.selection import lease_job, owner_reference
from rushhour.experiments.leases import hold_lease, lease_s, release, spawn_keeper

__all__ = [
    "cordon_gpu_nodes",
    "delete_pool_pods",
    "drain_gpu_nodes",
    "heal_pool_partition",
    "partition_pool",
    "scale_pool",
    "uncordon_gpu_nodes",
]

SWEEP_SLACK_S = 1.0


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
    return _lease_cordon(core, _schedulable(core, label_selector), lease_s(ttl_s, hold_s), hold_s, secrets)


def uncordon_gpu_nodes(
    label_selector: str = GPU_NODE_SELECTOR,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> list[str]:
    """Make the GPU nodes rushhour cordoned schedulable again: the undo of `cordon_gpu_nodes`,
    `drain_gpu_nodes`. A node without rushhour's mark (an operator's cordon) stays as it is."""
    core = client.CoreV1Api(create_k8s_api_client(secrets))
    names = [str(n.metadata.name) for n in core.list_node(label_selector=label_selector).items
             if n.metadata and CORDONED_BY in (n.metadata.annotations or {})]
    for name in names:
        release(f"k8s|node|{name}")
        _patch_node(core, name, uncordon_patch())
    return names


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
    _lease_cordon(core, chosen, lease_s(ttl_s, hold_s), hold_s, secrets)
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
    keeper = spawn_keeper("sweep_kubernetes", lease + SWEEP_SLACK_S, {"ns": ns}, secrets=keeper_secrets(secrets))
    api = create_k8s_api_client(secrets)
    networking, batch = client.NetworkingV1Api(api), client.BatchV1Api(api)
    job = batch.create_namespaced_job(ns, lease_job(name, ns, lease))
    policy = partition_policy(pool, ns, expires_at=time.time() + lease)
    policy["metadata"]["ownerReferences"] = [owner_reference(name, str(job.metadata.uid))]
    create_network_policy(spec=policy, ns=ns, secrets=secrets)
    hold_lease(f"k8s|policy|{ns}/{name}", partition_renewer(networking, batch, name, ns), lease, float(hold_s))
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
    networking, batch, name = client.NetworkingV1Api(api), client.BatchV1Api(api), policy_name(pool)
    release(f"k8s|policy|{ns}/{name}")
    for what, delete in ((f'NetworkPolicy "{name}"', lambda: networking.delete_namespaced_network_policy(name, ns)),
                         (f'Job "{name}"', lambda: batch.delete_namespaced_job(name, ns, propagation_policy="Background"))):
        try:
            delete()
        except ApiException as exc:
            if exc.status != 404:
                raise ActivityFailed(f'Could not delete {what} in "{ns}": {exc.reason}.') from exc
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
    annotations = _annotations(current)
    before = int(annotations.get(SCALED_FROM) or (current.spec.replicas if current.spec else 0) or 0)
    if wanted >= before:
        apps.patch_namespaced_deployment(name, ns, restore_patch(wanted))
        return {"pool": pool, "deployment": name, "replicas": wanted}
    lease = lease_s(ttl_s, hold_s)
    keeper = spawn_keeper("sweep_kubernetes", lease + SWEEP_SLACK_S, {"ns": ns}, secrets=keeper_secrets(secrets))
    apps.patch_namespaced_deployment(name, ns, scale_down_patch(wanted, before, time.time() + lease))
    hold_lease(f"k8s|deployment|{ns}/{name}", renewer(
        lambda body: apps.patch_namespaced_deployment(name, ns, body),
        lambda: _annotations(apps.read_namespaced_deployment(name, ns))), lease, float(hold_s))
    return {"pool": pool, "deployment": name, "replicas": wanted, "restore_to": before, "lease_s": lease,
            "lease_keeper_pid": keeper}


def _schedulable(core: Any, label_selector: str) -> list[str]:
    """Nodes matching `label_selector` that are schedulable now (an operator's cordon excluded)."""
    return [str(n.metadata.name) for n in core.list_node(label_selector=label_selector).items
            if n.metadata and not (n.spec is not None and n.spec.unschedulable)]


def _annotations(obj: Any) -> dict[str, str]:
    return dict((obj.metadata.annotations if obj is not None and obj.metadata else None) or {})


def _lease_cordon(core: Any, names: list[str], lease: float, hold_s: float, secrets: Secrets = None) -> list[str]:
    """Start the keeper, then cordon `names` with our mark and lease, renewed while held."""
    if not names:
        return names
    spawn_keeper("sweep_kubernetes", lease + SWEEP_SLACK_S, {"ns": DEFAULT_NAMESPACE}, secrets=keeper_secrets(secrets))
    for name in names:
        _patch_node(core, name, cordon_patch(time.time() + lease))
        hold_lease(f"k8s|node|{name}", renewer(lambda body, n=name: _patch_node(core, n, body),
                                               lambda n=name: _annotations(core.read_node(n))), lease, float(hold_s))
    return names


def _patch_node(core: Any, name: str, body: dict[str, Any]) -> None:
    try:
        core.patch_node(name, body)
    except ApiException as exc:
        raise ActivityFailed(f'Could not patch node "{name}": {exc.reason}.') from exc
