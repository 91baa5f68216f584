"""A capacity job sends documents through the jobs API only when its target's probe found it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from rushhour.scenarios.capacity import targetprobe
from rushhour.scenarios.capacity.job import CapacityJob
from rushhour.scenarios.capacity.targetprobe import jobs_answer, probe_capacity_target, wanted_features
from rushhour.scenarios.protocols.probe import ProbeError, ProbeReport
from rushhour.scenarios.spec.target import TargetProtocol

URL = "http://127.0.0.1:9"


def _job(*, protocol: str = "rushhour", via_jobs: bool = True, unsupported: str = "refuse") -> CapacityJob:
    target = TargetProtocol.model_validate({"protocol": protocol, "unsupported": unsupported})
    load = SimpleNamespace(documents_via_jobs=via_jobs)
    return cast(CapacityJob, SimpleNamespace(protocol=target, source="peak.yaml", scenario=SimpleNamespace(load=load)))


def _report(*features: str) -> ProbeReport:
    return ProbeReport(protocol="rushhour", path="/v1/translate", status=200, elapsed_ms=3.0, features=list(features))


def test_capacity_asks_for_the_jobs_api_only_when_documents_would_use_it() -> None:
    assert wanted_features(_job()) == ("jobs",)
    assert wanted_features(_job(via_jobs=False)) == ()
    assert wanted_features(_job(protocol="openai-chat")) == ()  # the protocol has no jobs API to ask for


def test_capacity_sends_documents_through_jobs_only_when_the_probe_found_it() -> None:
    said: list[str] = []
    assert jobs_answer(_job(), ("jobs",), _report("jobs"), URL, say=said.append) is True
    assert jobs_answer(_job(via_jobs=False), (), _report("jobs"), URL, say=said.append) is False
    assert said == []


def test_capacity_refuses_a_target_without_the_jobs_api_by_default() -> None:
    with pytest.raises(ProbeError, match=r"peak\.yaml: target: the target at http://127\.0\.0\.1:9 does not serve "
                                         r"it, but load\.documents_via_jobs"):
        jobs_answer(_job(), ("jobs",), _report(), URL, say=print)


def test_capacity_switches_jobs_off_with_a_warning_when_told_to(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, ...]] = []

    def probe(url: str, target: TargetProtocol, *, features: tuple[str, ...] = ()) -> ProbeReport:
        asked.append(features)
        return _report("admin")

    monkeypatch.setattr(targetprobe, "probe_target", cast(Any, probe))
    said: list[str] = []
    assert probe_capacity_target(_job(unsupported="warn"), URL, say=said.append) is False
    assert asked == [("jobs",)] and said[0].startswith("probe      rushhour: /v1/translate answered 200")
    assert said[1] == ("warning: the target at http://127.0.0.1:9 does not serve it: load.documents_via_jobs sends "
                       "documents through the jobs API (POST /v1/jobs); switched off, documents are sent like every "
                       "other request.")
