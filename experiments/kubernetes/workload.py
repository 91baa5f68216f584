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

from dataclasses import dataclass
from typing import Any

from chaosk8s import create_k8s_api_client
from chaosk8s.node.actions import drain_nodes
from chaosk8s.pod.actions import terminate_pods
from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Configuration, Secrets
from kubernetes import client

from rushhour.experiments.kubernetes import marked
from rushhour.experiments.kubernetes.leases import restore_count, sweep
from rushhour.experiments.kubernetes.objects import SCALED_FROM, restore_patch
from rushhour.experiments.kubernetes.selection import LEASE_IMAGE, owned_partition, parse_selector, partition_name
from rushhour.experiments.leases import lease_s, release

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
    return marked.cordon_marked(apis.core, chosen, ns=ns, lease=lease_s(ttl_s, hold_s), hold_s=float(hold_s), secrets=secrets)


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
    marked.cordon_marked(apis.core, chosen, ns=ns, lease=lease_s(ttl_s, hold_s), hold_s=float(hold_s), secrets=secrets)
    for name in chosen:
        drain_nodes(name=name, timeout=int(timeout), secrets=secrets)
    return chosen


def uncordon_workload_nodes(configuration: Configuration = None, secrets: Secrets = None) -> list[str]:
    """Make schedulable again every node rushhour cordoned (the undo of `cordon_workload_nodes`
    and `drain_workload_nodes`); a node without rushhour's mark stays as it is."""
    core = _apis(secrets).core
    return marked.uncordon_marked(core, core.list_node().items)


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
    keeper = marked.partition_leased(
        apis.networking, apis.batch, name, ns,
        lambda owner, expires_at: owned_partition(name, ns, selector, owner=owner, expires_at=expires_at),
        lease=lease, hold_s=float(hold_s), secrets=secrets, image=lease_image)
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
    marked.remove_partition(apis.networking, apis.batch, name, ns)
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
              if SCALED_FROM not in marked.marks_of(d) and int(d.spec.replicas or 0) > wanted]
    keeper = marked.start_keeper(ns, lease, secrets) if chosen else None
    for name, before in chosen:
        marked.scale_down_marked(apis.apps, name, ns, replicas=wanted, before=before, lease=lease, hold_s=float(hold_s))
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
        marks = marked.marks_of(deployment)
        if SCALED_FROM in marks:
            name = str(deployment.metadata.name)
            release(f"k8s|deployment|{ns}/{name}")
            restored[name] = restore_count(marks)
            apis.apps.patch_namespaced_deployment(name, ns, restore_patch(restored[name]))
    return restored


def _workload_nodes(apis: Apis, selector: str, ns: str, count: int) -> list[str]:
    """Schedulable nodes that run the selected pods, in name order; `count` of them (0: all)."""
    pods = apis.core.list_namespaced_pod(ns, label_selector=selector).items
    hosts = sorted({str(p.spec.node_name) for p in pods if p.spec is not None and p.spec.node_name})
    if not hosts:
        raise ActivityFailed(f'No pod selected by "{selector}" in namespace "{ns}" runs on a node.')
    schedulable = [n for n in hosts if not getattr(apis.core.read_node(n).spec, "unschedulable", False)]
    return schedulable[:count] if count > 0 else schedulable
