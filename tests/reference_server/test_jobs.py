"""Long-document jobs and the SSE stream: segmentation, ordering, progress, bounds, live API."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, cast

import pytest

from rushhour.reference_server.config import JobsConfig
from rushhour.reference_server.gateway.api import (
    ApiError,
    Timing,
    TranslateRequest,
    TranslateResponse,
)
from rushhour.reference_server.gateway.jobs import JobManager, split_segments
from tests.support.server import RunningServer, module_server


def _answer(req: TranslateRequest) -> TranslateResponse:
    return TranslateResponse(
        translation=req.text.upper(), model="quality", cached=False, degraded=False, node="fake-0",
        chars=len(req.text), timing=Timing(queue_ms=0, infer_ms=0, total_ms=0),
    )


def _req(text: str) -> TranslateRequest:
    return TranslateRequest(text=text, source_lang="en", target_lang="de")


def _manager(translate, **config: int) -> JobManager:
    return JobManager(JobsConfig(**config), translate=translate, segment_chars=40, check=lambda req: None)


def _segments(view: dict[str, object]) -> list[dict[str, Any]]:
    """A job view's published segments (the view is JSON: its values are typed as objects)."""
    return cast(list[dict[str, Any]], view["segments"])


def test_split_segments_on_sentence_ends_followed_by_space() -> None:
    text = "It costs 3.50 today. Really? Yes!  Ends without a stop"
    assert split_segments(text, 100) == ["It costs 3.50 today.", "Really?", "Yes!", "Ends without a stop"]


def test_split_segments_cuts_a_sentence_longer_than_the_limit() -> None:
    assert split_segments("abcdefghij. xy", 4) == ["abcd", "efgh", "ij.", "xy"]
    assert split_segments("   ", 4) == []


def test_job_publishes_segments_in_order_as_they_finish() -> None:
    async def main() -> None:
        gates = [asyncio.Event() for _ in range(3)]

        async def translate(req: TranslateRequest) -> TranslateResponse:
            await gates[int(req.text[1])].wait()
            return _answer(req)

        manager = _manager(translate, concurrency=3)
        job = manager.submit(_req("s0 one. s1 two. s2 three."))
        await asyncio.sleep(0)
        gates[2].set()  # the last finishes first: not yet publishable
        await asyncio.sleep(0.01)
        assert job.view()["progress"] == {"done": 1, "total": 3} and job.view()["segments"] == []
        gates[0].set()
        await asyncio.sleep(0.01)
        view = job.view()
        assert view["state"] == "running" and [s["index"] for s in _segments(view)] == [0]
        assert view["eta_s"] is not None
        gates[1].set()
        await job.task  # type: ignore[misc]
        view = job.view()
        assert view["state"] == "done" and view["eta_s"] == 0.0
        assert [s["translation"] for s in _segments(view)] == ["S0 ONE.", "S1 TWO.", "S2 THREE."]

    asyncio.run(main())


def test_job_retries_shed_segments_and_fails_on_other_errors() -> None:
    async def main() -> None:
        calls: list[str] = []

        async def translate(req: TranslateRequest) -> TranslateResponse:
            calls.append(req.text)
            if len(calls) == 1:
                raise ApiError(429, "rate_limited", "slow down", retry_after_s=0.01)
            if "bad" in req.text:
                raise ApiError(422, "unsupported_language", "no such language")
            return _answer(req)

        manager = _manager(translate, concurrency=1)
        ok = manager.submit(_req("One. Two."))
        await ok.task  # type: ignore[misc]
        assert ok.state == "done" and calls == ["One.", "One.", "Two."]
        failed = manager.submit(_req("Fine. bad one. Never reached."))
        await failed.task  # type: ignore[misc]
        assert failed.state == "failed" and failed.error == {"code": "unsupported_language", "message": "no such language"}
        assert [s["index"] for s in _segments(failed.view())] == [0]

    asyncio.run(main())


def test_job_manager_bounds_active_and_kept_jobs() -> None:
    async def main() -> None:
        release = asyncio.Event()

        async def translate(req: TranslateRequest) -> TranslateResponse:
            await release.wait()
            return _answer(req)

        manager = _manager(translate, max_active=2, max_jobs=2, max_chars=100)
        first, second = manager.submit(_req("A.")), manager.submit(_req("B."))
        with pytest.raises(ApiError) as busy:
            manager.submit(_req("C."))
        assert busy.value.status == 503 and busy.value.retry_after_s
        with pytest.raises(ApiError) as large:
            manager.submit(_req("x" * 101))
        assert large.value.status == 413
        release.set()
        await asyncio.gather(first.task, second.task)  # type: ignore[arg-type]
        third = manager.submit(_req("D."))
        await third.task  # type: ignore[misc]
        assert list(manager.jobs) == [second.id, third.id]  # the oldest finished was evicted
        with pytest.raises(ApiError) as gone:
            manager.get(first.id)
        assert gone.value.status == 404

    asyncio.run(main())


