"""A fake Kubernetes API with the few controllers the faults' healing relies on.

It answers the official client's calls the Kubernetes actions, the sweep and the keeper make
(CoreV1, AppsV1, NetworkingV1, BatchV1 in one object), applies merge patches, and on `advance`
runs what the control plane would: a Deployment's controller keeps as many of its pods as it has
replicas (a new pod on the first schedulable node), a Job past its `activeDeadlineSeconds` fails,
the TTL controller deletes a finished Job after `ttlSecondsAfterFinished` (unless
`ttl_controller = False`: a cluster where it is off or lags), and the garbage collector deletes
every object whose owner is gone. `down = True` is an API outage: every call raises a
503 and no controller runs (they talk to the same API server).
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from kubernetes.client.rest import ApiException

__all__ = ["NS", "WEB", "FakeKube", "keeper_on", "sweeper_of", "workload_cluster"]

WEB = "app=web"
NS = "shop"


def _meta(name: str, **extra: Any) -> SimpleNamespace:
    return SimpleNamespace(name=name, annotations=extra.pop("annotations", None) or {},
                           labels=extra.pop("labels", None) or {}, **extra)


def _merge_annotations(obj: SimpleNamespace, patch: dict[str, Any]) -> None:
    for key, value in ((patch.get("metadata") or {}).get("annotations") or {}).items():
        if value is None:
            obj.metadata.annotations.pop(key, None)
        else:
            obj.metadata.annotations[key] = value


def _matches(labels: dict[str, str], selector: str | None) -> bool:
    """Equality selectors only ("a=b,c=d"): all the fake needs."""
    wanted = dict(part.split("=", 1) for part in (selector or "").split(",") if "=" in part)
    return all(labels.get(k) == v for k, v in wanted.items())


class FakeKube:
    """Nodes, and the pods, Deployments, NetworkPolicies and Jobs of namespaces (NS unless told):
    a namespaced list answers only that namespace's objects."""

    def __init__(self, now: float) -> None:
        self.now = now
        self.down = False
        self.ttl_controller = True
        self.nodes: dict[str, SimpleNamespace] = {}
        self.pods: list[SimpleNamespace] = []
        self.deployments: dict[str, SimpleNamespace] = {}
        self.policies: dict[str, SimpleNamespace] = {}
        self.jobs: dict[str, SimpleNamespace] = {}
        self.log: list[str] = []
        self.keeper_secrets: list[dict[str, str]] = []  # what the keepers were handed (tests fill it)
        self._uids = itertools.count(1)

    # -- building the cluster --------------------------------------------------------------
    def add_node(self, name: str, *, cordoned: bool = False) -> None:
        self.nodes[name] = SimpleNamespace(metadata=_meta(name), spec=SimpleNamespace(unschedulable=cordoned))

    def add_pod(self, name: str, node: str, labels: dict[str, str], ns: str = NS) -> None:
        ready = SimpleNamespace(conditions=[SimpleNamespace(type="Ready", status="True")])
        self.pods.append(SimpleNamespace(metadata=_meta(name, labels=labels, namespace=ns),
                                         spec=SimpleNamespace(node_name=node), status=ready))

    def add_deployment(self, name: str, replicas: int, labels: dict[str, str], ns: str = NS,
                       annotations: dict[str, str] | None = None) -> None:
        self.deployments[name] = SimpleNamespace(metadata=_meta(name, labels=labels, namespace=ns, annotations=annotations),
                                                 spec=SimpleNamespace(replicas=replicas))

    # -- the control plane -------------------------------------------------------------------
    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.reconcile()

    def reconcile(self) -> None:
        if self.down:
            return
        self._replicate()
        for name, job in list(self.jobs.items()):
            deadline = job.spec.active_deadline_seconds
            if job.status.failed_at is None and deadline is not None \
                    and self.now >= job.status.start_time.timestamp() + deadline:
                job.status.failed_at = self.now
                self.log.append(f"job {name} failed: DeadlineExceeded")
            finished = job.status.failed_at is not None and self.ttl_controller
            if finished and self.now >= job.status.failed_at + job.spec.ttl_seconds_after_finished:
                del self.jobs[name]
                self.log.append(f"job {name} deleted by the TTL controller")
        live = {job.metadata.uid for job in self.jobs.values()}
        for name, policy in list(self.policies.items()):
            owners = policy.metadata.owner_references
            if owners and not any(owner["uid"] in live for owner in owners):
                del self.policies[name]
                self.log.append(f"policy {name} deleted by the garbage collector")

    def _replicate(self) -> None:
        for name, deployment in self.deployments.items():
            labels = deployment.metadata.labels
            mine = [p for p in self.pods if p.metadata.labels == labels]
            for pod in mine[deployment.spec.replicas:]:
                self.pods.remove(pod)
                self.log.append(f"pod {pod.metadata.name} removed by the ReplicaSet controller")
            for _ in range(deployment.spec.replicas - len(mine)):
                node = next(n for n in sorted(self.nodes) if not self.nodes[n].spec.unschedulable)
                self.add_pod(f"{name}-{next(self._uids)}", node, dict(labels), deployment.metadata.namespace)
                self.log.append(f"pod {self.pods[-1].metadata.name} started by the ReplicaSet controller on {node}")

    def _api(self) -> None:
        if self.down:
            raise ApiException(status=503, reason="Service Unavailable")

    # -- CoreV1 --------------------------------------------------------------------------------
    def list_node(self, label_selector: str = "") -> SimpleNamespace:
        self._api()
        return SimpleNamespace(items=list(self.nodes.values()))

    def read_node(self, name: str) -> SimpleNamespace:
        self._api()
        return self.nodes[name]

    def patch_node(self, name: str, body: dict[str, Any]) -> None:
        self._api()
        node = self.nodes[name]
        _merge_annotations(node, body)
        if "unschedulable" in (body.get("spec") or {}):
            node.spec.unschedulable = body["spec"]["unschedulable"]
            self.log.append(f"{'cordon' if node.spec.unschedulable else 'uncordon'} {name}")

    def list_namespaced_pod(self, ns: str, label_selector: str = "") -> SimpleNamespace:
        self._api()
        return SimpleNamespace(items=[p for p in self.pods if p.metadata.namespace == ns
                                      and _matches(p.metadata.labels, label_selector)])

    def delete_namespaced_pod(self, name: str, ns: str, body: Any = None) -> None:
        self._api()
        before = len(self.pods)
        self.pods = [p for p in self.pods if p.metadata.name != name]
        if len(self.pods) == before:
            raise ApiException(status=404, reason="Not Found")
        self.log.append(f"pod {name} deleted")

    # -- AppsV1 --------------------------------------------------------------------------------
    def list_namespaced_deployment(self, ns: str, label_selector: str | None = None) -> SimpleNamespace:
        self._api()
        return SimpleNamespace(items=[d for d in self.deployments.values() if d.metadata.namespace == ns
                                      and _matches(d.metadata.labels, label_selector)])

    def read_namespaced_deployment(self, name: str, ns: str) -> SimpleNamespace:
        self._api()
        return self.deployments[name]

    def patch_namespaced_deployment(self, name: str, ns: str, body: dict[str, Any]) -> None:
        self._api()
        deployment = self.deployments[name]
        _merge_annotations(deployment, body)
        if "replicas" in (body.get("spec") or {}):
            deployment.spec.replicas = body["spec"]["replicas"]
            self.log.append(f"scale {name} {deployment.spec.replicas}")

    # -- NetworkingV1 --------------------------------------------------------------------------
    def create_namespaced_network_policy(self, ns: str, body: dict[str, Any]) -> None:
        self._api()
        meta = body["metadata"]
        self.policies[meta["name"]] = SimpleNamespace(
            metadata=_meta(meta["name"], annotations=dict(meta.get("annotations") or {}), labels=dict(meta.get("labels") or {}),
                           owner_references=list(meta.get("ownerReferences") or []), namespace=ns), spec=body["spec"])
        self.log.append(f"policy {meta['name']} created")

    def list_namespaced_network_policy(self, ns: str, label_selector: str = "") -> SimpleNamespace:
        self._api()
        key = label_selector.split("=")[0]
        return SimpleNamespace(items=[p for p in self.policies.values() if p.metadata.namespace == ns
                                      and key in p.metadata.labels])

    def read_namespaced_network_policy(self, name: str, ns: str) -> SimpleNamespace:
        self._api()
        if name not in self.policies:
            raise ApiException(status=404, reason="Not Found")
        return self.policies[name]

    def patch_namespaced_network_policy(self, name: str, ns: str, body: dict[str, Any]) -> None:
        self._api()
        _merge_annotations(self.policies[name], body)

    def delete_namespaced_network_policy(self, name: str, ns: str) -> None:
        self._api()
        if self.policies.pop(name, None) is None:
            raise ApiException(status=404, reason="Not Found")
        self.log.append(f"policy {name} deleted")

    # -- BatchV1 -------------------------------------------------------------------------------
    def create_namespaced_job(self, ns: str, body: dict[str, Any]) -> SimpleNamespace:
        self._api()
        name, spec = body["metadata"]["name"], body["spec"]
        job = SimpleNamespace(
            metadata=_meta(name, uid=f"uid-{next(self._uids)}", labels=dict(body["metadata"].get("labels") or {}),
                           namespace=ns, creation_timestamp=datetime.fromtimestamp(self.now, UTC)),
            spec=SimpleNamespace(active_deadline_seconds=spec["activeDeadlineSeconds"],
                                 ttl_seconds_after_finished=spec["ttlSecondsAfterFinished"]),
            status=SimpleNamespace(start_time=datetime.fromtimestamp(self.now, UTC), failed_at=None), body=body)
        self.jobs[name] = job
        self.log.append(f"job {name} created")
        return job

    def list_namespaced_job(self, ns: str, label_selector: str = "") -> SimpleNamespace:
        """The Jobs of `ns` carrying every label key `label_selector` names (keys only: all the fake needs)."""
        self._api()
        keys = [key for key in label_selector.split(",") if key]
        return SimpleNamespace(items=[job for job in self.jobs.values()
                                      if job.metadata.namespace == ns
                                      and all(key in job.metadata.labels for key in keys)])

    def read_namespaced_job(self, name: str, ns: str) -> SimpleNamespace:
        self._api()
        if name not in self.jobs:
            raise ApiException(status=404, reason="Not Found")
        return self.jobs[name]

    def patch_namespaced_job(self, name: str, ns: str, body: dict[str, Any]) -> None:
        self._api()
        self.jobs[name].spec.active_deadline_seconds = body["spec"]["activeDeadlineSeconds"]

    def delete_namespaced_job(self, name: str, ns: str, propagation_policy: str = "Background") -> None:
        self._api()
        if self.jobs.pop(name, None) is None:
            raise ApiException(status=404, reason="Not Found")
        self.log.append(f"job {name} deleted")
        self.reconcile()  # background propagation: the garbage collector follows


