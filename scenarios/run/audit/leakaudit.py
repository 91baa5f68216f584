"""The leak audit: at the end of every drill, is anything rushhour broke or started still there?

It looks at what the drill could have left behind: faults still active and nodes not ready on
the target (`/v1/status`), a Redis the scenario stopped, Kubernetes objects rushhour created or
marked in each namespace a fault touched, the user's workload namespace included (expired ones are
swept away on the spot and reported; a partition's lease Job still there is reported too, with or
without its policy), and processes of the run still alive.
Checks that things settle (a node restarting after its rollback) are retried for a bounded
time. The result goes to `leak_audit.json` and the `leak_audit` event, interrupted run or not:

    {"clean": bool, "checked": [check, ...], "skipped": [{"check", "reason"}, ...],
     "findings": [{"kind", "target", "detail"}, ...], "actions": [sentence, ...], "t_s": float}

`kind` is one of fault, node, redis, kubernetes, process, unverified (a check that could not
be done counts against `clean`). `actions` says what the audit did about its findings (a last
`POST /admin/reset` of the target); `clean` stays False: something was left until then.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

from rushhour.scenarios.protocols.admission import admitted_client
from rushhour.scenarios.run.audit.ledger import Tracked
from rushhour.scenarios.run.audit.scope import KubeScope

__all__ = ["AUDIT_FILE", "Finding", "LeakAudit", "kubernetes_findings", "process_findings", "redis_findings",
           "settle", "status_findings", "target_findings"]

AUDIT_FILE = "leak_audit.json"
POLL_S = 1.0

Check = Callable[[], list["Finding"]]


@dataclass(frozen=True)
class Finding:
    kind: str
    target: str
    detail: str


@dataclass
class LeakAudit:
    """Findings gathered check by check; `result` is the record written to the results folder."""

    checked: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)

    def add(self, check: str, findings: Sequence[Finding]) -> None:
        self.checked.append(check)
        self.findings.extend(findings)

    def skip(self, check: str, reason: str) -> None:
        self.skipped.append({"check": check, "reason": reason})

    def result(self, t_s: float | None = None) -> dict[str, Any]:
        return {"clean": not self.findings, "checked": list(self.checked), "skipped": list(self.skipped),
                "findings": [asdict(f) for f in self.findings], "actions": list(self.actions),
                "t_s": None if t_s is None else round(t_s, 3)}


def settle(check: Check, *, wait_s: float, clock: Callable[[], float] = time.monotonic,
           sleep: Callable[[float], None] = time.sleep) -> list[Finding]:
    """Run `check` until it finds nothing or `wait_s` has passed; its last findings."""
    give_up = clock() + wait_s
    while True:
        findings = check()
        if not findings or clock() >= give_up:
            return findings
        sleep(POLL_S)


def status_findings(status: dict[str, Any]) -> list[Finding]:
    """Faults still active and nodes not ready, from one `/v1/status` document."""
    found: list[Finding] = []
    for node in status.get("nodes") or []:
        name = str(node.get("id", "?"))
        for fault in node.get("faults") or []:
            found.append(Finding("fault", name, f'a {fault.get("kind", "?")} fault is still active '
                                                f'(it heals by its lease in {fault.get("expires_in_s", "?")} s).'))
        if node.get("state") != "ready":
            found.append(Finding("node", name, f'the node is "{node.get("state")}", not ready.'))
    if (status.get("cache") or {}).get("l2_available") is False:
        found.append(Finding("redis", "gateway L2 cache", "the gateway cannot reach its Redis (L2 cache)."))
    return found


def target_findings(url: str, *, timeout_s: float = 5.0) -> list[Finding] | None:
    """`status_findings` of the target now; None when it has no `/v1/status` (not our server)."""
    target = url.rstrip("/") + "/v1/status"
    try:
        with admitted_client(timeout=timeout_s) as http:
            response = http.get(target)
    except httpx.HTTPError as exc:
        return [Finding("unverified", url, f"GET {target} failed ({type(exc).__name__}: {exc}), so faults and "
                                           "nodes could not be checked.")]
    if response.status_code == 404:
        return None
    try:
        status = response.json() if response.is_success else None
    except ValueError:
        status = None
    if not isinstance(status, dict):
        return [Finding("unverified", url, f"GET {target} answered {response.status_code} without a status "
                                           "document, so faults and nodes could not be checked.")]
    return status_findings(status)


def process_findings(alive: Sequence[Tracked]) -> list[Finding]:
    return [Finding("process", str(p.pid), f"a process of the run is still alive: {p.command}") for p in alive]


def redis_findings(ports: Sequence[int]) -> list[Finding]:
    from rushhour.experiments.local.redis import redis_running

    return [Finding("redis", f"127.0.0.1:{port}", "Redis is down (the scenario stopped it).")
            for port in ports if not redis_running(port)]


def kubernetes_findings(scopes: Sequence[KubeScope]) -> list[Finding]:
    """rushhour's objects left in each namespace a fault touched (the reference server's or the
    user's workload namespace), asked with the credentials its experiment used; expired ones are
    swept away and still reported."""
    try:
        from rushhour.experiments.kubernetes.leases import audit_namespace
    except ImportError as exc:
        return [Finding("unverified", "kubernetes", f"the Kubernetes client is missing ({exc}).")]
    found: list[Finding] = []
    for scope in scopes:
        ns = scope.namespace
        try:
            leftovers, jobs = audit_namespace(ns, dict(scope.secrets))
        except Exception as exc:  # noqa: BLE001 - any cluster error makes the check unverified
            found.append(Finding("unverified", f"kubernetes:{ns}", f"the cluster could not be checked: {exc}"))
            continue
        for item in leftovers:
            what = ("removed by the audit, its lease had run out" if item["removed"]
                    else f"still there, its lease ends at {item['expires_at']}")
            found.append(Finding("kubernetes", f"{item['kind']} {item['name']}", f"left by rushhour: {what}."))
        found.extend(_lease_job_finding(job) for job in jobs)
    return found


def _lease_job_finding(job: dict[str, Any]) -> Finding:
    """A lease Job still in the cluster: beside its partition policy (reported by the sweep), or without it."""
    policy = (f'its partition NetworkPolicy "{job["policy"]}" is still there' if job["policy_present"]
              else f'without its partition NetworkPolicy "{job["policy"]}"')
    return Finding("kubernetes", f"{job['kind']} {job['name']}",
                   f"left by rushhour: a lease Job, {policy}; it ends at its deadline and the cluster then deletes it.")
