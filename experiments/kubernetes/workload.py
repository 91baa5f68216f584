"""Chaos Toolkit actions on a user's own Kubernetes workload, chosen by namespace and label selector.

Built on chaostoolkit-kubernetes where it has the action (terminating pods, draining nodes,
creating a NetworkPolicy); rushhour adds the lease that ends each fault without the harness:

- a pod kill needs no undo: the workload's controller (Deployment, StatefulSet) replaces the pods;
- a partition is a deny-all NetworkPolicy owned by a *lease Job* (see
  `rushhour.experiments.kubernetes.selection`): when the lease lapses the Job fails, the TTL
  controller deletes it and the garbage collector deletes the policy, inside the cluster;
- a cordon, a drain and a scale-down cannot be timed out by Kubernetes: each object carries
  rushhour's mark and lease end, which a lease keeper on the harness's host (with the
  experiment's credentials, retrying through API errors) and the in-cluster sweeper CronJob
  (`experiments/kubernetes/sweeper.yaml`) undo once the lease has passed.

Each held fault's lease is renewed while the experiment holds it (`hold_s`), as for every fault
of rushhour's (see `rushhour.experiments.leases`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
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
    SCALED_FROM,
    cordon_patch,
    restore_patch,
    scale_down_patch,
    uncordon_patch,
)
from rushhour.experiments.kubernetes.selection import (
    LEASE_IMAGE,
    lease_job,
    owned_partition,
    owner_reference,
    parse_selector,
    partition_name,
)
from rushhour.experiments.leases import hold_lease, lease_s, release, spawn_keeper

__all__ = [
    "cordon_workload_nodes",
    "drain_workload_nodes",
    "heal_workload_partition",
    "kill_workload_pods",
    "partition_workload",
    "restore_workload_scale",
    "scale_workload",
    "uncordon_workload_nodes",
]

SWEEP_SLACK_S = 1.0


@dataclass(frozen=True)
class Apis:
    """The official client's APIs the workload faults call (a seam the tests fill with fakes)."""

    core: Any
    apps: Any
    networking: Any
    batch: Any


def _apis(secrets: Secrets) -> Apis:
    api = create_k8s_api_client(secrets)
    return Apis(client.CoreV1Api(api), client.AppsV1Api(api), client.NetworkingV1Api(api), client.BatchV1Api(api))


def _selector(label_selector: str) -> str:
    try:
        parse_selector(label_selector)
    except ValueError as exc:
        raise ActivityFailed(str(exc)) from exc
    return label_selector.strip()


def _keeper(ns: str, lease: float, secrets: Secrets) -> int:
    return spawn_keeper("sweep_kubernetes", lease + SWEEP_SLACK_S, {"ns": ns}, secrets=keeper_secrets(secrets))


