"""N-1 on the reference server: with one quality node held down the capacity is lower.

On a two-core machine the bundled model's nodes compete for the same cores, so the node count
barely moves a CPU-bound capacity; a GPU node is its own device. The test therefore makes each
node the bottleneck the way an accelerator is, and slow enough that a busy machine's CPU is not:
one slot per node and an added 500 ms on every gateway-to-node call (the latency fault), so each
node serves under 2 req/s, the healthy pool under 4 and the N-1 pool under 2, well below what the
CPU allows even with a heavily loaded machine. At such rates a step holds a few dozen requests,
so the objectives are ones a few dozen can show met: a P80 (about 15 independent-equivalent
requests) and 80% availability. The precision is coarse: the point is the ordering, not the
figures.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from scenarios.cli.capacity import capacity
from tests.support.server import TOKEN, RunningServer, start_server

MIX = {
    "description": "short quality-tier requests of paying tenants, every text different",
    "duration": "24h", "base_rps": 1.0,
    "mix": {"kinds": {"short": {"fraction": 1.0, "chars": {"median": 60, "sigma": 0.3, "min": 20, "max": 120}}},
            "priorities": {"paid": {"fraction": 1.0, "deadline_ms": 5000, "tenants": 4}},
            "modes": {"quality": 1.0}, "repetition": None},
}
SERVER = {"admission": {"slots_per_node": 1}, "cache": {"enabled": False}}
NODE_LATENCY_MS = 500


@pytest.fixture
def slowed_server(tmp_path: Path) -> Iterator[RunningServer]:
    server = start_server(tmp_path / "server", SERVER)
    try:
        for node in ("quality-0", "quality-1"):
            response = server.admin("POST", f"/admin/nodes/{node}/faults",
                                    {"kind": "latency", "latency_ms": NODE_LATENCY_MS, "ttl_s": 900})
            assert response.status_code == 200, response.text
        yield server
    finally:
        server.stop()


def _scenario(tmp_path: Path, url: str) -> Path:
    (tmp_path / "quality.yaml").write_text(yaml.safe_dump(MIX))
    data = {"name": "n1", "traffic": {"model": "quality.yaml", "duration": "60s", "seed": 5},
            "target": {"url": url}, "load": {"max_lag_p99_ms": 250, "languages": ["en-de"]},
            "slos": [{"name": "p80", "kind": "latency", "percentile": 80, "threshold_ms": 2000},
                     {"name": "availability", "kind": "availability", "objective": 0.8}]}
    path = tmp_path / "n1.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


# A capacity search is a chain of statistical step verdicts on a real clock: near the knee a busy
# machine can tip a step (it happened in 1 of 3 tries in clean-clone runs on the 2-core VM), so
# this test gets four more tries instead of make test's two; every try still asserts in full.
@pytest.mark.flaky(reruns=4, reruns_delay=5)
@pytest.mark.timeout(420)
@pytest.mark.slow
@pytest.mark.xdist_group("cpu-c")
def test_n_minus_one_capacity_is_below_full_capacity(tmp_path: Path, slowed_server: RunningServer,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUSHHOUR_ADMIN_TOKEN", TOKEN)
    out = tmp_path / "out"
    # The pools' P80 capacities move with the machine's load (N-1 measured between 0.8 and 1.4
    # req/s, the healthy pool between 2.8 and 4.5): from 1 req/s a busy machine can leave the N-1
    # search no passing rate. 0.8 is the lowest rate at which a 20 s step holds the 15 requests a
    # P80 needs to be shown met.
    result = CliRunner().invoke(capacity, [
        str(_scenario(tmp_path, slowed_server.url)), "--faults", "none,n-1", "--min-rps", "0.8", "--max-rps", "8",
        "--precision", "0.5", "--step-duration", "20s", "--out", str(out)])
    assert result.exit_code == 0, result.output
    document = json.loads((out / "capacity.json").read_text())
    full, n_minus_one = document["conditions"]
    assert [full["condition"], n_minus_one["condition"]] == ["none", "n-1"]
    assert full["capacity_rps"] is not None and n_minus_one["capacity_rps"] is not None, result.output
    assert n_minus_one["capacity_rps"] < full["capacity_rps"], result.output
    assert document["capacity_rps"] == full["capacity_rps"]  # the headline is the first condition
    status = slowed_server.status()
    assert {n["id"]: n["state"] for n in status["nodes"]}["quality-0"] == "ready"  # brought back after
