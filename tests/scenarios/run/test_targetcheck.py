"""One probe for every kind of target: the function the CLI runs on a URL target before the load
and the drill on its booted server. Ground truth: loopback stubs whose answers are set here."""

from __future__ import annotations

from pathlib import Path

import pytest

from rushhour.scenarios.run.targetcheck import TargetMisfit, probe_plan
from rushhour.scenarios.spec.model import parse_scenario
from rushhour.scenarios.spec.plan import DrillPlan, build_plan
from tests.support.stub import Answer, stub_server

TRANSLATED: Answer = (200, {}, {"translation": "hallo", "model": "m"})


def _plan(tmp_path: Path, url: str, *, unsupported: str = "refuse", **load: object) -> DrillPlan:
    data = {"name": "t", "traffic": {"model": "constant:5", "duration": "10s"},
            "target": {"url": url, "protocol": "rushhour", "unsupported": unsupported}, "load": {"mode": "open", **load}}
    return build_plan(parse_scenario(data, source="t.yaml"), source="t.yaml", base_dir=tmp_path)


def test_probe_plan_says_what_a_fitting_target_answered(tmp_path: Path) -> None:
    said: list[str] = []
    with stub_server({"/v1/translate": TRANSLATED}) as (url, asked):
        plan = _plan(tmp_path, url)
        assert probe_plan(plan, url, say=said.append) == plan
    assert asked[0] == "/v1/translate" and said and "/v1/translate answered 200" in said[0]


def test_probe_plan_refuses_a_target_that_does_not_speak_the_protocol(tmp_path: Path) -> None:
    with stub_server({}) as (url, _asked):
        with pytest.raises(TargetMisfit, match=r"t\.yaml: target: the capability probe failed: .*answered 404"):
            probe_plan(_plan(tmp_path, url), url, say=lambda _line: None)


def test_probe_plan_asks_for_the_jobs_api_the_scenario_uses(tmp_path: Path) -> None:
    said: list[str] = []
    with stub_server({"/v1/translate": TRANSLATED}) as (url, asked):  # an unknown job: 404 with an error body
        plan = probe_plan(_plan(tmp_path, url, documents_via_jobs=True), url, say=said.append)
    assert asked == ["/v1/translate", "/v1/jobs/rushhour-capability-probe"]
    assert said[0].endswith("serves jobs") and plan.scenario.load.documents_via_jobs


def test_probe_plan_switches_off_the_jobs_api_a_target_lacks_when_the_scenario_allows_it(tmp_path: Path) -> None:
    said: list[str] = []
    no_jobs: Answer = (404, {}, {"detail": "Not Found"})  # not rushhour's error shape: no jobs API
    with stub_server({"/v1/translate": TRANSLATED, "/v1/jobs/rushhour-capability-probe": no_jobs}) as (url, _asked):
        fitted = probe_plan(_plan(tmp_path, url, unsupported="warn", documents_via_jobs=True), url, say=said.append)
        with pytest.raises(TargetMisfit, match=r"t\.yaml: target: the target at .* does not serve it, but load\."):
            probe_plan(_plan(tmp_path, url, documents_via_jobs=True), url, say=said.append)
    assert not fitted.scenario.load.documents_via_jobs
    assert said[1].startswith(f"warning: the target at {url} does not serve it: load.documents_via_jobs")
    assert "answered 200" in said[2] and len(said) == 3  # the refusal's probe line is said before the sentence
