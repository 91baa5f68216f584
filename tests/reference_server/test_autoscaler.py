"""The autoscaler: pure decisions on a fake clock, and a live pool that grows and shrinks."""

from __future__ import annotations

import concurrent.futures
import itertools
import random
import threading
from datetime import datetime, timedelta
from typing import Any

import pytest

from rushhour.reference_server.config import AutoscaleConfig, ScheduledPeak
from rushhour.reference_server.gateway.autoscaler import (
    Decision,
    History,
    Sample,
    decide,
    floor_at,
    peak_offset_s,
    schedule_steps,
)
from tests.support.server import RunningServer

POLICY = AutoscaleConfig(
    min_nodes=1, max_nodes=4, target_queue_per_node=4, scale_up_cooldown_s=5, scale_down_cooldown_s=20, interval_s=1, window_s=3,
)


class Simulation:
    """Feeds a signal into `decide` once a second on a fake clock and applies what it decides."""

    def __init__(self, policy: AutoscaleConfig = POLICY, nodes: int = 1) -> None:
        self.policy, self.nodes, self.now = policy, nodes, 0.0
        self.samples: list[Sample] = []
        self.history = History()
        self.changes: list[tuple[float, int, str]] = []

    def tick(self, queue: float, utilisation: float = 0.0, floor: int | None = None) -> Decision:
        self.now += self.policy.interval_s
        self.samples.append(Sample(self.now, queue, utilisation, self.nodes))
        decision = decide(self.policy, self.samples, self.nodes, self.now, self.history, floor)
        if decision.nodes > self.nodes:
            self.history = History(self.now, self.history.last_down_at)
        elif decision.nodes < self.nodes:
            self.history = History(self.history.last_up_at, self.now)
        if decision.nodes != self.nodes:
            self.changes.append((self.now, decision.nodes, decision.reason))
        self.nodes = decision.nodes
        return decision


def test_autoscaler_scales_up_under_a_rising_queue_and_down_after() -> None:
    sim = Simulation()
    for _ in range(10):
        sim.tick(queue=0)
    assert sim.nodes == 1
    for step in range(30):
        sim.tick(queue=min(2.0 * step, 14.0))  # queue rises to 14 waiting: 4 nodes at 4 each
    assert sim.nodes == 4
    assert all(reason == "queue" for _, _, reason in sim.changes)
    grown_at = sim.changes[-1][0]
    for _ in range(60):
        sim.tick(queue=0)
    assert sim.nodes == 1
    assert sim.changes[-1][2] == "idle"
    assert sim.changes[-1][0] - grown_at >= POLICY.scale_down_cooldown_s


def test_autoscaler_waits_out_the_scale_up_cooldown_between_steps() -> None:
    sim = Simulation()
    for _ in range(20):
        sim.tick(queue=7)  # 7 waiting at 4 per node: 2 nodes; then stays
    up_times = [t for t, n, _ in sim.changes]
    assert sim.nodes == 2 and len(up_times) == 1


def _reversals(start: int, changes: list[tuple[float, int, str]]) -> int:
    sizes = [start] + [n for _, n, _ in changes]
    ups = [new > old for old, new in itertools.pairwise(sizes)]
    return sum(1 for a, b in itertools.pairwise(ups) if a != b)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.slow
def test_autoscaler_does_not_flap_on_a_noisy_signal(seed: int) -> None:
    rng = random.Random(seed)
    policy = POLICY.model_copy(update={"window_s": 5.0, "max_nodes": 6})
    sim = Simulation(policy, nodes=2)
    for _ in range(400):  # mean 8 waiting = 2 nodes' worth at target, noise of +-5 either way
        sim.tick(queue=max(0.0, rng.gauss(8.0, 5.0)))
    assert _reversals(2, sim.changes) <= 1, sim.changes  # never up, down and up again
    assert len(sim.changes) <= 3, sim.changes
    assert sim.nodes <= 4


def test_autoscaler_single_spike_does_not_scale_up() -> None:
    sim = Simulation()
    for step in range(20):
        sim.tick(queue=9 if step == 10 else 0)
    assert sim.changes == []


def test_autoscaler_scales_on_utilisation_when_nothing_waits() -> None:
    sim = Simulation(nodes=2)
    for _ in range(5):
        sim.tick(queue=0, utilisation=1.0)
    assert sim.nodes == 3 and sim.changes[0][2] == "utilisation"


def test_autoscaler_keeps_within_bounds() -> None:
    assert decide(POLICY, [], 0, 1.0, History()) == Decision(1, "bounds")
    assert decide(POLICY, [], 6, 1.0, History()) == Decision(4, "bounds")
    sim = Simulation()
    for _ in range(30):
        sim.tick(queue=100)
    assert sim.nodes == POLICY.max_nodes


def test_autoscaler_schedule_floor_raises_the_pool_regardless_of_load() -> None:
    sim = Simulation()
    assert sim.tick(queue=0, floor=3) == Decision(3, "schedule")
    for _ in range(60):
        sim.tick(queue=0, floor=3)
    assert sim.nodes == 3  # the floor holds against an idle signal
    for _ in range(60):
        sim.tick(queue=0, floor=1)
    assert sim.nodes == 1


def test_schedule_floor_begins_warm_ahead_of_the_peak() -> None:
    steps = schedule_steps([ScheduledPeak(at_s=100, nodes=3, warm_ahead_s=30), ScheduledPeak(at_s=200, nodes=1)], 0.0)
    assert steps == [(70.0, 3), (200.0, 1)]
    assert [floor_at(steps, t) for t in (0, 69.9, 70, 150, 200)] == [None, None, 3, 3, 1]


