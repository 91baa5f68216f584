"""The capacity job's look at its target before the first step.

One request through the scenario's protocol (`rushhour.scenarios.protocols.probe`), which also asks the
target whether it serves the jobs API when the scenario sends documents there, as the drill's
probe does (`rushhour.scenarios.run.targetcheck`). The steps send documents through the jobs API only
when the target said it serves it; when it does not, the job is refused
(`target.unsupported: refuse`) or the documents go as ordinary requests, with a warning (`warn`).
"""

from __future__ import annotations

from collections.abc import Callable

from rushhour.scenarios.capacity.job import CapacityJob
from rushhour.scenarios.protocols.features import refusal, switched_off
from rushhour.scenarios.protocols.probe import ProbeError, ProbeReport, probe_target

__all__ = ["jobs_answer", "probe_capacity_target", "wanted_features"]

Say = Callable[[str], None]


def wanted_features(job: CapacityJob) -> tuple[str, ...]:
    """("jobs",) when the steps would send documents through the jobs API and the protocol has one."""
    from rushhour.scenarios.protocols.base import protocol_class

    has_jobs = "jobs" in protocol_class(job.protocol.protocol).features
    return ("jobs",) if job.scenario.load.documents_via_jobs and has_jobs else ()


def probe_capacity_target(job: CapacityJob, url: str, *, say: Say) -> bool:
    """Probe the target at `url` (ProbeError when it does not fit its protocol); whether the steps
    send documents through the jobs API."""
    wanted = wanted_features(job)
    report = probe_target(url, job.protocol, features=wanted)
    say(report.line())
    return jobs_answer(job, wanted, report, url, say=say)


def jobs_answer(job: CapacityJob, wanted: tuple[str, ...], report: ProbeReport, url: str, *, say: Say) -> bool:
    """Whether documents go through the jobs API, from what was asked and what the probe found;
    ProbeError when the target lacks it and `target.unsupported` is refuse."""
    if "jobs" not in wanted:
        return False
    if "jobs" in report.features:
        return True
    why = f"the target at {url} does not serve it"
    if job.protocol.unsupported == "refuse":
        raise ProbeError(refusal(job.source, ["jobs"], why=why))
    say(switched_off("jobs", why=why))
    return False
