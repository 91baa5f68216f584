"""Faults that carry rushhour's lease on a Kubernetes object, made and undone one way for the
reference server's pools (`actions.py`) and for a user's own workload (`workload.py`).

Making one: the lease keeper is started first (it sweeps the namespace once the lease has passed,
see `rushhour.experiments.kubernetes.leases`), then the object is patched with rushhour's mark and
the lease's end, and the mark is renewed while the experiment holds the fault
(`rushhour.experiments.leases.hold_lease`). A partition is a deny-all NetworkPolicy owned by a
lease Job (`rushhour.experiments.kubernetes.selection`), so the cluster removes it by itself.
Undoing one unpatches or deletes the object, an object already gone included.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from chaosk8s.networking.actions import create_network_policy
from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Secrets
from kubernetes.client.rest import ApiException

from rushhour.experiments.kubernetes.leases import keeper_secrets, partition_renewer, renewer
from rushhour.experiments.kubernetes.objects import CORDONED_BY, cordon_patch, scale_down_patch, uncordon_patch
from rushhour.experiments.kubernetes.selection import LEASE_IMAGE, lease_job, owner_reference
from rushhour.experiments.leases import hold_lease, release, spawn_keeper

__all__ = ["SWEEP_SLACK_S", "cordon_marked", "delete_present", "marks_of", "partition_leased", "patch_node",
           "remove_partition", "scale_down_marked", "start_keeper", "uncordon_marked"]

SWEEP_SLACK_S = 1.0
"""The keeper looks once more this long after the lease, so its last sweep finds it passed."""


def marks_of(obj: Any) -> dict[str, str]:
    """An object's annotations ({} for none or no object)."""
    return dict((obj.metadata.annotations if obj is not None and obj.metadata else None) or {})


def start_keeper(ns: str, lease: float, secrets: Secrets) -> int:
    """Start the lease keeper of namespace `ns` with the experiment's cluster credentials; its PID."""
    return spawn_keeper("sweep_kubernetes", lease + SWEEP_SLACK_S, {"ns": ns}, secrets=keeper_secrets(secrets))


def patch_node(core: Any, name: str, body: dict[str, Any]) -> None:
    try:
        core.patch_node(name, body)
    except ApiException as exc:
        raise ActivityFailed(f'Could not patch node "{name}": {exc.reason}.') from exc


def cordon_marked(core: Any, names: list[str], *, ns: str, lease: float, hold_s: float, secrets: Secrets) -> list[str]:
    """Start the keeper, then cordon `names` with rushhour's mark and lease, renewed while held."""
    if not names:
        return names
    start_keeper(ns, lease, secrets)
    for name in names:
        patch_node(core, name, cordon_patch(time.time() + lease))
        hold_lease(f"k8s|node|{name}", renewer(lambda body, n=name: patch_node(core, n, body),
                                               lambda n=name: marks_of(core.read_node(n))), lease, float(hold_s))
    return names


def uncordon_marked(core: Any, nodes: Iterable[Any]) -> list[str]:
    """Make schedulable again those of `nodes` that carry rushhour's cordon mark (an operator's
    cordon stays as it is); their names."""
    names = [str(n.metadata.name) for n in nodes if n.metadata and CORDONED_BY in (n.metadata.annotations or {})]
    for name in names:
        release(f"k8s|node|{name}")
        patch_node(core, name, uncordon_patch())
    return names


def scale_down_marked(apps: Any, name: str, ns: str, *, replicas: int, before: int, lease: float,
                      hold_s: float) -> None:
    """Scale Deployment `name` down to `replicas`, marked with `before` and the lease, renewed while held."""
    apps.patch_namespaced_deployment(name, ns, scale_down_patch(replicas, before, time.time() + lease))
    hold_lease(f"k8s|deployment|{ns}/{name}", renewer(
        lambda body: apps.patch_namespaced_deployment(name, ns, body),
        lambda: marks_of(apps.read_namespaced_deployment(name, ns))), lease, float(hold_s))


def partition_leased(networking: Any, batch: Any, name: str, ns: str, policy: Callable[[dict[str, Any], float], dict[str, Any]],
                     *, lease: float, hold_s: float, secrets: Secrets, image: str = LEASE_IMAGE) -> int:
    """Start the keeper, create the lease Job `name`, then the NetworkPolicy `policy(owner,
    expires_at)` owned by it; renew both while held. The keeper's PID."""
    keeper = start_keeper(ns, lease, secrets)
    job = batch.create_namespaced_job(ns, lease_job(name, ns, lease, image=image))
    owner = owner_reference(name, str(job.metadata.uid))
    create_network_policy(spec=policy(owner, time.time() + lease), ns=ns, secrets=secrets)
    hold_lease(f"k8s|policy|{ns}/{name}", partition_renewer(networking, batch, name, ns), lease, float(hold_s))
    return keeper


def remove_partition(networking: Any, batch: Any, name: str, ns: str) -> None:
    """Delete the partition `name` in `ns`: its NetworkPolicy and its lease Job, either already gone or not."""
    release(f"k8s|policy|{ns}/{name}")
    delete_present(lambda: networking.delete_namespaced_network_policy(name, ns), f'NetworkPolicy "{name}" in "{ns}"')
    delete_present(lambda: batch.delete_namespaced_job(name, ns, propagation_policy="Background"),
                   f'Job "{name}" in "{ns}"')


def delete_present(call: Callable[[], Any], what: str) -> None:
    """Run a delete call; an object already gone (404) is fine, any other refusal is ActivityFailed."""
    try:
        call()
    except ApiException as exc:
        if exc.status != 404:
            raise ActivityFailed(f"Could not delete {what}: {exc.reason}.") from exc
