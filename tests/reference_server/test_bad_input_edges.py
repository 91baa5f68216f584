"""Bad input edges: events after a fault, bodies over the limit sent
chunked or written whole, documents of `jobs.max_chars` CJK characters, jobs that break in an
unexpected way, and a job store bounded in bytes."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any, cast

import pytest

from rushhour.reference_server.config import JobsConfig
from rushhour.reference_server.gateway.api import ApiError, Timing, TranslateRequest, TranslateResponse, error_response
from rushhour.reference_server.gateway.bodylimit import BodyLimitMiddleware
from rushhour.reference_server.gateway.jobs import JobManager, split_segments
from tests.support.server import RunningServer

CJK_SENTENCE = "东京的天气今天很好我们去公园散步. "  # 16 CJK characters, then ". "
MAX_JOB_CHARS = 60_000


@pytest.fixture(scope="module")
def server(shared_server: RunningServer) -> RunningServer:
    return shared_server


def _answer(req: TranslateRequest) -> TranslateResponse:
    return TranslateResponse(
        translation=req.text.upper(), model="quality", cached=False, degraded=False, node="fake-0",
        chars=len(req.text), timing=Timing(queue_ms=0, infer_ms=0, total_ms=0),
    )


def _req(text: str) -> TranslateRequest:
    return TranslateRequest(text=text, source_lang="en", target_lang="de")


def _cjk_document(chars: int) -> str:
    return (CJK_SENTENCE * (chars // len(CJK_SENTENCE) + 1))[:chars]


# ---- events ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_events_answer_with_numbered_events_after_a_fault(server: RunningServer) -> None:
    injected = server.admin("POST", "/admin/nodes/fast-0/faults", {"kind": "latency", "latency_ms": 1, "ttl_s": 5})
    assert injected.status_code == 200, injected.text
    try:
        response = server.client.get("/v1/events")
        assert response.status_code == 200, response.text
        events = response.json()["events"]
        seqs = [e["seq"] for e in events]
        assert all(isinstance(s, int) for s in seqs) and seqs == sorted(set(seqs))
        fault = [e for e in events if e["type"] == "fault_injected"][-1]
        assert fault["node"] == "fast-0" and fault["kind"] == "latency" and fault["wall"] > 0
        newer = server.client.get("/v1/events", params={"after": fault["seq"] - 1}).json()["events"]
        assert newer[0]["seq"] == fault["seq"]
    finally:
        server.admin("DELETE", "/admin/nodes/fast-0/faults")


def test_error_quoting_a_lone_surrogate_still_renders() -> None:
    response = error_response(ApiError(422, "invalid_field", 'Field "priority": "\ud800" is not a class.'))
    assert response.status_code == 422
    assert json.loads(bytes(response.body))["error"]["message"] == 'Field "priority": "\ud800" is not a class.'


# ---- bodies over the limit -------------------------------------------------------------------
def test_body_over_limit_sent_chunked_is_413(server: RunningServer) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"text": "'
        for _ in range(80):
            yield b"a" * 1_000
        yield b'", "source_lang": "en", "target_lang": "de"}'

    response = server.client.post("/v1/translate", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413, response.text
    assert response.json()["error"]["code"] == "body_too_large" and "65536" in response.json()["error"]["message"]
    assert server.translate("Still served after a refused chunked body.").status_code == 200


@pytest.mark.slow
def test_body_over_limit_written_whole_by_urllib_reads_the_413(server: RunningServer) -> None:
    """urllib writes the whole body before it reads the answer: the server must not reset it."""
    body = b'{"text": "' + b"a" * 2_000_000 + b'", "source_lang": "en", "target_lang": "de"}'
    for _ in range(10):  # a reset is a race: one try can read the answer in time
        request = urllib.request.Request(f"{server.url}/v1/translate", data=body, headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 413
        assert json.loads(refused.value.read())["error"]["code"] == "body_too_large"


@pytest.mark.parametrize("pieces", [[b"x" * 2_000], [b"x" * 600, b"x" * 600, b"x" * 800], [b"x" * 1_500, b"", b"x" * 10]])
def test_body_limit_answers_at_once_whatever_the_pieces(pieces: list[bytes]) -> None:
    """Over the limit in its last piece or earlier: 413 without waiting for more of the client."""
    sent: list[dict[str, object]] = []

    async def main() -> None:
        messages = [{"type": "http.request", "body": p, "more_body": i < len(pieces) - 1} for i, p in enumerate(pieces)]

        async def receive() -> dict[str, object]:
            if messages:
                return messages.pop(0)
            await asyncio.sleep(3600)  # a client that sent everything and waits for the answer
            raise AssertionError("unreachable")

        async def send(message: dict[str, object]) -> None:
            sent.append(message)

        async def app(scope: object, receive: object, send: object) -> None:
            raise AssertionError("the application must not see a body over the limit")

        middleware = BodyLimitMiddleware(app, max_bytes=1_024, path_limits={"/v1/jobs": 4_096})
        scope = {"type": "http", "path": "/v1/translate", "headers": [(b"transfer-encoding", b"chunked")]}
        await asyncio.wait_for(middleware(scope, receive, send), timeout=2)  # type: ignore[arg-type]

    asyncio.run(main())
    assert sent[0]["status"] == 413 and b"1024 bytes" in sent[1]["body"]  # type: ignore[operator]


@pytest.mark.slow
def test_job_of_max_chars_in_cjk_fits_the_body_limit(server: RunningServer) -> None:
    """60,000 CJK characters take 180 kB in UTF-8 and 360 kB as ASCII-only JSON escapes."""
    body = {"text": _cjk_document(MAX_JOB_CHARS), "source_lang": "zh", "target_lang": "en", "tenant": "cjk-edge"}
    for ensure_ascii in (True, False):
        encoded = json.dumps({**body, "tenant": f"cjk-edge-{ensure_ascii}"}, ensure_ascii=ensure_ascii).encode()
        assert len(encoded) > 65_536
        created = server.client.post("/v1/jobs", content=encoded, headers={"content-type": "application/json"})
        assert created.status_code == 202, created.text[:300]
        job = server.client.get(created.headers["Location"]).json()
        assert job["progress"]["total"] == len(split_segments(body["text"], 5_000)) > 3_000
    too_long = server.client.post("/v1/jobs", json={**body, "text": _cjk_document(MAX_JOB_CHARS + 1)})
    assert too_long.status_code == 413 and too_long.json()["error"]["code"] == "text_too_large"
    with server.client.stream("POST", "/v1/translate/stream", json={**body, "tenant": "cjk-edge-stream"}) as streamed:
        assert streamed.status_code == 200
    status = server.status()
    assert status["limits"]["job_body_bytes"] >= 12 * MAX_JOB_CHARS and status["limits"]["max_body_bytes"] == 65_536


def test_status_exposes_the_job_store_bound(server: RunningServer) -> None:
    jobs = server.status()["jobs"]
    assert jobs["max_bytes"] > 0 and 0 <= jobs["bytes"] <= jobs["max_bytes"]
    assert jobs["max_chars"] == MAX_JOB_CHARS and jobs["kept"] <= jobs["max_jobs"]


# ---- jobs that break -------------------------------------------------------------------------
def test_job_with_an_unexpected_error_ends_failed_with_the_error() -> None:
    async def main() -> None:
        async def translate(req: TranslateRequest) -> TranslateResponse:
            if "second" in req.text:
                raise KeyError("queue_ms")
            return _answer(req)

        manager = JobManager(JobsConfig(concurrency=1), translate=translate, segment_chars=40, check=lambda req: "free")
        job = manager.submit(_req("The first. The second. The third."))
        await asyncio.wait_for(job.task, timeout=5)  # type: ignore[arg-type]
        view = job.view()
        assert view["state"] == "failed" and view["error"]["code"] == "internal_error"  # type: ignore[index]
        assert "KeyError" in view["error"]["message"] and "queue_ms" in view["error"]["message"]  # type: ignore[index]
        assert [s["index"] for s in cast(list[dict[str, Any]], view["segments"])] == [0]
        streamed = manager.submit(_req("The second, streamed."), keep=False)
        chunks = [chunk async for chunk in manager.stream(streamed)]
        assert chunks[-1].startswith("event: error") and "internal_error" in chunks[-1]
        assert manager.status()["active"] == 0

    asyncio.run(main())


def test_job_store_is_bounded_in_bytes_oldest_finished_first() -> None:
    async def main() -> None:
        async def translate(req: TranslateRequest) -> TranslateResponse:
            return _answer(req)

        manager = JobManager(JobsConfig(max_jobs=1000), translate=translate, segment_chars=100, check=lambda req: "free", max_bytes=200_000)
        kept = []
        for i in range(40):
            job = manager.submit(_req(f"Document {i}. " + "Sentence of some length to take room. " * 100))
            await job.task  # type: ignore[misc]
            kept.append(job.id)
            assert manager.stored_bytes <= manager.max_bytes
        assert 0 < len(manager.jobs) < 40 and list(manager.jobs) == kept[-len(manager.jobs):]
        assert manager.stored_bytes == sum(job.size_bytes for job in manager.jobs.values())

    asyncio.run(main())


def test_job_store_refuses_a_job_the_unfinished_ones_leave_no_room_for() -> None:
    async def main() -> None:
        release = asyncio.Event()

        async def translate(req: TranslateRequest) -> TranslateResponse:
            await release.wait()
            return _answer(req)

        manager = JobManager(JobsConfig(), translate=translate, segment_chars=100, check=lambda req: "free", max_bytes=300_000)
        first = manager.submit(_req("Long enough to fill most of the store. " * 300))
        with pytest.raises(ApiError) as refused:
            manager.submit(_req("And one more that does not fit. " * 300))
        assert refused.value.status == 503 and refused.value.code == "job_store_full" and refused.value.retry_after_s
        assert "300000" in refused.value.message
        release.set()
        await first.task  # type: ignore[misc]
        second = manager.submit(_req("And one more that does not fit. " * 300))  # the finished one makes room
        await second.task  # type: ignore[misc]
        assert list(manager.jobs) == [second.id]

    asyncio.run(main())
