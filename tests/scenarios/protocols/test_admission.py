"""The one admission of a target: guard, wanted features, probe and fit, each answer typed.

Ground truth: loopback stubs whose answers are set here (a rushhour translate route; a jobs route
that answers in rushhour's error shape, or one that does not), and an address the guard refuses.
"""

from __future__ import annotations

from typing import Any

from rushhour.scenarios.protocols.admission import Admitted, Context, Needs, Refused, admit
from rushhour.scenarios.protocols.probe import ProbeReport
from rushhour.scenarios.spec.target import TargetProtocol
from tests.support.stub import Answer, stub_server

TRANSLATED: Answer = (200, {}, {"translation": "hallo", "model": "m"})
NO_JOBS: Answer = (404, {}, {"detail": "Not Found"})  # not rushhour's error shape: no jobs API here
JOBS_PATH = "/v1/jobs/rushhour-capability-probe"


def _needs(unsupported: str = "refuse", wanted: tuple[str, ...] = ("jobs",)) -> Needs:
    return Needs(TargetProtocol.model_validate({"protocol": "rushhour", "unsupported": unsupported}), "t.yaml", wanted)


def test_admission_refuses_an_address_off_this_machine_before_any_request() -> None:
    probed: list[str] = []

    def probe(url: str, *args: Any, **kwargs: Any) -> ProbeReport:
        probed.append(url)
        raise AssertionError("the probe ran for a refused address")

    answer = admit("http://10.1.2.3:8000", _needs(), Context(field="--target"), probe=probe)
    assert isinstance(answer, Refused) and answer.stage == "guard" and answer.exit_code == 2
    assert answer.sentence.startswith('--target: "http://10.1.2.3:8000" is not on this machine')
    assert probed == []


def test_admission_admits_a_target_serving_every_wanted_feature() -> None:
    with stub_server({"/v1/translate": TRANSLATED}) as (url, asked):  # unknown job: 404 in rushhour's error shape
        answer = admit(url, _needs())
    assert isinstance(answer, Admitted) and answer.served == ("jobs",) and answer.switched_off == ()
    assert asked == ["/v1/translate", JOBS_PATH]
    assert answer.notes[0].startswith("probe      rushhour: /v1/translate answered 200") and len(answer.notes) == 1


def test_admission_refuses_a_target_missing_a_feature_the_scenario_needs() -> None:
    with stub_server({"/v1/translate": TRANSLATED, JOBS_PATH: NO_JOBS}) as (url, _asked):
        answer = admit(url, _needs())
    assert isinstance(answer, Refused) and answer.stage == "fit" and answer.exit_code == 2
    assert answer.sentence == (f"t.yaml: target: the target at {url} does not serve it, but load.documents_via_jobs "
                               "sends documents through the jobs API (POST /v1/jobs). Set target.unsupported: warn "
                               "to run without it, or change the scenario.")
    assert "/v1/translate answered 200" in answer.notes[0]


def test_admission_switches_off_a_feature_the_scenario_allows_it_to() -> None:
    with stub_server({"/v1/translate": TRANSLATED, JOBS_PATH: NO_JOBS}) as (url, _asked):
        answer = admit(url, _needs("warn"))
    assert isinstance(answer, Admitted) and answer.served == () and answer.switched_off == ("jobs",)
    assert answer.notes[1] == (f"warning: the target at {url} does not serve it: load.documents_via_jobs sends "
                               "documents through the jobs API (POST /v1/jobs); switched off, documents are sent "
                               "like every other request.")


def test_admission_refuses_a_target_whose_probe_fails_in_the_commands_words() -> None:
    with stub_server({}) as (url, _asked):
        drill = admit(url, _needs(wanted=()))
        arm = admit(url, _needs(wanted=()), Context(failure="--candidate X: the probe failed: {error}"))
    assert isinstance(drill, Refused) and drill.stage == "probe"
    assert drill.sentence.startswith(f"t.yaml: target: the capability probe failed: POST {url}/v1/translate "
                                     "answered 404")
    assert isinstance(arm, Refused) and arm.sentence.startswith("--candidate X: the probe failed: POST ")


def test_admission_without_the_probe_sends_nothing_and_assumes_the_wanted_features() -> None:
    with stub_server({}) as (url, asked):
        answer = admit(url, _needs(), Context(probe=False))
    assert answer == Admitted(served=("jobs",)) and asked == []