def test_stream_sends_segments_in_order_then_done() -> None:
    async def main() -> list[str]:
        async def translate(req: TranslateRequest) -> TranslateResponse:
            await asyncio.sleep(0.01 * (5 - len(req.text) % 5))
            return _answer(req)

        manager = _manager(translate, concurrency=4)
        job = manager.submit(_req("One. Three. Seventeen. Four. Fifty-five."), keep=False)
        return [chunk async for chunk in manager.stream(job)]

    chunks = asyncio.run(main())
    events = [(c.split("\n")[0], json.loads(c.split("\n")[1][len("data: "):])) for c in chunks]
    assert [e for e, _ in events] == ["event: segment"] * 5 + ["event: done"]
    assert [d["index"] for _, d in events[:-1]] == [0, 1, 2, 3, 4]
    assert events[-1][1]["segments"] == 5


def test_job_manager_cancel_stops_a_job_before_its_untranslated_segments() -> None:
    async def main() -> None:
        calls: list[str] = []
        release = asyncio.Event()

        async def translate(req: TranslateRequest) -> TranslateResponse:
            calls.append(req.text)
            if len(calls) > 1:
                await release.wait()
            return _answer(req)

        manager = _manager(translate, concurrency=1)
        job = manager.submit(_req("One. Two. Three. Four."))
        while len(calls) < 2:  # the first segment done, the second waiting
            await asyncio.sleep(0.001)
        cancelled = await manager.cancel(job.id)
        assert cancelled is job and job.state == "failed" and job.error is not None
        assert job.error["code"] == "cancelled"
        assert job.view()["progress"] == {"done": 1, "total": 4} and manager.status()["active"] == 0
        release.set()
        await asyncio.sleep(0.01)
        assert calls == ["One.", "Two."]  # the third and fourth were never sent

        done = manager.submit(_req("Five."))
        await done.task  # type: ignore[misc]
        assert (await manager.cancel(done.id)).state == "done"  # a finished job is answered as it is
        with pytest.raises(ApiError) as unknown:
            await manager.cancel("nope")
        assert unknown.value.status == 404

    asyncio.run(main())


def test_job_manager_cancel_all_stops_every_active_job_streams_included() -> None:
    async def main() -> None:
        release = asyncio.Event()

        async def translate(req: TranslateRequest) -> TranslateResponse:
            await release.wait()
            return _answer(req)

        manager = _manager(translate, concurrency=1)
        kept = manager.submit(_req("A. B."))
        streamed = manager.submit(_req("C. D."), keep=False)
        await asyncio.sleep(0.01)
        assert manager.status()["active"] == 2
        assert await manager.cancel_all() == 2
        assert manager.status()["active"] == 0 and await manager.cancel_all() == 0
        assert {kept.state, streamed.state} == {"failed"}
        assert kept.error == streamed.error == {"code": "cancelled", "message": "The job was cancelled."}

        unstarted = manager.submit(_req("E. F."))  # cancelled before its task ever ran
        assert await manager.cancel_all() == 1
        assert unstarted.state == "failed" and unstarted.error == kept.error and manager.status()["active"] == 0

    asyncio.run(main())


# ---- live ---------------------------------------------------------------------------------------
SENTENCES = [f"Sentence number {i} of the long terms and conditions, which nobody reads to the end." for i in range(16)]
SLOW_BATCHES = {"pools": {"quality": {"batching": "dynamic", "max_queue_delay_ms": 50}}, "jobs": {"concurrency": 1}}  # batches wait 50 ms


# One server for the live tests: each leaves no job running, and their texts do not meet in the
# cache (the stream goes to French, the jobs to German).
server = module_server("jobs", SLOW_BATCHES)


