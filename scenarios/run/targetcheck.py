"""The look at a drill's target before the load, the same for every kind of target.

First the planning-time notes (fields the protocol cannot send, features it cannot serve), which
need no network; then the target's admission (`rushhour.scenarios.protocols.admission`): one real
request through the scenario's protocol that also asks for the features the scenario uses (jobs,
admin). A target given by URL is probed by the CLI before anything starts (guarded there); the
embedded server by the drill once it has booted. Either way the same function runs, and a misfit
is one `TargetMisfit` sentence.
"""

from __future__ import annotations

from collections.abc import Callable

from rushhour.scenarios.protocols.admission import Context, Needs, Refused, admit, not_served
from rushhour.scenarios.protocols.credentials import describe_auth
from rushhour.scenarios.protocols.features import UnsupportedFeature, apply_missing, plan_features, protocol_notes
from rushhour.scenarios.spec.plan import DrillPlan

__all__ = ["TargetMisfit", "describe_target", "fit_protocol", "probe_plan", "unserved_wanted"]

Say = Callable[[str], None]


class TargetMisfit(Exception):
    """The scenario asks what its target's protocol cannot say, or the target failed the probe."""


def describe_target(plan: DrillPlan) -> list[str]:
    """The protocol lines of the dry run (the credential masked)."""
    t = plan.scenario.target
    lines = [f"protocol   {t.protocol}" + (f", model {t.model}" if t.model else "")
             + (", streaming" if t.protocol == "openai-chat" and t.stream else "")]
    lines.append(f"auth       {describe_auth(t.auth)}")
    if t.ca_bundle:
        lines.append(f"ca bundle  {t.ca_bundle}")
    return lines


def fit_protocol(plan: DrillPlan, *, say: Say) -> DrillPlan:
    """The plan with what the protocol cannot express refused (TargetMisfit) or switched off (said)."""
    try:
        plan, notes = protocol_notes(plan)
    except UnsupportedFeature as exc:
        raise TargetMisfit(str(exc)) from exc
    for note in notes:
        say(note)
    return plan


def probe_plan(plan: DrillPlan, url: str, *, say: Say) -> DrillPlan:
    """One request to the target at `url`, asking for the features the scenario uses; the plan
    with the features the target does not serve switched off (said), or TargetMisfit."""
    needs = Needs(plan.scenario.target, plan.source, tuple(unserved_wanted(plan)))
    answer = admit(url, needs, Context(guard=False))
    for note in answer.notes:
        say(note)
    if isinstance(answer, Refused):
        raise TargetMisfit(answer.sentence)
    if not answer.switched_off:
        return plan
    plan, _ = apply_missing(plan, list(answer.switched_off), why=not_served(url))
    return plan


def unserved_wanted(plan: DrillPlan) -> list[str]:
    """Features the scenario uses that the protocol has, so the target must be asked for them."""
    return list(plan_features(plan)[0])
