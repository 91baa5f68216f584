"""Leases of the Kubernetes faults: find what rushhour left in a cluster and remove what expired.

Kubernetes has no TTL for a NetworkPolicy, a cordon or a scale-down, so rushhour marks each one
it makes (the `rushhour.io/chaos` label on policies, `rushhour.io/cordoned-by` on nodes,
`rushhour.io/scaled-from` on Deployments) with its lease's end (`rushhour.io/lease-expires-at`),
which the experiment holding the fault renews (`renewer`); a partition's lease Job carries its
lease as its deadline (`partition_renewer`). `sweep` lists every marked object and lease Job and
undoes the expired ones (a lease Job deleted takes its policy with it); it is what a lease keeper
runs until nothing of rushhour's is left (`keep_swept`, which counts each lease down on the boot
clock once seen, `rushhour.experiments.kubernetes.leaseclock`), what the in-cluster sweeper CronJob runs
(`rushhour.experiments.kubernetes.sweeper`), what the rollbacks run, and what the drill's leak
audit runs. An object with rushhour's mark but no readable lease end counts as expired. It never
touches an object without rushhour's mark or label: a node an operator cordoned, a Job of the
user's, are not ours.

The keeper uses the credentials the fault was made with (`keeper_secrets`: the `KUBERNETES_*`
entries of the experiment's `secrets` and the `KUBECONFIG` of its environment, each file made
absolute, handed to the keeper's environment by `spawn_keeper`, never its command line, where
chaostoolkit-kubernetes reads them), retries through API errors with a doubling wait for up to
`RETRY_FOR_S`, and says what it did on its standard error, which `spawn_keeper` sends to a log
file in the drill's results folder.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from chaoslib.types import Configuration, Secrets

from rushhour.experiments.kubernetes.leaseclock import Judge, SteadyLeases, judged_at
from rushhour.experiments.kubernetes.objects import (
    CHAOS_LABEL,
    CORDONED_BY,
    DEFAULT_NAMESPACE,
    SCALED_FROM,
    lease_expiry,
    lease_patch,
    restore_patch,
    uncordon_patch,
)
from rushhour.experiments.kubernetes.selection import LEASE_JOB_LABEL, deadline_patch
from rushhour.experiments.leasefiles import lease_clock

__all__ = ["Leftover", "audit_namespace", "job_lease_end", "keep_swept", "keeper_secrets", "lease_jobs", "partition_renewer",
           "renewer", "restore_count", "sweep"]

CHECK_EVERY_S = 2.0
MAX_BACKOFF_S = 30.0
RETRY_FOR_S = 3600.0  # an API out for longer is left to the in-cluster sweeper
FILE_KEYS = ("KUBERNETES_CA_CERT_FILE", "KUBERNETES_CERT_FILE", "KUBERNETES_KEY_FILE")
"""The entries chaostoolkit-kubernetes reads as file paths (relative to the folder it runs in)."""


@dataclass(frozen=True)
class Leftover:
    """One object of ours found in the cluster, and whether the sweep removed it."""

    kind: str
    name: str
    expires_at: float | None
    removed: bool


def _apis(secrets: Secrets) -> tuple[Any, Any, Any]:
    """The APIs a sweep calls: through chaostoolkit-kubernetes's client, or, where `secrets` name a
    `KUBECONFIG` file (the leak audit's, from a chaos entry's `env:`) or the environment names one
    that exists (a keeper's, from `keeper_secrets`), through that file."""
    from chaosk8s import create_k8s_api_client
    from kubernetes import client, config

    given = dict(secrets or {})
    kubeconfig = given.get("KUBECONFIG") or _present_kubeconfig()
    context = given.get("KUBERNETES_CONTEXT") or os.environ.get("KUBERNETES_CONTEXT")
    api = (config.new_client_from_config(config_file=str(kubeconfig), context=context, persist_config=False)
           if kubeconfig else create_k8s_api_client(secrets))
    return client.NetworkingV1Api(api), client.CoreV1Api(api), client.AppsV1Api(api)


def _present_kubeconfig() -> str | None:
    """The environment's `KUBECONFIG` when one of its files exists (read here, not when the
    Kubernetes client was imported); None otherwise, and the client looks elsewhere."""
    named = os.environ.get("KUBECONFIG", "")
    parts = [Path(part).expanduser() for part in named.split(os.pathsep) if part.strip()]
    return named if any(part.is_file() for part in parts) else None


def sweep(ns: str = DEFAULT_NAMESPACE, now: float | None = None, networking: Any = None, core: Any = None,
          apps: Any = None, batch: Any = None, configuration: Configuration = None,
          secrets: Secrets = None, expired: Judge | None = None) -> list[dict[str, Any]]:
    """Remove rushhour's expired NetworkPolicies in `ns`, delete its lease Jobs whose deadline has
    passed (the garbage collector then deletes the policy each owns), uncordon its expired cordons
    and scale back its expired scale-downs; return every object of ours found, removed or not
    (removed: True when the sweep did it).

    ns: the namespace rushhour runs in.
    now: the time to judge leases by (epoch seconds; default now).
    expired: judges each lease instead (a keeper's `SteadyLeases`); `now` is then not used.
    """
    judge = expired or judged_at(time.time() if now is None else float(now))
    if networking is None or core is None:
        networking, core, apps = _apis(secrets)
        batch = _batch_beside(networking)
    found: list[Leftover] = [] if apps is None else _sweep_deployments(apps, ns, judge)
    for policy in networking.list_namespaced_network_policy(ns, label_selector=CHAOS_LABEL).items:
        expires_at = lease_expiry(policy.metadata.annotations)
        name = f"{ns}/{policy.metadata.name}"
        if removed := judge("NetworkPolicy", name, expires_at):
            networking.delete_namespaced_network_policy(policy.metadata.name, ns)
        found.append(Leftover("NetworkPolicy", name, expires_at, removed))
    if batch is not None:
        found.extend(_sweep_lease_jobs(batch, ns, judge))
    for node in core.list_node().items:
        annotations = node.metadata.annotations or {}
        if CORDONED_BY not in annotations:
            continue
        expires_at = lease_expiry(annotations)
        if removed := judge("Node", node.metadata.name, expires_at):
            core.patch_node(node.metadata.name, uncordon_patch())
        found.append(Leftover("Node", node.metadata.name, expires_at, removed))
    return [asdict(item) for item in found]


def lease_jobs(ns: str = DEFAULT_NAMESPACE, networking: Any = None, batch: Any = None,
               secrets: Secrets = None) -> list[dict[str, Any]]:
    """rushhour's lease Jobs in `ns` (the `rushhour.io/lease-of` label), each with the partition
    NetworkPolicy it was made for and whether that policy is still there (`policy_present`). A
    lease Job outlives its drill only until its deadline; the leak audit reports each one left."""
    if networking is None or batch is None:
        networking, _, _ = _apis(secrets)
        batch = _batch_beside(networking)
    found = []
    for job in batch.list_namespaced_job(ns, label_selector=LEASE_JOB_LABEL).items:
        name = job.metadata.name
        policy = str((job.metadata.labels or {}).get(LEASE_JOB_LABEL) or name)
        found.append({"kind": "Job", "name": f"{ns}/{name}", "policy": policy,
                      "policy_present": _policy_present(networking, policy, ns)})
    return found


def audit_namespace(ns: str, secrets: Secrets = None, now: float | None = None
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The leak audit's look at `ns` through one client: the `sweep` (expired objects removed, a
    lease Job among them; leases judged at `now`, default now) and the `lease_jobs` left there,
    each reported once."""
    networking, core, apps = _apis(secrets)
    batch = _batch_beside(networking)
    swept = sweep(ns, now, networking=networking, core=core, apps=apps, batch=batch)
    return ([item for item in swept if item["kind"] != "Job" or item["removed"]],
            lease_jobs(ns, networking=networking, batch=batch))


def _sweep_lease_jobs(batch: Any, ns: str, judge: Judge) -> list[Leftover]:
    """Delete rushhour's lease Jobs in `ns` whose deadline has passed: a Job the cluster has not
    ended and deleted by itself (no TTL controller, or one that lags) and that still owns its
    partition policy. Background propagation has the garbage collector delete the policy too."""
    found = []
    for job in batch.list_namespaced_job(ns, label_selector=LEASE_JOB_LABEL).items:
        name = str(job.metadata.name)
        ends_at = job_lease_end(job)
        if removed := judge("Job", f"{ns}/{name}", ends_at):
            _delete_job(batch, name, ns)
        found.append(Leftover("Job", f"{ns}/{name}", ends_at, removed))
    return found


def job_lease_end(job: Any) -> float | None:
    """When a lease Job's deadline passes (epoch seconds): its start plus `activeDeadlineSeconds`;
    None when it has no deadline that can be read (a mangled lease counts as expired)."""
    deadline = getattr(getattr(job, "spec", None), "active_deadline_seconds", None)
    moment = _start_moment(job)
    if not isinstance(deadline, int) or isinstance(deadline, bool) or moment is None:
        return None
    return moment.timestamp() + deadline


def _delete_job(batch: Any, name: str, ns: str) -> None:
    """Delete a lease Job and, through the garbage collector, what it owns; one already gone is fine."""
    from kubernetes.client.rest import ApiException

    try:
        batch.delete_namespaced_job(name, ns, propagation_policy="Background")
    except ApiException as exc:
        if exc.status != 404:
            raise


def _batch_beside(networking: Any) -> Any:
    """The BatchV1 API on the client `networking` uses; a stand-in API object that answers every
    group itself (no `api_client`) is its own."""
    api_client = getattr(networking, "api_client", None)
    if api_client is None:
        return networking
    from kubernetes import client

    return client.BatchV1Api(api_client)


def _policy_present(networking: Any, name: str, ns: str) -> bool:
    from kubernetes.client.rest import ApiException

    try:
        networking.read_namespaced_network_policy(name, ns)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def _sweep_deployments(apps: Any, ns: str, judge: Judge) -> list[Leftover]:
    found = []
    for deployment in apps.list_namespaced_deployment(ns).items:
        annotations = deployment.metadata.annotations or {}
        if SCALED_FROM not in annotations:
            continue
        expires_at = lease_expiry(annotations)
        name = f"{ns}/{deployment.metadata.name}"
        if removed := judge("Deployment", name, expires_at):
            apps.patch_namespaced_deployment(deployment.metadata.name, ns, restore_patch(restore_count(annotations)))
        found.append(Leftover("Deployment", name, expires_at, removed))
    return found


def restore_count(annotations: dict[str, str]) -> int:
    """The replica count a Deployment rushhour scaled down goes back to, from its mark."""
    try:
        return max(0, int(annotations[SCALED_FROM]))
    except ValueError:
        return 1  # a mangled mark: at least one replica back rather than none


def keep_swept(ns: str = DEFAULT_NAMESPACE, after_s: float = 0.0, *, clock: Any = time.time, sleep: Any = time.sleep,
               sweeper: Any = None, log: Any = None, steady: Any = lease_clock) -> str:
    """The lease keeper of the Kubernetes faults: sweep every few seconds until nothing of
    rushhour's is left in `ns` once something was (renewed leases are honoured by the sweep);
    if nothing ever appears within `after_s` (the injection failed), stop. "healed" when it
    undid something itself, "undone" when the rollback did, "gave up" when the API failed for
    `RETRY_FOR_S` on end.

    Each lease is counted down on `steady` (the boot clock) from the first time the keeper sees
    it, against `clock` (the wall clock the leases are written on) only then
    (`rushhour.experiments.kubernetes.leaseclock`), and so are the keeper's own waits: a wall clock
    stepped back does not extend a fault. The cluster's credentials come from the environment (see
    `keeper_secrets`). An API error is logged and the sweep tried again after 2, 4, 8... s (at most
    `MAX_BACKOFF_S`).
    """
    say = log or _log
    leases = SteadyLeases(wall=clock, steady=steady)

    def steady_sweep() -> list[dict[str, Any]]:
        found = sweep(ns, expired=leases.look())
        leases.settled()
        return found

    sweeper = sweeper or steady_sweep
    give_up, seen, healed = steady() + after_s, False, False
    failing_since: float | None = None
    backoff = CHECK_EVERY_S
    while True:
        try:
            found = sweeper()
        except Exception as exc:  # noqa: BLE001 - an API error is retried; the keeper must outlive it
            now = steady()
            failing_since = now if failing_since is None else failing_since
            if now - failing_since >= RETRY_FOR_S:
                say(f"the Kubernetes API failed for {now - failing_since:.0f} s; giving up ({exc})")
                return "gave up"
            say(f"sweep of namespace {ns} failed ({type(exc).__name__}: {exc}); retrying in {backoff:g} s")
            sleep(backoff)
            backoff = min(MAX_BACKOFF_S, backoff * 2)
            continue
        failing_since, backoff = None, CHECK_EVERY_S
        for item in found:
            if item["removed"]:
                say(f"lease of {item['kind']} {item['name']} expired: undone")
        healed = healed or any(item["removed"] for item in found)
        if any(not item["removed"] for item in found):
            seen = True
        elif seen or found or steady() >= give_up:
            return "healed" if healed else "undone"
        sleep(CHECK_EVERY_S)


def keeper_secrets(secrets: Secrets) -> dict[str, str]:
    """What a keeper needs to reach its experiment's cluster with the credentials the fault was
    made with, as strings for its environment. chaostoolkit-kubernetes reads the kubeconfig from
    `KUBECONFIG` (else `~/.kube/config`), and `KUBERNETES_CONTEXT` and the other `KUBERNETES_*`
    entries from the experiment's `secrets`, else the environment; it reads no credentials from
    the experiment's `configuration`. The keeper inherits the environment, so it is handed the
    `secrets`' `KUBERNETES_*` entries (its client then finds them when given none) and, since the
    experiment runs in its own folder and the keeper does not, every file those name made
    absolute: `KUBECONFIG`'s files and the certificate and key files (`FILE_KEYS`), from the
    secrets or the environment."""
    given = {str(k): str(v) for k, v in (secrets or {}).items() if str(k).startswith("KUBERNETES_")}
    for key in FILE_KEYS:
        named = given.get(key) or os.environ.get(key, "")
        if named.strip():
            given[key] = _absolute(named)
    kubeconfig = os.environ.get("KUBECONFIG", "")
    files = [_absolute(part) for part in kubeconfig.split(os.pathsep) if part.strip()]
    if files:
        given["KUBECONFIG"] = os.pathsep.join(files)
    return given


def _absolute(path: str) -> str:
    return str(Path(path).expanduser().absolute())


def _log(message: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(f"{stamp} lease keeper: {message}", file=sys.stderr, flush=True)


def renewer(patch: Any, read: Any) -> Any:
    """A renew function for `rushhour.experiments.leases.hold_lease`: moves the object's lease end
    `seconds` ahead while it still carries rushhour's lease (`read()` gives its annotations);
    False once it does not (undone)."""

    def renew(seconds: float) -> bool:
        if lease_expiry(read()) is None:
            return False
        patch(lease_patch(time.time() + seconds))
        return True

    return renew


def partition_renewer(networking: Any, batch: Any, name: str, ns: str) -> Any:
    """A renew function for a partition owned by its lease Job (see
    `rushhour.experiments.kubernetes.selection`): moves the Job's deadline and the policy's mark;
    False once the policy carries no lease (undone)."""
    mark = renewer(lambda body: networking.patch_namespaced_network_policy(name, ns, body),
                   lambda: dict(networking.read_namespaced_network_policy(name, ns).metadata.annotations or {}))

    def renew(seconds: float) -> bool:
        job = batch.read_namespaced_job(name, ns)
        batch.patch_namespaced_job(name, ns, deadline_patch(_started(job), time.time(), seconds))
        return bool(mark(seconds))

    return renew


def _started(job: Any) -> float:
    """When the Job's deadline started counting, else now."""
    moment = _start_moment(job)
    return moment.timestamp() if moment is not None else time.time()


def _start_moment(job: Any) -> datetime | None:
    """When a Job's deadline starts counting: its start; its creation before the controller saw it."""
    status, metadata = getattr(job, "status", None), getattr(job, "metadata", None)
    moment = getattr(status, "start_time", None) or getattr(metadata, "creation_timestamp", None)
    return moment if isinstance(moment, datetime) else None