def kill_workload_pods(
    label_selector: str = "",
    ns: str = "default",
    qty: int = 1,
    all_pods: bool = False,
    rand: bool = False,
    grace_period: int = 0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Delete pods of the workload `label_selector` selects in `ns`, as a crash or a lost node would.

    qty: how many pods (in name order, or at random with rand); all_pods: every selected pod.
    grace_period: seconds each pod gets to stop (0: killed at once).

    Nothing to undo: the workload's controller schedules replacements; their start is the fault.
    """
    selector = _selector(label_selector)
    terminate_pods(label_selector=selector, ns=ns, qty=int(qty), all=bool(all_pods), rand=bool(rand),
                   grace_period=int(grace_period), secrets=secrets)
    return {"label_selector": selector, "namespace": ns, "qty": "all" if all_pods else int(qty)}


def cordon_workload_nodes(
    label_selector: str = "",
    ns: str = "default",
    count: int = 0,
    hold_s: float = 0.0,
    ttl_s: float = 600.0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> list[str]:
    """Mark unschedulable the nodes that run the workload's pods, so nothing new lands there.

    count: how many of those nodes (0: all of them). Nodes already unschedulable (an operator's
    cordon) are left alone. hold_s: how long the experiment holds the fault (its lease is
    renewed meanwhile); ttl_s: the lease when nothing is held.

    Undo with `uncordon_workload_nodes`. Should the harness be lost, its lease keeper or the
    in-cluster sweeper uncordons them once the lease has passed.
    """
    apis = _apis(secrets)
    chosen = _workload_nodes(apis, _selector(label_selector), ns, count)
    return _lease_cordon(apis, chosen, ns, lease_s(ttl_s, hold_s), float(hold_s), secrets)


def drain_workload_nodes(
    label_selector: str = "",
    ns: str = "default",
    count: int = 1,
    timeout: int = 120,
    hold_s: float = 0.0,
    ttl_s: float = 600.0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> list[str]:
    """Cordon and evict `count` nodes that run the workload's pods, as a maintenance would.

    Each node is marked with rushhour's lease (keeper started first) before anything is evicted.
    timeout: seconds to wait for the evictions. hold_s, ttl_s: the cordon's lease, as for
    `cordon_workload_nodes`.

    Undo with `uncordon_workload_nodes`; the evicted pods are rescheduled by their controllers.
    """
    apis = _apis(secrets)
    chosen = _workload_nodes(apis, _selector(label_selector), ns, max(1, int(count)))
    _lease_cordon(apis, chosen, ns, lease_s(ttl_s, hold_s), float(hold_s), secrets)
    for name in chosen:
        drain_nodes(name=name, timeout=int(timeout), secrets=secrets)
    return chosen


def uncordon_workload_nodes(configuration: Configuration = None, secrets: Secrets = None) -> list[str]:
    """Make schedulable again every node rushhour cordoned (the undo of `cordon_workload_nodes`
    and `drain_workload_nodes`); a node without rushhour's mark stays as it is."""
    apis = _apis(secrets)
    names = [str(n.metadata.name) for n in apis.core.list_node().items
             if n.metadata and CORDONED_BY in (n.metadata.annotations or {})]
    for name in names:
        release(f"k8s|node|{name}")
        apis.core.patch_node(name, uncordon_patch())
    return names


def partition_workload(
    label_selector: str = "",
    ns: str = "default",
    hold_s: float = 0.0,
    ttl_s: float = 600.0,
    lease_image: str = LEASE_IMAGE,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Cut the workload's pods off the network with a deny-all NetworkPolicy (no ingress, no egress).

    Needs a CNI that enforces NetworkPolicies (Calico, Cilium...); elsewhere nothing breaks.
    hold_s, ttl_s: the lease, as for `cordon_workload_nodes`. lease_image: the image of the lease
    Job's pod (it only waits; any image with a default command that does not exit will do).

    Undo with `heal_workload_partition`. Without it, the cluster undoes the fault by itself: the
    policy is owned by a lease Job whose deadline is the lease, so when the renewals stop the Job
    fails, is deleted, and the garbage collector deletes the policy.
    """
    selector = _selector(label_selector)
    apis, name, lease = _apis(secrets), partition_name(selector), lease_s(ttl_s, hold_s)
    keeper = _keeper(ns, lease, secrets)
    job = apis.batch.create_namespaced_job(ns, lease_job(name, ns, lease, image=lease_image))
    owner = owner_reference(name, str(job.metadata.uid))
    create_network_policy(spec=owned_partition(name, ns, selector, owner=owner, expires_at=time.time() + lease),
                          ns=ns, secrets=secrets)
    hold_lease(f"k8s|policy|{ns}/{name}", partition_renewer(apis.networking, apis.batch, name, ns), lease, float(hold_s))
    return {"label_selector": selector, "namespace": ns, "policy": name, "lease_job": name, "lease_s": lease,
            "lease_keeper_pid": keeper}


def heal_workload_partition(
    label_selector: str = "",
    ns: str = "default",
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Delete the partition of the workload (the undo of `partition_workload`): its policy and its
    lease Job, then every expired lease of rushhour's in `ns`."""
    selector = _selector(label_selector)
    apis, name = _apis(secrets), partition_name(selector)
    release(f"k8s|policy|{ns}/{name}")
    _delete(lambda: apis.networking.delete_namespaced_network_policy(name, ns), f'NetworkPolicy "{name}" in "{ns}"')
    _delete(lambda: apis.batch.delete_namespaced_job(name, ns, propagation_policy="Background"),
            f'Job "{name}" in "{ns}"')
    swept = sweep(ns, networking=apis.networking, core=apis.core, apps=apis.apps)
    return {"label_selector": selector, "namespace": ns, "policy": name, "swept": swept}


def scale_workload(
    label_selector: str = "",
    ns: str = "default",
    replicas: int = 0,
    hold_s: float = 0.0,
    ttl_s: float = 600.0,
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, Any]:
    """Scale down every Deployment `label_selector` selects in `ns` to `replicas` (0 then back: a
    cold start of the workload). Deployments already at or below `replicas` are left alone.

    Each one is marked with its count before (`rushhour.io/scaled-from`) and the lease; hold_s,
    ttl_s: the lease, as for `cordon_workload_nodes`.

    Undo with `restore_workload_scale`; should the harness be lost, its lease keeper or the
    in-cluster sweeper scales each back once the lease has passed.
    """
    if int(replicas) < 0:
        raise ActivityFailed(f"A Deployment cannot have {replicas} replicas.")
    selector, apis, wanted = _selector(label_selector), _apis(secrets), int(replicas)
    lease = lease_s(ttl_s, hold_s)
    found = apis.apps.list_namespaced_deployment(ns, label_selector=selector).items
    chosen = [(str(d.metadata.name), int(d.spec.replicas or 0)) for d in found
              if SCALED_FROM not in _annotations(d) and int(d.spec.replicas or 0) > wanted]
    keeper = _keeper(ns, lease, secrets) if chosen else None
    for name, before in chosen:
        apis.apps.patch_namespaced_deployment(name, ns, scale_down_patch(wanted, before, time.time() + lease))
        hold_lease(f"k8s|deployment|{ns}/{name}", renewer(
            lambda body, n=name: apis.apps.patch_namespaced_deployment(n, ns, body),
            lambda n=name: _annotations(apis.apps.read_namespaced_deployment(n, ns))), lease, float(hold_s))
    return {"label_selector": selector, "namespace": ns, "replicas": wanted, "scaled": dict(chosen),
            "lease_s": lease, "lease_keeper_pid": keeper}


def restore_workload_scale(
    label_selector: str = "",
    ns: str = "default",
    configuration: Configuration = None,
    secrets: Secrets = None,
) -> dict[str, int]:
    """Scale back every Deployment of the workload that rushhour scaled down (the undo of
    `scale_workload`) to its marked count, removing the mark."""
    selector, apis = _selector(label_selector), _apis(secrets)
    restored: dict[str, int] = {}
    for deployment in apis.apps.list_namespaced_deployment(ns, label_selector=selector).items:
        marks = _annotations(deployment)
        if SCALED_FROM in marks:
            name = str(deployment.metadata.name)
            release(f"k8s|deployment|{ns}/{name}")
            restored[name] = _count(marks[SCALED_FROM])
            apis.apps.patch_namespaced_deployment(name, ns, restore_patch(restored[name]))
    return restored


def _count(raw: str) -> int:
    try:
        return max(0, int(raw))
    except ValueError:
        return 1  # a mangled mark: at least one replica back rather than none


def _workload_nodes(apis: Apis, selector: str, ns: str, count: int) -> list[str]:
    """Schedulable nodes that run the selected pods, in name order; `count` of them (0: all)."""
    pods = apis.core.list_namespaced_pod(ns, label_selector=selector).items
    hosts = sorted({str(p.spec.node_name) for p in pods if p.spec is not None and p.spec.node_name})
    if not hosts:
        raise ActivityFailed(f'No pod selected by "{selector}" in namespace "{ns}" runs on a node.')
    schedulable = [n for n in hosts if not getattr(apis.core.read_node(n).spec, "unschedulable", False)]
    return schedulable[:count] if count > 0 else schedulable


def _lease_cordon(apis: Apis, names: list[str], ns: str, lease: float, hold_s: float, secrets: Secrets) -> list[str]:
    """Start the keeper, then cordon `names` with rushhour's mark and lease, renewed while held."""
    if not names:
        return names
    _keeper(ns, lease, secrets)
    for name in names:
        apis.core.patch_node(name, cordon_patch(time.time() + lease))
        hold_lease(f"k8s|node|{name}", renewer(lambda body, n=name: apis.core.patch_node(n, body),
                                               lambda n=name: _annotations(apis.core.read_node(n))), lease, hold_s)
    return names


def _annotations(obj: Any) -> dict[str, str]:
    return dict((obj.metadata.annotations if obj is not None and obj.metadata else None) or {})


def _delete(call: Any, what: str) -> None:
    try:
        call()
    except ApiException as exc:
        if exc.status != 404:
            raise ActivityFailed(f"Could not delete {what}: {exc.reason}.") from exc
