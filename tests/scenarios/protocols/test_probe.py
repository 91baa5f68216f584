"""The capability probe stops a misfit before the load: wrong path, refused credential, not JSON."""

from __future__ import annotations

import pytest

from rushhour.scenarios.protocols.probe import ProbeError, probe_target
from rushhour.scenarios.spec.target import TargetProtocol
from tests.support.targets import StreamPlan, serve_target


def _target(**fields: object) -> TargetProtocol:
    return TargetProtocol.model_validate(fields)


@pytest.mark.slow
def test_probe_passes_each_protocol_against_a_server_that_speaks_it() -> None:
    with serve_target() as (url, state):
        state.plan = StreamPlan(tokens=5, first_s=0.05, every_s=0.01, stall_at=None)
        chat = probe_target(url, _target(protocol="openai-chat"))
        assert chat.output_tokens == 5 and chat.ttft_ms is not None and chat.ttft_ms >= 40
        assert probe_target(url, _target(protocol="openai-chat", stream=False)).output_tokens == 5
        assert probe_target(url, _target(protocol="kserve-v2", model="mt")).status == 200
        echo = _target(protocol="http", http={"path": "/echo", "body": '{"q": {{ text | tojson }}}', "json_field": "result.text"})
        assert probe_target(url, echo).status == 200


def test_probe_names_a_wrong_path() -> None:
    with serve_target() as (url, _state), pytest.raises(ProbeError, match="answered 404.*does not serve this path"):
        probe_target(url, _target(protocol="rushhour"))


def test_probe_names_a_refused_credential_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROBE_TEST_KEY", "wrong-key-but-long-enough")
    with serve_target() as (url, state), pytest.raises(ProbeError) as caught:
        state.token = "the-right-key"
        probe_target(url, _target(protocol="openai-chat", auth={"env": "PROBE_TEST_KEY"}))
    assert "refused the credential (HTTP 401)" in str(caught.value) and "****ough" in str(caught.value)
    assert "wrong-key" not in str(caught.value)


def test_probe_names_an_answer_that_is_not_json() -> None:
    target = _target(protocol="kserve-v2", model="m")
    with serve_target() as (url, _state), pytest.raises(ProbeError, match=r'answered 200 with a body that is not JSON \("<html>hello'):
        probe_target(url + "/html", target)
    page = _target(protocol="http", http={"path": "/html", "json_field": "result"})
    with serve_target() as (url, _state), pytest.raises(ProbeError, match="answer has no result"):
        probe_target(url, page)


def test_probe_reports_no_answer_from_a_closed_port() -> None:
    with pytest.raises(ProbeError, match="got no answer"):
        probe_target("http://127.0.0.1:9", _target(protocol="openai-chat"), timeout_s=2.0)


def test_probe_finds_no_jobs_or_admin_api_on_a_foreign_server() -> None:
    with serve_target() as (url, _state):
        report = probe_target(url, _target(protocol="openai-chat"), features=("jobs", "admin"))
    assert report.features == []