def workload_cluster(monkeypatch: Any) -> FakeKube:
    """Nodes a and b, and c under an operator's cordon; Deployments web (3 pods, app=web, one on each
    node) and db (1 pod); the workload actions pointed at it, their keeper recorded, not started."""
    import time

    from rushhour.experiments import leases
    from rushhour.experiments.kubernetes import marked, workload

    fake = FakeKube(now=time.time())
    for name in ("node-a", "node-b"):
        fake.add_node(name)
    fake.add_node("node-c", cordoned=True)  # an operator's cordon: never ours
    for pod, node in (("web-1", "node-a"), ("web-2", "node-b"), ("web-3", "node-c")):
        fake.add_pod(pod, node, {"app": "web"})
    fake.add_pod("db-1", "node-b", {"app": "db"})
    fake.add_deployment("web", 3, {"app": "web"})
    fake.add_deployment("db", 1, {"app": "db"})
    monkeypatch.setattr(workload, "_apis", lambda secrets: workload.Apis(fake, fake, fake, fake))
    monkeypatch.setattr(marked, "create_network_policy",
                        lambda spec, ns, secrets: fake.create_namespaced_network_policy(ns, spec))
    monkeypatch.setattr(workload, "drain_nodes", lambda name, timeout, secrets: fake.log.append(f"drain {name}"))

    def spawn_keeper(undo: str, after: float, args: dict[str, Any], secrets: dict[str, str] | None = None) -> int:
        fake.log.append(f"keeper {args['ns']}")
        fake.keeper_secrets.append(dict(secrets or {}))
        return 4242

    monkeypatch.setattr(marked, "spawn_keeper", spawn_keeper)
    monkeypatch.delenv(leases.LEASE_ENV, raising=False)
    return fake


def sweeper_of(kube: FakeKube) -> Any:
    """The sweep of namespace `ns` (default NS) on the fake cluster, judged by its clock."""
    from rushhour.experiments.kubernetes import leases as kleases

    return lambda ns=NS: kleases.sweep(ns, now=kube.now, networking=kube, core=kube, apps=kube, batch=kube)


def keeper_on(kube: FakeKube, messages: list[str] | None = None) -> str:
    """The harness-side keeper, on the fake cluster's clock (each of its waits advances it), its wall clock
    and its steady clock alike."""
    from rushhour.experiments.kubernetes import leases as kleases

    return kleases.keep_swept(NS, after_s=60, clock=lambda: kube.now, sleep=kube.advance, sweeper=sweeper_of(kube),
                              log=(messages.append if messages is not None else lambda m: None),
                              steady=lambda: kube.now)
