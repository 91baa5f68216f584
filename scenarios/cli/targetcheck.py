"""`rushhour run`'s look at the target before anything starts: protocol notes, then the probe.

Planning-time notes (fields the protocol cannot send, features it cannot serve) come first and
need no network; then, for a target given by URL, one real request (`scenarios.protocols.probe`).
Anything that does not fit ends the command with exit 2 before a process is started. The
embedded server is probed by the drill itself once it has booted.
"""

from __future__ import annotations

from collections.abc import Callable

from scenarios.cli.errors import BadInput
from scenarios.protocols.credentials import describe_auth
from scenarios.protocols.features import (
    UnsupportedFeature,
    apply_missing,
    protocol_notes,
    unserved_features,
)
from scenarios.protocols.probe import ProbeError, probe_target
from scenarios.spec.plan import DrillPlan

Echo = Callable[[str], None]


def describe_target(plan: DrillPlan) -> list[str]:
    """The protocol lines of the dry run (the credential masked)."""
    t = plan.scenario.target
    lines = [f"protocol   {t.protocol}" + (f", model {t.model}" if t.model else "")
             + (", streaming" if t.protocol == "openai-chat" and t.stream else "")]
    lines.append(f"auth       {describe_auth(t.auth)}")
    if t.ca_bundle:
        lines.append(f"ca bundle  {t.ca_bundle}")
    return lines


def check_target(plan: DrillPlan, *, say: Echo, probe: bool = True) -> DrillPlan:
    """The plan with unsupported features refused or switched off; probes a URL target (exit 2 on a misfit)."""
    try:
        plan, notes = protocol_notes(plan)
    except UnsupportedFeature as exc:
        raise BadInput(str(exc)) from exc
    for note in notes:
        say(note)
    url = plan.scenario.target.url
    if url is None or not probe:
        return plan
    wanted = tuple(unserved_wanted(plan))
    try:
        report = probe_target(url, plan.scenario.target, features=wanted)
    except ProbeError as exc:
        raise BadInput(f"{plan.source}: target: the capability probe failed: {exc}") from exc
    say(report.line())
    missing = [f for f in wanted if f not in report.features]
    try:
        plan, warnings = apply_missing(plan, missing, why=f'the target at {url} does not serve it')
    except UnsupportedFeature as exc:
        raise BadInput(str(exc)) from exc
    for warning in warnings:
        say(warning)
    return plan


def unserved_wanted(plan: DrillPlan) -> list[str]:
    """Features the scenario uses that the protocol has, so the target must be asked for them."""
    s = plan.scenario
    wanted = []
    if s.load.documents_via_jobs and s.load.mode == "open":
        wanted.append("jobs")
    if any(c.in_run for c in plan.chaos):
        wanted.append("admin")
    return [f for f in wanted if f not in unserved_features(plan)]