def test_schedule_reads_wall_clock_times() -> None:
    start = datetime(2030, 5, 1, 11, 0, 0).astimezone()
    iso = ScheduledPeak(at_clock=(start + timedelta(minutes=90)).isoformat(), nodes=2)
    assert peak_offset_s(iso, start.timestamp()) == pytest.approx(5400.0)
    noon = ScheduledPeak(at_clock="12:00", nodes=2)
    assert peak_offset_s(noon, start.timestamp()) == pytest.approx(3600.0)
    ten = ScheduledPeak(at_clock="10:00", nodes=2)  # already past: tomorrow
    assert peak_offset_s(ten, start.timestamp()) == pytest.approx(23 * 3600.0)
    with pytest.raises(ValueError, match='"noonish"'):
        peak_offset_s(ScheduledPeak(at_clock="noonish", nodes=2), start.timestamp())


def test_autoscale_config_rejects_inverted_bounds() -> None:
    with pytest.raises(ValueError, match="min_nodes"):
        AutoscaleConfig(min_nodes=3, max_nodes=2)
    with pytest.raises(ValueError, match="exactly one"):
        ScheduledPeak(nodes=2)


# ---- live ---------------------------------------------------------------------------------------
ELASTIC = {
    "pools": {
        "fast": None,
        "quality": {
            "nodes": 1, "max_batch_size": 2, "max_queue_delay_ms": 2,
            "autoscale": {"min_nodes": 1, "max_nodes": 2, "target_queue_per_node": 2, "interval_s": 0.2, "window_s": 0.6,
                          "scale_up_cooldown_s": 0, "scale_down_cooldown_s": 2},
        },
    },
    "admission": {"slots_per_node": 1},
    "cache": {"enabled": False},
}


def _pool_size(status: dict[str, Any], pool: str = "quality") -> int:
    return sum(1 for n in status["nodes"] if n["pool"] == pool)


@pytest.mark.slow
def test_autoscaler_live_pool_grows_under_load_and_shrinks_after(server_factory) -> None:
    server: RunningServer = server_factory(ELASTIC)
    assert _pool_size(server.status()) == 1
    stop = threading.Event()

    def load(worker: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            server.translate(f"Worker {worker} keeps the pool busy with sentence number {n}. " * 6, deadline_ms=60_000)

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        futures = [pool.submit(load, w) for w in range(6)]
        try:
            grown = server.wait_for(lambda s: _pool_size(s) == 2, timeout_s=60)
        finally:
            stop.set()
        for future in futures:
            future.result()
    assert grown["pools"]["quality"]["autoscaler"]["max_nodes"] == 2
    shrunk = server.wait_for(lambda s: _pool_size(s) == 1 and s["pools"]["quality"]["autoscaler"]["target"] == 1, timeout_s=60)
    assert shrunk["pools"]["quality"]["autoscaler"]["reason"] == "idle"
    scale_metric = server.client.get("/metrics").text
    assert 'rushhour_scale_events_total{direction="up",pool="quality"} 1.0' in scale_metric
    assert 'rushhour_scale_events_total{direction="down",pool="quality"} 1.0' in scale_metric


@pytest.mark.slow
def test_autoscaler_live_schedule_scales_ahead_of_the_peak(server_factory) -> None:
    config = {
        "pools": {"fast": None, "quality": {"nodes": 1, "autoscale": {
            "min_nodes": 1, "max_nodes": 2, "interval_s": 0.2, "scale_down_cooldown_s": 600,
            "schedule": [{"at_s": 60, "nodes": 2, "warm_ahead_s": 55}],
        }}},
    }
    server: RunningServer = server_factory(config)
    # The floor begins 5 s after start, 55 s ahead of the peak: the pool grows long before it.
    grown = server.wait_for(lambda s: _pool_size(s) == 2, timeout_s=60, interval_s=0.2)
    assert grown["uptime_s"] < 60
    view = grown["pools"]["quality"]["autoscaler"]
    assert (view["target"], view["reason"], view["schedule_floor"]) == (2, "schedule", 2)
    # The new node goes through its warm-up and becomes ready (warm) without any traffic.
    ready = server.wait_for(lambda s: sum(1 for n in s["nodes"] if n["state"] == "ready") == 2, timeout_s=90)
    assert all(n["warm"] for n in ready["nodes"])
    # A chaos rollback's reset keeps the capacity the autoscaler asked for (2), not the start size (1).
    assert server.admin("POST", "/admin/reset").status_code == 200
    assert _pool_size(server.status()) == 2


def test_autoscaler_epoch_moves_the_schedule_to_the_drill_clock() -> None:
    from rushhour.reference_server.config import load_config
    from rushhour.reference_server.gateway.autoscaler import Autoscaler, floor_at
    from rushhour.reference_server.gateway.metrics import Metrics

    config = load_config()
    config.pools["quality"].autoscale = AutoscaleConfig(
        min_nodes=1, max_nodes=3, schedule=[{"at_s": 30, "nodes": 3, "warm_ahead_s": 10}]
    )
    mono, wall = [1000.0], [5000.0]
    scaler = Autoscaler(config, cluster=None, dispatchers={}, metrics=Metrics(), clock=lambda: mono[0], wall=lambda: wall[0])  # type: ignore[arg-type]
    steps = scaler.pools["quality"].steps
    assert floor_at(steps, 19.0) is None and floor_at(steps, 20.0) == 3
    mono[0] += 12.0
    wall[0] += 12.0
    scaler.set_epoch(wall[0])  # the drill starts now, 12 s after the server
    assert scaler.started == mono[0]
    assert floor_at(scaler.pools["quality"].steps, 19.0) is None
