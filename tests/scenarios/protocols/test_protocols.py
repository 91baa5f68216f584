"""Each protocol maps one row's fields to one request and the answer to an Outcome."""

from __future__ import annotations

import json

import pytest

from rushhour.scenarios.protocols import make_protocol
from rushhour.scenarios.protocols.base import sample_fields
from rushhour.scenarios.protocols.credentials import CredentialError, mask, masked_headers

FIELDS = {**sample_fields(), "text": "Guten Tag", "max_tokens": 0, "chars": 400}


def test_rushhour_sends_the_translate_fields_only() -> None:
    request = make_protocol({}).build(FIELDS)
    body = json.loads(request.body or b"")
    assert request.path == "/v1/translate" and set(body) == {"text", "source_lang", "target_lang", "mode",
                                                              "priority", "tenant", "deadline_ms"}


def test_openai_chat_asks_for_the_scheduled_tokens_or_a_length_from_the_text() -> None:
    protocol = make_protocol({"protocol": "openai-chat", "model": "m"})
    body = json.loads(protocol.build({**FIELDS, "max_tokens": 77}).body or b"")
    assert body["max_tokens"] == 77 and body["stream"] and body["model"] == "m"
    assert "Guten Tag" in body["messages"][0]["content"]
    assert json.loads(protocol.build(FIELDS).body or b"")["max_tokens"] == 100  # 400 chars / 4


def test_openai_chat_stream_parser_counts_tokens_and_reads_usage_and_errors() -> None:
    protocol = make_protocol({"protocol": "openai-chat"})
    parser = protocol.stream_parser()
    for k, at in enumerate((1.0, 1.02, 1.05)):
        event = {"model": "m", "choices": [{"delta": {"content": f"t{k}"}}]}
        parser.feed(b"data: " + json.dumps(event).encode() + b"\n\n", at)
    parser.feed(b'data: {"choices": [], "usage": {"completion_tokens": 5}}\n\ndata: [DONE]\n\n', 1.06)
    outcome = parser.outcome(200)
    assert outcome.status == 200 and outcome.model == "m"
    assert outcome.tokens.first_at == 1.0 and outcome.tokens.last_at == 1.05 and outcome.tokens.output_tokens == 5
    assert outcome.tokens.itl_max_ms == pytest.approx(30.0) and outcome.tokens.itl_p50_ms == pytest.approx(20.0)
    broken = protocol.stream_parser()
    broken.feed(b'data: {"error": {"code": "overloaded"}}\n', 2.0)
    assert broken.outcome(200).status == 500 and "overloaded" in broken.outcome(200).error
    assert protocol.stream_parser().outcome(200, "ConnectionReset").status == 0


def test_openai_chat_reads_the_prompt_tokens_the_server_counted() -> None:
    protocol = make_protocol({"protocol": "openai-chat"})
    parser = protocol.stream_parser()
    parser.feed(b'data: {"model": "m", "choices": [{"delta": {"content": "a"}}]}\n\n', 1.0)
    parser.feed(b'data: {"choices": [], "usage": {"prompt_tokens": 812, "completion_tokens": 1}}\n\n'
                b'data: [DONE]\n\n', 1.1)
    assert parser.outcome(200).tokens.input_tokens == 812
    silent = protocol.stream_parser()
    silent.feed(b'data: {"model": "m", "choices": [{"delta": {"content": "a"}}]}\n\ndata: [DONE]\n\n', 1.0)
    assert silent.outcome(200).tokens.input_tokens is None
    plain = make_protocol({"protocol": "openai-chat", "stream": False})
    answer = plain.parse(200, b'{"model": "m", "choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 9}}')
    assert answer.tokens.input_tokens == 40 and answer.tokens.output_tokens == 9


def test_openai_chat_without_streaming_reads_usage_and_refuses_a_foreign_answer() -> None:
    protocol = make_protocol({"protocol": "openai-chat", "stream": False})
    ok = protocol.parse(200, b'{"model": "m", "choices": [], "usage": {"completion_tokens": 9}}')
    assert ok.status == 200 and ok.tokens.output_tokens == 9
    assert protocol.parse(200, b'{"translation": "x"}').status == 502
    assert protocol.parse(429, b'{"error": {"code": "rate_limit"}}').error == "rate_limit"


def test_kserve_v2_sends_a_bytes_tensor_and_needs_outputs() -> None:
    protocol = make_protocol({"protocol": "kserve-v2", "model": "mt"})
    request = protocol.build(FIELDS)
    body = json.loads(request.body or b"")
    assert request.path == "/v2/models/mt/infer"
    assert body["inputs"][0] == {"name": "text", "shape": [1], "datatype": "BYTES", "data": ["Guten Tag"]}
    assert protocol.parse(200, b'{"model_name": "mt", "outputs": []}').status == 200
    assert protocol.parse(200, b"{}").status == 502
    assert protocol.parse(400, b'{"error": "bad input"}').error == "bad input"


def test_http_template_renders_the_row_and_checks_status_and_field() -> None:
    spec = {"protocol": "http", "http": {"path": "/echo", "body": '{"q": {{ text | tojson }}, "n": {{ max_tokens }}}',
                                         "json_field": "result.text"}}
    protocol = make_protocol(spec)
    assert json.loads(protocol.build(FIELDS).body or b"") == {"q": "Guten Tag", "n": 100}
    assert protocol.parse(200, b'{"result": {"text": "x"}}').status == 200
    assert protocol.parse(200, b'{"result": {}}').status == 502
    assert protocol.parse(503, b"").status == 503


