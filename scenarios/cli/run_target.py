"""`rushhour run`'s look at the target before anything starts (`rushhour.scenarios.run.targetcheck`), exit 2 on a misfit.

A target given by URL is probed here, before a process is started; the embedded server is probed
by the drill once it has booted, through the same function, which asks the target admission
(`rushhour.scenarios.protocols.admission`).
"""

from __future__ import annotations

from collections.abc import Callable

from rushhour.scenarios.cli.errors import BadInput
from rushhour.scenarios.run.targetcheck import TargetMisfit, describe_target, fit_protocol, probe_plan
from rushhour.scenarios.spec.plan import DrillPlan

__all__ = ["check_target", "describe_target"]


def check_target(plan: DrillPlan, *, say: Callable[[str], None], probe: bool = True) -> DrillPlan:
    """The plan with unsupported features refused or switched off; probes a URL target (exit 2 on a misfit)."""
    try:
        plan = fit_protocol(plan, say=say)
        url = plan.scenario.target.url
        return probe_plan(plan, url, say=say) if url is not None and probe else plan
    except TargetMisfit as exc:
        raise BadInput(str(exc)) from exc
