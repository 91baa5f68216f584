"""benchmarks.gate_nights_work: the work factor counts CPU seconds and refuses answers not computed."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
import pytest

from benchmarks.gate_nights_work import measure_work_on, process_cpu_s, served_by_quality

BASE, CAND = "http://127.0.0.1:1", "http://127.0.0.1:2"


def _spin(cpu_s: float) -> None:
    end = time.thread_time() + cpu_s
    while time.thread_time() < end:
        pass


def _server(cost_s: dict[str, float], answer: dict[str, object]) -> httpx.Client:
    """Stand-ins whose quality compute costs a known CPU time per request, in this thread."""
    def handle(request: httpx.Request) -> httpx.Response:
        _spin(cost_s[f"{request.url.scheme}://{request.url.host}:{request.url.port}"])
        return httpx.Response(200, json={**answer, "timing": {"infer_ms": 5.0}})
    return httpx.Client(transport=httpx.MockTransport(handle))


def test_measure_work_on_finds_the_cpu_ratio_of_two_stand_ins() -> None:
    client = _server({BASE: 0.010, CAND: 0.013}, {"model": "quality", "cached": False, "degraded": False})
    measure = measure_work_on((BASE, CAND), client, (time.thread_time, time.thread_time), requests=25, warmup=3)
    assert measure.cpu_factor == pytest.approx(1.3, abs=0.06)
    assert measure.wall_factor == 1.0 and measure.as_record()["requests"] == 25


@pytest.mark.parametrize("answer", [{"model": "fast", "cached": False, "degraded": False},
                                    {"model": "quality", "cached": True, "degraded": False},
                                    {"model": "quality", "cached": False, "degraded": True}])
def test_an_answer_not_computed_by_the_quality_model_stops_the_measurement(answer: dict[str, object]) -> None:
    with pytest.raises(RuntimeError, match="needs every answer computed by the quality model"):
        served_by_quality(answer, BASE)
    client = _server({BASE: 0.0, CAND: 0.0}, answer)
    with pytest.raises(RuntimeError, match=BASE):
        measure_work_on((BASE, CAND), client, (time.thread_time, time.thread_time), requests=2, warmup=0)


def test_process_cpu_s_counts_a_child_s_busy_time_not_its_sleep() -> None:
    code = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\ntime.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 20.0
        while process_cpu_s(child.pid) < 0.3 and time.monotonic() < deadline:
            time.sleep(0.05)
        used = process_cpu_s(child.pid)
        time.sleep(0.3)
        assert 0.3 <= used <= process_cpu_s(child.pid) < used + 0.1
    finally:
        child.kill()
        child.wait()
    assert process_cpu_s(os.getpid()) > 0.0