def test_credentials_come_from_env_or_file_and_show_masked(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TEST_TARGET_KEY", "sk-very-secret-value-1234")
    protocol = make_protocol({"protocol": "openai-chat", "auth": {"env": "TEST_TARGET_KEY"}})
    assert protocol.build(FIELDS).headers["Authorization"] == "Bearer sk-very-secret-value-1234"
    assert masked_headers(protocol.headers)["Authorization"] == "Bearer ****1234" and mask("short") == "****"
    key = tmp_path / "key"
    key.write_text("filekey-0123456789\n")
    header = make_protocol({"auth": {"scheme": "header", "header": "X-API-Key", "file": str(key)}})
    assert header.headers == {"X-API-Key": "filekey-0123456789"}
    monkeypatch.delenv("TEST_TARGET_KEY")
    with pytest.raises(CredentialError, match="TEST_TARGET_KEY"):
        make_protocol({"protocol": "openai-chat", "auth": {"env": "TEST_TARGET_KEY"}})


def test_openai_chat_sends_the_tenant_as_user_and_row_headers_and_extra_fields_per_row() -> None:
    protocol = make_protocol({"protocol": "openai-chat", "model": "m", "row_headers": {"X-Priority": "priority"},
                              "extra_fields": ["deadline_ms"], "headers": {"X-Team": "sre"}})
    request = protocol.request({**FIELDS, "tenant": "acme", "priority": "free", "deadline_ms": 2500.0})
    body = json.loads(request.body or b"")
    assert body["user"] == "acme" and body["deadline_ms"] == 2500.0
    assert request.headers["X-Priority"] == "free" and request.headers["X-Team"] == "sre"
    assert "X-Priority" not in protocol.build(FIELDS).headers  # build is the bare request; request adds the row's
    assert protocol.request({**FIELDS, "priority": "paid"}).headers["X-Priority"] == "paid"


def test_row_headers_and_extra_fields_reach_kserve_parameters_and_http_headers() -> None:
    kserve = make_protocol({"protocol": "kserve-v2", "model": "mt", "extra_fields": ["priority", "tenant"]})
    parameters = json.loads(kserve.request(FIELDS).body or b"")["parameters"]
    assert parameters == {"max_tokens": 100, "priority": "paid", "tenant": "probe"}
    http = make_protocol({"protocol": "http", "http": {"path": "/echo", "body": '{"q": {{ text | tojson }}}'},
                          "row_headers": {"X-Tenant": "tenant", "X-Deadline-Ms": "deadline_ms"}})
    headers = http.request(FIELDS).headers
    assert headers["X-Tenant"] == "probe" and headers["X-Deadline-Ms"] == "5000"


@pytest.mark.parametrize(("target", "wrong"), [
    ({"protocol": "openai-chat", "row_headers": {"Bad Header": "priority"}}, '"Bad Header" is not a valid HTTP header'),
    ({"protocol": "openai-chat", "row_headers": {"X-P": "colour"}}, "row_headers.X-P"),
    ({"protocol": "openai-chat", "row_headers": {"Authorization": "tenant"}}, "use auth (env or file)"),
    ({"protocol": "rushhour", "extra_fields": ["priority"]}, "sends every field already"),
])
def test_row_headers_and_extra_fields_are_checked(target: dict[str, object], wrong: str) -> None:
    from pydantic import ValidationError

    from rushhour.kernel.validation import format_validation_errors
    from rushhour.scenarios.spec.target import TargetProtocol

    with pytest.raises(ValidationError) as caught:
        TargetProtocol.model_validate(target)
    assert wrong in format_validation_errors("t.yaml", caught.value)


def test_the_embedded_chat_defaults_go_only_to_the_embedded_server() -> None:
    from rushhour.scenarios.spec.model import TargetSpec

    embedded = TargetSpec.model_validate({"embedded": {}, "protocol": "openai-chat"})
    assert embedded.wire_dict()["row_headers"] == {"X-Rushhour-Priority": "priority"}
    assert embedded.wire_dict()["extra_fields"] == ["deadline_ms"]
    chosen = TargetSpec.model_validate({"embedded": {}, "protocol": "openai-chat", "row_headers": {}, "extra_fields": []})
    assert not chosen.wire_dict()["row_headers"] and not chosen.wire_dict()["extra_fields"]
    foreign = TargetSpec.model_validate({**embedded.model_dump(), "embedded": None, "url": "http://127.0.0.1:9"})
    assert foreign.wire_dict()["row_headers"] is None  # what --target does: someone else's server gets no defaults
    body = json.loads(make_protocol(foreign).request(FIELDS).body or b"")
    assert "deadline_ms" not in body


def test_extra_max_tokens_is_the_count_asked_for() -> None:
    protocol = make_protocol({"protocol": "kserve-v2", "model": "mt", "extra_fields": ["max_tokens"],
                              "row_headers": {"X-Max": "max_tokens"}})
    request = protocol.request(FIELDS)  # the schedule says 0 (none): 400 chars / 4 is asked for
    assert json.loads(request.body or b"")["parameters"]["max_tokens"] == 100 and request.headers["X-Max"] == "100"
