"""The drill's two leak-audit steps: the target (before the server stops) and the leftovers after.

`audit_target` runs once the chaos timeline has stopped (its rollbacks done) and while the server
is still up; `audit_leftovers` runs after the server is stopped, when no process of the run
should be alive any more. Both only add to the drill's `LeakAudit`; see `rushhour.scenarios.run.audit.leakaudit`.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from rushhour.scenarios.run.audit.leakaudit import (
    LeakAudit,
    kubernetes_findings,
    process_findings,
    redis_findings,
    settle,
    target_findings,
)
from rushhour.scenarios.run.audit.ledger import ProcessLedger
from rushhour.scenarios.run.audit.scope import leak_scope
from rushhour.scenarios.spec.plan import DrillPlan

__all__ = ["WAIT_ENV", "audit_leftovers", "audit_target"]

TARGET_WAIT_S = 20.0
PROCESS_WAIT_S = 10.0
WAIT_ENV = "RUSHHOUR_AUDIT_WAIT_S"


def _wait_s() -> float:
    """How long the audit lets a rollback settle (a node restarting); RUSHHOUR_AUDIT_WAIT_S."""
    try:
        return max(0.0, float(os.environ.get(WAIT_ENV, TARGET_WAIT_S)))
    except ValueError:
        return TARGET_WAIT_S


def audit_target(audit: LeakAudit, plan: DrillPlan, *, url: str | None, heal: Callable[[], bool] | None = None) -> None:
    """Faults and nodes on the target, the scenario's Redis and Kubernetes objects.
    `url` is None when no chaos ran: then nothing on the target can have been broken by us.
    `heal` (the timeline's `POST /admin/reset`) runs when faults or broken nodes are found."""
    if url is None:
        audit.skip("target", "no chaos experiment ran, so nothing on the target was broken by this drill")
        return
    wait_s = _wait_s()
    if target_findings(url) is None:
        audit.skip("target", f"{url} has no /v1/status (not the reference server); faults and nodes unchecked")
    else:
        found = settle(lambda: target_findings(url) or [], wait_s=wait_s)
        audit.add("target", found)
        if heal is not None and any(f.kind in ("fault", "node") for f in found):
            sent = heal()
            audit.actions.append(f"POST {url}/admin/reset after the audit: {'healed' if sent else 'failed'}.")
    scope = leak_scope([fault for fault in plan.chaos if fault.in_run])
    if scope.redis_ports:
        audit.add("redis", settle(lambda: redis_findings(scope.redis_ports), wait_s=wait_s))
    if scope.kubernetes:
        audit.add("kubernetes", kubernetes_findings(scope.kubernetes))


def audit_leftovers(audit: LeakAudit, ledger: ProcessLedger | None) -> None:
    """Processes of the run still alive once everything was stopped (given a moment to exit)."""
    if ledger is None:
        audit.skip("processes", "the drill started no process")
        return
    audit.add("processes", settle(lambda: process_findings(ledger.alive()), wait_s=PROCESS_WAIT_S))
