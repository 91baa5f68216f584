"""At planning time: what the scenario asks that its target's protocol cannot say or serve.

Row fields a protocol has no place for (priority, tenant, mode, deadline on openai-chat) are
said once, as a note: the requests are still grouped by them in the report. Server APIs beyond
the request (the jobs API for documents, the admin API that chaos drives) are either refused
up front (`target.unsupported: refuse`, the default: exit 2 before anything starts) or switched
off with a warning (`warn`), never left to fail as thousands of errors.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from rushhour.scenarios.spec.model import ScenarioError

if TYPE_CHECKING:  # the plan's module imports pandas, which a Locust process asking the admission must not
    from rushhour.scenarios.spec.plan import DrillPlan

__all__ = ["FEATURE_TEXT", "UnsupportedFeature", "apply_missing", "features_used", "plan_features", "protocol_notes",
           "refusal", "split_features", "switched_off", "unserved_features"]

FEATURE_TEXT = {
    "jobs": "load.documents_via_jobs sends documents through the jobs API (POST /v1/jobs)",
    "admin": "chaos experiments drive the target's admin API (/admin/..., /v1/status)",
}
OFF_TEXT = {"jobs": "documents are sent like every other request", "admin": "the chaos experiments are skipped"}
ROW_FIELDS_SHOWN = ("priority", "tenant", "mode", "deadline_ms")


class UnsupportedFeature(ScenarioError):
    """The scenario needs something its target cannot serve, and `target.unsupported` is refuse."""


def _protocol(plan: DrillPlan) -> tuple[str, frozenset[str], frozenset[str]]:
    from rushhour.scenarios.protocols.base import protocol_class

    kind = protocol_class(plan.scenario.target.protocol)
    return kind.name, kind.fields_sent(plan.scenario.target), kind.features


def features_used(*, jobs: bool, admin: bool) -> tuple[str, ...]:
    """The features a scenario uses beyond its requests: "jobs" (documents through the jobs API),
    "admin" (chaos that drives the admin API)."""
    return tuple(f for f, used in (("jobs", jobs), ("admin", admin)) if used)


def split_features(protocol: str, used: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`used` split by what `protocol` has: (to ask the target for, refused or switched off at planning)."""
    from rushhour.scenarios.protocols.base import protocol_class

    has = protocol_class(protocol).features
    return tuple(f for f in used if f in has), tuple(f for f in used if f not in has)


def plan_features(plan: DrillPlan) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The drill's used features split by its protocol (`split_features`)."""
    used = features_used(jobs=plan.scenario.load.jobs_in_use, admin=any(c.in_run and c.admin for c in plan.chaos))
    return split_features(plan.scenario.target.protocol, used)


def unserved_features(plan: DrillPlan) -> list[str]:
    """Features the scenario uses that its protocol does not have ("jobs", "admin")."""
    return list(plan_features(plan)[1])


def apply_missing(plan: DrillPlan, missing: list[str], *, why: str) -> tuple[DrillPlan, list[str]]:
    """Refuse (UnsupportedFeature) or switch off each missing feature; returns the warnings."""
    if not missing:
        return plan, []
    target = plan.scenario.target
    if target.unsupported == "refuse":
        raise UnsupportedFeature(refusal(plan.source, missing, why=why))
    scenario = plan.scenario
    if "jobs" in missing:
        scenario = scenario.model_copy(update={"load": scenario.load.model_copy(update={"documents_via_jobs": False})})
    chaos = plan.chaos
    if "admin" in missing:  # only the faults that drive the admin API go (plan.chaos mirrors scenario.chaos)
        kept = [i for i, fault in enumerate(plan.chaos) if not fault.admin]
        chaos = [plan.chaos[i] for i in kept]
        scenario = scenario.model_copy(update={"chaos": [scenario.chaos[i] for i in kept if i < len(scenario.chaos)]})
    warnings = [switched_off(f, why=why) for f in missing]
    return dataclasses.replace(plan, scenario=scenario, chaos=chaos), warnings


def refusal(source: str, missing: list[str], *, why: str) -> str:
    """The sentence that refuses a scenario whose target cannot serve `missing` (`unsupported: refuse`)."""
    listed = "; ".join(FEATURE_TEXT[f] for f in missing)
    return f"{source}: target: {why}, but {listed}. Set target.unsupported: warn to run without it, or change the scenario."


def switched_off(feature: str, *, why: str) -> str:
    """The warning said when `feature` is switched off because the target cannot serve it (`unsupported: warn`)."""
    return f"warning: {why}: {FEATURE_TEXT[feature]}; switched off, {OFF_TEXT[feature]}."


def protocol_notes(plan: DrillPlan) -> tuple[DrillPlan, list[str]]:
    """The plan with what the protocol cannot serve refused or switched off, and the notes to print."""
    name, sends, _ = _protocol(plan)
    plan, warnings = apply_missing(plan, unserved_features(plan), why=f'protocol "{name}" has no such API')
    unsent = [f for f in ROW_FIELDS_SHOWN if f not in sends]
    if unsent:
        warnings.append(f'note: protocol "{name}" does not send {", ".join(unsent)}; the report still groups the '
                        "requests by their scheduled values.")
    return plan, warnings