@pytest.mark.slow
def test_job_live_returns_first_segment_before_the_end_with_monotone_progress(server: RunningServer) -> None:
    created = server.client.post("/v1/jobs", json={"text": " ".join(SENTENCES), "source_lang": "en", "target_lang": "de"})
    assert created.status_code == 202, created.text
    assert created.headers["X-Queue-Position"] == "0" and "X-Estimated-Wait-Ms" in created.headers
    job_id = created.json()["id"]
    views = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        view = server.client.get(f"/v1/jobs/{job_id}").json()
        views.append(view)
        if view["state"] in ("done", "failed"):
            break
        time.sleep(0.01)
    assert views[-1]["state"] == "done", views[-1]
    done = [v["progress"]["done"] for v in views]
    assert done == sorted(done) and done[-1] == len(SENTENCES)
    assert any(0 < len(v["segments"]) < len(SENTENCES) and v["state"] == "running" for v in views)
    segments = views[-1]["segments"]
    assert [s["index"] for s in segments] == list(range(len(SENTENCES)))
    # Every segment went through the normal path and its cache: asking for one alone is a hit.
    alone = server.translate(SENTENCES[3]).json()
    assert alone["cached"] is True and alone["translation"] == segments[3]["translation"]


@pytest.mark.slow
def test_stream_live_yields_segments_in_order_then_done(server: RunningServer) -> None:
    body = {"text": " ".join(SENTENCES[:6]), "source_lang": "en", "target_lang": "fr", "mode": "fast"}
    events: list[tuple[str, dict]] = []
    with server.client.stream("POST", "/v1/translate/stream", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert "X-Queue-Position" in response.headers
        event = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[len("event: "):]
            elif line.startswith("data: "):
                events.append((event, json.loads(line[len("data: "):])))
    assert [e for e, _ in events] == ["segment"] * 6 + ["done"]
    assert [d["index"] for _, d in events[:-1]] == list(range(6))
    assert all(d["model"] == "fast" and d["translation"] for _, d in events[:-1])


@pytest.mark.slow
def test_job_live_unknown_id_is_404_and_bad_language_is_422(server: RunningServer) -> None:
    missing = server.client.get("/v1/jobs/nope")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "unknown_job"
    bad = server.client.post("/v1/jobs", json={"text": "Hi.", "source_lang": "en", "target_lang": "xx"})
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "unsupported_language"


def test_job_manager_keeps_room_for_higher_priority_classes() -> None:
    async def main() -> None:
        release = asyncio.Event()

        async def translate(req: TranslateRequest) -> TranslateResponse:
            await release.wait()
            return _answer(req)

        ranks = {"paid": 0, "free": 1, "batch": 2}
        manager = JobManager(
            JobsConfig(max_active=4, reserve_per_rank=0.25), translate=translate, segment_chars=40,
            check=lambda req: req.priority, rank_of=ranks.__getitem__,
        )
        assert [manager.active_limit(r) for r in (0, 1, 2)] == [4, 3, 2]
        jobs = [manager.submit(_req(f"Free {i}.").model_copy(update={"priority": "free"})) for i in range(3)]
        with pytest.raises(ApiError) as refused:
            manager.submit(_req("One free too many.").model_copy(update={"priority": "free"}))
        assert refused.value.status == 503 and '"free"' in refused.value.message
        with pytest.raises(ApiError):
            manager.submit(_req("Batch waits.").model_copy(update={"priority": "batch"}))
        jobs.append(manager.submit(_req("Paid still gets in.").model_copy(update={"priority": "paid"})))
        release.set()
        await asyncio.gather(*(job.task for job in jobs))  # type: ignore[arg-type]

    asyncio.run(main())


@pytest.mark.slow
def test_job_live_delete_cancels_a_running_job_and_admin_cancels_them_all(server: RunningServer) -> None:
    body = {"text": " ".join(s.replace("Sentence", "Clause") for s in SENTENCES), "source_lang": "en",
            "target_lang": "es"}
    job_id = server.client.post("/v1/jobs", json=body).json()["id"]
    cancelled = server.client.delete(f"/v1/jobs/{job_id}")
    assert cancelled.status_code == 200, cancelled.text
    view = cancelled.json()
    assert view["state"] == "failed" and view["error"]["code"] == "cancelled"
    assert view["progress"]["done"] < len(SENTENCES)
    assert server.client.get(f"/v1/jobs/{job_id}").json() == view  # it stays cancelled
    assert server.client.delete("/v1/jobs/nope").status_code == 404

    others = [server.client.post("/v1/jobs", json=body | {"target_lang": "fr"}).json()["id"] for _ in range(2)]
    assert server.admin("POST", "/admin/jobs/cancel", token=None).status_code == 401
    stopped = server.admin("POST", "/admin/jobs/cancel")
    assert stopped.status_code == 200 and stopped.json() == {"cancelled": 2}
    assert {server.client.get(f"/v1/jobs/{i}").json()["error"]["code"] for i in others} == {"cancelled"}
    assert server.status()["jobs"]["active"] == 0
