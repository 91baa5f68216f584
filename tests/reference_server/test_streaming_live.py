"""Streams on a 2-node continuous cluster: `/v1/translate/stream` pieces and the OpenAI-compatible
chat (checked with the official `openai` client) join to the same text as the plain answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import httpx
import pytest

from rushhour.reference_server.model.samples import sample_text
from tests.support.server import RunningServer, module_server

if TYPE_CHECKING:
    import openai

CONFIG = {"pools": {"quality": {"batching": "continuous"}}, "cache": {"enabled": False}}


server = module_server("streaming", CONFIG)


@pytest.fixture(scope="module")
def client(server: RunningServer) -> Iterator[openai.OpenAI]:
    import openai  # the SDK (0.6 s to import) only on the worker that runs these tests

    http = httpx.Client(trust_env=False, timeout=30.0)
    # at run time the SDK takes any httpx.Client (its own annotations name its vendored httpx)
    yield openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", http_client=http, max_retries=0)
    http.close()


def _stream(server: RunningServer, body: dict[str, object]) -> list[tuple[str, dict[str, object]]]:
    events: list[tuple[str, dict[str, object]]] = []
    with server.client.stream("POST", "/v1/translate/stream", json=body) as response:
        assert response.status_code == 200, response.read()
        event = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[len("event: "):]
            elif line.startswith("data: "):
                events.append((event, json.loads(line[len("data: "):])))
    return events


@pytest.mark.parametrize("mode", ["quality", "fast"])
@pytest.mark.slow
def test_streaming_pieces_join_to_the_plain_answer(server: RunningServer, mode: str) -> None:
    texts = [sample_text(n, salt=n) for n in (7, 120, 900, 3000)]
    plain = [server.translate(t, mode=mode).json()["translation"] for t in texts]
    body = {"source_lang": "en", "target_lang": "de", "mode": mode}
    with ThreadPoolExecutor(4) as pool:
        streams = list(pool.map(lambda t: _stream(server, {**body, "text": t}), texts))
    for events, expected in zip(streams, plain, strict=True):
        kinds = [kind for kind, _ in events]
        assert kinds[-2:] == ["segment", "done"] and set(kinds[:-2]) == {"piece"}
        assert "".join(str(data["text"]) for kind, data in events if kind == "piece") == expected
        assert events[-2][1]["translation"] == expected
    if mode == "quality":  # continuous: one piece per decode step
        assert sum(kind == "piece" for kind, _ in streams[-1]) > 100


@pytest.mark.slow
def test_streaming_a_document_still_streams_segments(server: RunningServer) -> None:
    events = _stream(server, {"text": "One sentence. Another one!", "source_lang": "en", "target_lang": "fr"})
    assert [kind for kind, _ in events] == ["segment", "segment", "done"]


@pytest.mark.slow
def test_streaming_refusal_before_any_piece_keeps_its_status(server: RunningServer) -> None:
    response = server.client.post("/v1/translate/stream", json={"text": "hi", "source_lang": "en", "target_lang": "xx"})
    assert response.status_code == 422 and response.json()["error"]["code"] == "unsupported_language"


@pytest.mark.slow
def test_chat_completion_answers_the_last_user_message(server: RunningServer, client: openai.OpenAI) -> None:
    text = sample_text(300, salt=4)
    messages = [{"role": "system", "content": "translate"}, {"role": "user", "content": "not this"},
                {"role": "assistant", "content": "ok"}, {"role": "user", "content": text}]
    answer = client.chat.completions.create(model="quality", messages=messages, user="tenant-a")
    assert answer.choices[0].message.content == server.translate(text, mode="quality").json()["translation"]
    assert answer.choices[0].finish_reason == "stop" and answer.object == "chat.completion"
    assert answer.usage is not None and answer.usage.completion_tokens == 300 // 4 + 1
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens


@pytest.mark.slow
def test_chat_completion_stream_joins_to_the_plain_answer(server: RunningServer, client: openai.OpenAI) -> None:
    text = sample_text(800, salt=5)
    stream = client.chat.completions.create(model="quality", messages=[{"role": "user", "content": text}], stream=True,
                                            stream_options={"include_usage": True})
    chunks = list(stream)
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == server.translate(text, mode="quality").json()["translation"]
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) > 50
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 800 // 4 + 1


@pytest.mark.slow
def test_chat_completion_honours_max_tokens(client: openai.OpenAI) -> None:
    text = sample_text(400, salt=6)
    plain = client.chat.completions.create(model="fast", messages=[{"role": "user", "content": text}], max_tokens=7)
    assert plain.choices[0].finish_reason == "length" and plain.usage is not None and plain.usage.completion_tokens == 7
    stream = client.chat.completions.create(model="quality", messages=[{"role": "user", "content": text}], max_tokens=7, stream=True)
    chunks = [c for c in stream if c.choices]
    assert sum(1 for c in chunks if c.choices[0].delta.content) == 7 and chunks[-1].choices[0].finish_reason == "length"


@pytest.mark.slow
def test_chat_errors_keep_status_codes_in_openai_shape(server: RunningServer, client: openai.OpenAI) -> None:
    import openai

    with pytest.raises(openai.UnprocessableEntityError) as unknown:
        client.chat.completions.create(model="gpt-9", messages=[{"role": "user", "content": "hi"}])
    assert unknown.value.code == "model_not_found" and "gpt-9" in unknown.value.message
    with pytest.raises(openai.UnprocessableEntityError):
        client.chat.completions.create(model="fast", messages=[{"role": "user", "content": "hi"}], stream=True,
                                       extra_body={"target_lang": "xx"})
    bad = server.client.post("/v1/chat/completions", content=b"{nope", headers={"content-type": "application/json"})
    assert bad.status_code == 400 and set(bad.json()["error"]) >= {"message", "type", "param", "code"}


@pytest.mark.slow
def test_models_lists_the_tiers(client: openai.OpenAI) -> None:
    assert {m.id for m in client.models.list()} == {"quality", "fast", "auto"}


@pytest.mark.slow
def test_streaming_metrics_have_ttft_gaps_and_decode_rows(server: RunningServer, client: openai.OpenAI) -> None:
    list(client.chat.completions.create(model="quality", messages=[{"role": "user", "content": sample_text(200)}], stream=True))
    server.wait_for(lambda s: True, timeout_s=1)
    text = server.client.get("/metrics").text
    assert 'rushhour_time_to_first_token_seconds_count{endpoint="chat",priority="free"}' in text
    assert 'rushhour_inter_token_seconds_count{endpoint="chat",priority="free"}' in text
    assert 'rushhour_decode_rows_total{pool="quality"}' in text and "rushhour_node_tokens_per_second{" in text
    assert 'rushhour_node_active_rows{node="quality-0",pool="quality"}' in text


@pytest.mark.slow
def test_rushhour_openai_chat_protocol_reaches_the_reference_server_with_its_priority(server: RunningServer) -> None:
    """A drill of the embedded server over openai-chat carries each row's priority (a header) and
    deadline (an extra field) by default: the gateway files the request under the row's class."""
    from rushhour.scenarios.protocols import make_protocol
    from rushhour.scenarios.protocols.base import sample_fields
    from rushhour.scenarios.spec.model import TargetSpec

    spec = TargetSpec.model_validate({"embedded": {}, "protocol": "openai-chat", "model": "fast", "stream": False})
    sent = spec.resolved()
    assert sent.row_headers == {"X-Rushhour-Priority": "priority"} and sent.extra_fields == ("deadline_ms",)
    request = make_protocol(spec).request(
        {**sample_fields(), "priority": "batch", "tenant": "acme", "deadline_ms": 9000.0})
    assert json.loads(request.body or b"")["user"] == "acme"

    def batch_count() -> float:
        metrics = server.client.get("/metrics").text
        return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                   if line.startswith("rushhour_requests_total{") and 'priority="batch"' in line)

    before = batch_count()
    answer = server.client.post(request.path, content=request.body, headers=request.headers)
    assert answer.status_code == 200, answer.text
    assert batch_count() == before + 1
