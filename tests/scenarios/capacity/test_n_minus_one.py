"""N-1 on the reference server: with one quality node held down the capacity is lower.

On a two-core machine the bundled model's nodes compete for the same cores, so the node count
barely moves a CPU-bound capacity; a GPU node is its own device. The test therefore makes each
node the bottleneck the way an accelerator is: ten slots per node and an added second on every
gateway-to-node call (the latency fault), so a node serves at most about 9 req/s, the healthy
pool about 18 and the N-1 pool about 9, whatever the neighbours do to the CPU (a busy machine
adds tens of milliseconds to a second of service, and hundreds when it is very busy). The
objectives are a median within 2 s (about a second of queueing) and 80% availability: a busy
machine makes neighbouring answers slow together, so a 10 s step of 60 requests can count as
few as 15 independent ones, which show a median met with room to spare but a P80 only with no
answer late at all.

The rates tried follow from that truth. From 6 req/s the search doubles: 6 req/s loads the N-1
pool and 12 the healthy one to about two thirds (such a step passes); 12 req/s loads the N-1
pool and 24 the healthy one to about 130% (the queue grows by a second every few seconds, so
most of the step's answers wait past the objective). So the healthy search reports at least
12 req/s and the N-1 search less, whichever way the rates in between fall; the precision is
coarse, since the point is the ordering, not the figures.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rushhour.scenarios.cli.capacity import capacity
from tests.support.server import TOKEN, RunningServer, start_server

MIX = {
    "description": "short quality-tier requests of paying tenants, every text different",
    "duration": "24h", "base_rps": 1.0,
    "mix": {"kinds": {"short": {"fraction": 1.0, "chars": {"median": 24, "sigma": 0.3, "min": 12, "max": 40}}},
            "priorities": {"paid": {"fraction": 1.0, "deadline_ms": 5000, "tenants": 4}},
            "modes": {"quality": 1.0}, "repetition": None},
}
SERVER = {"admission": {"slots_per_node": 10}, "cache": {"enabled": False}}
NODE_LATENCY_MS = 1000


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
            "slos": [{"name": "p50", "kind": "latency", "percentile": 50, "threshold_ms": 2000},
                     {"name": "availability", "kind": "availability", "objective": 0.8}]}
    path = tmp_path / "n1.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.timeout(420)
@pytest.mark.slow
@pytest.mark.xdist_group("cpu-c")
def test_n_minus_one_capacity_is_below_full_capacity(tmp_path: Path, slowed_server: RunningServer,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUSHHOUR_ADMIN_TOKEN", TOKEN)
    out = tmp_path / "out"
    result = CliRunner().invoke(capacity, [
        str(_scenario(tmp_path, slowed_server.url)), "--faults", "none,n-1", "--min-rps", "6", "--max-rps", "24",
        "--precision", "0.5", "--step-duration", "10s", "--retry-duration", "0", "--drift-check", "ends",
        "--out", str(out)])
    assert result.exit_code == 0, result.output
    document = json.loads((out / "capacity.json").read_text())
    full, n_minus_one = document["conditions"]
    assert [full["condition"], n_minus_one["condition"]] == ["none", "n-1"]
    assert full["capacity_rps"] is not None and n_minus_one["capacity_rps"] is not None, result.output
    assert full["capacity_rps"] >= 12 > n_minus_one["capacity_rps"], result.output  # see the module's docstring
    assert n_minus_one["capacity_rps"] < full["capacity_rps"], result.output
    assert document["capacity_rps"] == full["capacity_rps"]  # the headline is the first condition
    status = slowed_server.status()
    assert {n["id"]: n["state"] for n in status["nodes"]}["quality-0"] == "ready"  # brought back after
