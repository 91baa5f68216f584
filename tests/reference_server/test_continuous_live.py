"""A cluster whose quality pool batches continuously: same answers as alone, in any batch, and
cold starts, deadlines and the slowdown fault keep working."""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from rushhour.reference_server.model.samples import sample_text
from tests.support.server import RunningServer, all_nodes_ready, module_server, reset_after_each

CONTINUOUS = {
    "pools": {"quality": {"batching": "continuous", "max_batch_tokens": 600}},
    "cache": {"enabled": False},
}
SAME_OUTPUT_DEADLINE_MS = 120_000


# One server for the module (a boot costs more than both tests); each test leaves it healed,
# every node running and ready.
server = module_server("continuous", CONTINUOUS)
healed = reset_after_each(ready=all_nodes_ready, timeout_s=120)


@pytest.mark.slow
@pytest.mark.xdist_group("cpu-a")
def test_continuous_live_same_output_alone_or_in_any_batch(server: RunningServer) -> None:
    texts = [sample_text(n, salt=n) for n in (12, 80, 400, 2500, 33, 150, 900, 5)]

    def translate(text: str) -> dict[str, object]:
        # what is compared is the output: a deadline far beyond the batch's length, so that a busy
        # machine's slower batches are never shed or expired (admission has tests of its own)
        response = server.translate(text, mode="quality", deadline_ms=SAME_OUTPUT_DEADLINE_MS)
        assert response.status_code == 200, response.text
        return response.json()

    alone = [translate(t)["translation"] for t in texts]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(translate, texts * 2))
    assert [a["translation"] for a in together] == alone * 2
    assert all(str(a["node"]).startswith("quality-") for a in together)
    nodes = [n for n in server.status()["nodes"] if n["pool"] == "quality"]
    assert nodes and all(n["state"] == "ready" for n in nodes)


@pytest.mark.slow
@pytest.mark.xdist_group("cpu-a")
def test_continuous_live_cold_start_deadline_and_slowdown(server: RunningServer) -> None:
    assert server.admin("POST", "/admin/nodes/quality-0/restart", json={"warm": False}).status_code == 200
    assert server.admin("POST", "/admin/nodes/quality-1/kill", json={"restart": False}).status_code == 200
    server.wait_for(lambda s: any(n["id"] == "quality-0" and n["state"] == "ready" for n in s["nodes"]))
    first = server.translate(sample_text(60), mode="quality")
    assert first.status_code == 200, first.text
    late = server.translate(sample_text(4000, salt=1), mode="quality", deadline_ms=5)
    assert late.status_code in (503, 504)
    slow = {"kind": "slowdown", "factor": 3.0, "ttl_s": 30}
    text = sample_text(2000, salt=9)
    normal_s = math.inf
    for variant in (text, text + " y"):  # the quicker of two, so a neighbour's burst cannot raise the bar
        started = time.monotonic()
        assert server.translate(variant, mode="quality").status_code == 200
        normal_s = min(normal_s, time.monotonic() - started)
    assert server.admin("POST", "/admin/nodes/quality-0/faults", json=slow).status_code == 200
    started = time.monotonic()
    assert server.translate(text + " x", mode="quality").status_code == 200
    assert time.monotonic() - started > 1.8 * normal_s
