"""The capacity job's look at its target before the first step.

The target's admission (`rushhour.scenarios.protocols.admission`, as the drill's look at its
target): one request through the scenario's protocol, which also asks the target whether it
serves the jobs API when the scenario sends documents there. The steps send documents through the jobs API only
when the target said it serves it; when it does not, the job is refused
(`target.unsupported: refuse`) or the documents go as ordinary requests, with a warning (`warn`).
"""

from __future__ import annotations

from collections.abc import Callable

from rushhour.scenarios.capacity.job import CapacityJob
from rushhour.scenarios.protocols.admission import Admission, Context, Needs, Refused, admit, fit
from rushhour.scenarios.protocols.features import features_used, split_features
from rushhour.scenarios.protocols.probe import ProbeError, ProbeReport, probe_target

__all__ = ["jobs_answer", "probe_capacity_target", "wanted_features"]

Say = Callable[[str], None]


def wanted_features(job: CapacityJob) -> tuple[str, ...]:
    """("jobs",) when the steps would send documents through the jobs API and the protocol has one."""
    return split_features(job.protocol.protocol, features_used(jobs=job.scenario.load.documents_via_jobs,
                                                               admin=False))[0]


def probe_capacity_target(job: CapacityJob, url: str, *, say: Say) -> bool:
    """Probe the target at `url` (ProbeError when it does not fit its protocol); whether the steps
    send documents through the jobs API."""
    answer = admit(url, _needs(job, wanted_features(job)), Context(guard=False, failure="{error}"),
                   probe=probe_target)
    return _said(answer, say)


def jobs_answer(job: CapacityJob, wanted: tuple[str, ...], report: ProbeReport, url: str, *, say: Say) -> bool:
    """Whether documents go through the jobs API, from what was asked and what the probe found;
    ProbeError when the target lacks it and `target.unsupported` is refuse."""
    answer = fit(url, _needs(job, wanted), report)
    return _said(answer, say, probe_line=False)


def _needs(job: CapacityJob, wanted: tuple[str, ...]) -> Needs:
    return Needs(job.protocol, job.source, wanted)


def _said(answer: Admission, say: Say, *, probe_line: bool = True) -> bool:
    """Say the admission's lines (the probe's first, unless already said); ProbeError when refused."""
    for note in answer.notes[0 if probe_line else 1:]:
        say(note)
    if isinstance(answer, Refused):
        raise ProbeError(answer.sentence)
    return "jobs" in answer.served
