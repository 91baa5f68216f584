"""A user's workload as the Kubernetes faults select it: a namespace and a label selector.

Pure builders, apart from any API call: the selector parsed into the form a NetworkPolicy's
`podSelector` takes, the partition policy that cuts the selected pods off the network, and the
*lease Job* that owns it. Kubernetes has no TTL for a NetworkPolicy, but it has one for a Job:
a Job with `activeDeadlineSeconds` fails when its deadline passes, `ttlSecondsAfterFinished: 0`
has the TTL controller delete it then, and the garbage collector deletes every object whose
`ownerReferences` name it. So a policy owned by the lease Job goes away with the Job, whoever is
left to delete it; renewing the lease moves the Job's deadline.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

from rushhour.experiments.kubernetes.objects import APP_LABEL, CHAOS_LABEL, LEASE_ANNOTATION

__all__ = [
    "LEASE_IMAGE",
    "LEASE_JOB_LABEL",
    "deadline_patch",
    "lease_job",
    "owned_partition",
    "owner_reference",
    "parse_selector",
    "partition_name",
]

LEASE_IMAGE = "registry.k8s.io/pause:3.10"  # does nothing until the Job's deadline ends it
LEASE_JOB_LABEL = "rushhour.io/lease-of"
_KEY = r"(?:[a-z0-9A-Z][-a-z0-9A-Z_.]*/)?[a-z0-9A-Z](?:[-a-z0-9A-Z_.]*[a-z0-9A-Z])?"
_VALUE = r"(?:[a-z0-9A-Z](?:[-a-z0-9A-Z_.]*[a-z0-9A-Z])?)?"
_EQUAL = re.compile(rf"^({_KEY})\s*(==|=|!=)\s*({_VALUE})$")
_EXISTS = re.compile(rf"^(!?)\s*({_KEY})$")
_SET = re.compile(rf"^({_KEY})\s+(in|notin)\s+\(([^()]*)\)$")


def parse_selector(label_selector: str) -> dict[str, Any]:
    """A label selector string ("app=web,tier!=cache,env in (prod,canary)") as a LabelSelector
    object (`matchLabels`, `matchExpressions`); raises ValueError naming the part it cannot read.

    An empty selector is refused: on a NetworkPolicy it would select every pod of the namespace.
    """
    text = (label_selector or "").strip()
    if not text:
        raise ValueError("The label selector is empty; it would select every pod of the namespace. "
                         'Write the workload\'s labels, e.g. "app=web".')
    labels: dict[str, str] = {}
    expressions: list[dict[str, Any]] = []
    for part in _split(text):
        if match := _EQUAL.match(part):
            key, op, value = match.groups()
            if op == "!=":
                expressions.append({"key": key, "operator": "NotIn", "values": [value]})
            else:
                labels[key] = value
        elif match := _SET.match(part):
            key, op, values = match.groups()
            items = [v.strip() for v in values.split(",") if v.strip()]
            expressions.append({"key": key, "operator": "In" if op == "in" else "NotIn", "values": items})
        elif match := _EXISTS.match(part):
            expressions.append({"key": match.group(2), "operator": "DoesNotExist" if match.group(1) else "Exists"})
        else:
            raise ValueError(f'Cannot read "{part}" in the label selector "{label_selector}".')
    selector: dict[str, Any] = {}
    if labels:
        selector["matchLabels"] = labels
    if expressions:
        selector["matchExpressions"] = expressions
    return selector


def _split(text: str) -> list[str]:
    """Split on the commas between requirements, not those inside "in (a,b)"."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return parts


def partition_name(label_selector: str) -> str:
    """The name of the partition of one selector: the same selector always names the same
    policy and lease Job, so a rollback finds what the action made."""
    digest = hashlib.sha256(label_selector.strip().encode()).hexdigest()[:10]
    return f"rushhour-partition-{digest}"


def lease_job(name: str, namespace: str, lease_s: float, *, image: str = LEASE_IMAGE) -> dict[str, Any]:
    """The Job whose life is the lease: it fails `lease_s` after it starts, and the TTL controller
    deletes it at once (taking what it owns with it)."""
    labels = {APP_LABEL: "rushhour", LEASE_JOB_LABEL: name}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "activeDeadlineSeconds": _seconds(lease_s),
            "ttlSecondsAfterFinished": 0,
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "lease", "image": image,
                                    "resources": {"requests": {"cpu": "1m", "memory": "8Mi"},
                                                  "limits": {"cpu": "10m", "memory": "16Mi"}}}],
                },
            },
        },
    }


def owner_reference(job_name: str, job_uid: str) -> dict[str, Any]:
    """An ownerReference to the lease Job: when the Job is deleted, the garbage collector deletes
    the owned object."""
    return {"apiVersion": "batch/v1", "kind": "Job", "name": job_name, "uid": job_uid,
            "blockOwnerDeletion": False, "controller": False}


def owned_partition(name: str, namespace: str, label_selector: str, *, owner: dict[str, Any],
                    expires_at: float) -> dict[str, Any]:
    """A deny-all NetworkPolicy (no ingress, no egress) on the pods `label_selector` selects,
    owned by the lease Job and marked with the lease's end, as the sweep reads it."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {APP_LABEL: "rushhour", CHAOS_LABEL: "partition"},
            "annotations": {LEASE_ANNOTATION: f"{float(expires_at):.3f}"},
            "ownerReferences": [owner],
        },
        "spec": {"podSelector": parse_selector(label_selector), "policyTypes": ["Ingress", "Egress"],
                 "ingress": [], "egress": []},
    }


def deadline_patch(started_at: float, now: float, lease_s: float) -> dict[str, Any]:
    """Merge patch that renews the lease Job: its deadline (counted from the Job's start) moved
    to `lease_s` from `now`."""
    return {"spec": {"activeDeadlineSeconds": _seconds(max(0.0, now - started_at) + lease_s)}}


def _seconds(value: float) -> int:
    seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"A lease must be a positive number of seconds, not {value!r}.")
    return max(1, math.ceil(seconds))
