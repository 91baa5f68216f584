"""Elastic pools: size each autoscaled pool from its load and from a schedule of known peaks.

The core is `decide`, a pure function of the signal history, the pool's current size, the
time of the last scale-ups and -downs and the schedule's floor, so it can be tested with a fake
clock. It is deliberately asymmetric, the way Kubernetes' HPA is: it scales up on the signal
averaged over a short window (quick to react, blind to single spikes) and scales down only when
every smoothed value over the whole down cool-down asked for fewer nodes (slow to give back,
so a noisy signal cannot make it flap). The schedule adds a floor that rises `warm_ahead_s`
before each peak, so new nodes have finished their warm-up when the peak arrives.

`Autoscaler` is the thin async loop that samples every pool, applies decisions through
`Cluster.scale` (which drains a node before stopping it) and keeps the state `/v1/status` shows.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from datetime import time as clock_time

from prometheus_client import Gauge

from rushhour.reference_server.aio import cancel_and_wait
from rushhour.reference_server.config import AutoscaleConfig, ScheduledPeak, ServerConfig
from rushhour.reference_server.gateway.admission import PoolDispatcher
from rushhour.reference_server.gateway.cluster import Cluster
from rushhour.reference_server.gateway.metrics import Metrics

log = logging.getLogger("rushhour.gateway")
TOLERANCE = 0.1  # grow only when the need exceeds the current size by more than this
DOWN_HEADROOM = 0.3  # shrink only to a size the worst recent need fills to at most 70%


@dataclass(frozen=True)
class Sample:
    """One reading of a pool's load: requests waiting, busy slots over capacity, and the pool's
    size then (so utilisation read on an older size still means the same amount of work)."""

    at: float
    queue: float
    utilisation: float
    nodes: int


@dataclass(frozen=True)
class Decision:
    nodes: int
    reason: str  # queue, utilisation, schedule, bounds, idle or hold


@dataclass(frozen=True)
class History:
    """When the pool last grew and shrank (monotonic seconds; -inf for never)."""

    last_up_at: float = -math.inf
    last_down_at: float = -math.inf


def smoothed(policy: AutoscaleConfig, samples: Sequence[Sample], at: float) -> Sample | None:
    """The mean of the samples in the `window_s` ending at `at`; None when there are none."""
    window = [s for s in samples if at - policy.window_s < s.at <= at]
    if not window:
        return None
    count = len(window)
    return Sample(at, sum(s.queue for s in window) / count, sum(s.utilisation for s in window) / count, window[-1].nodes)


def need(policy: AutoscaleConfig, signal: Sample) -> tuple[float, str]:
    """Nodes (fractional) that one signal asks for, and which metric asks for more."""
    by_queue = signal.queue / policy.target_queue_per_node
    by_util = signal.nodes * signal.utilisation / policy.target_utilisation
    return (by_queue, "queue") if by_queue >= by_util else (by_util, "utilisation")


def _needs_over(policy: AutoscaleConfig, samples: Sequence[Sample], since: float, now: float) -> list[tuple[float, str]]:
    """The smoothed need at every sample time in (since, now]."""
    return [need(policy, smoothed(policy, samples, s.at) or s) for s in samples if since < s.at <= now]


def decide(
    policy: AutoscaleConfig, samples: Sequence[Sample], current: int, now: float, history: History, floor: int | None = None
) -> Decision:
    """The size the pool should have now. `floor` is the schedule's size for this moment.

    Up: the smoothed need stayed above the current size (plus a tolerance band) for a whole
    window. Down: after a whole cool-down, to the size that covers the largest smoothed need of
    that cool-down with DOWN_HEADROOM to spare. The gap between the two is the hysteresis that
    keeps a noisy signal from flapping the pool."""
    low, high = policy.min_nodes, policy.max_nodes
    floor_nodes = min(max(floor or 0, low), high)
    if current < floor_nodes:
        return Decision(floor_nodes, "schedule" if floor_nodes > low else "bounds")
    if current > high:
        return Decision(high, "bounds")
    if not samples or samples[0].at > now - policy.window_s + policy.interval_s / 2:
        return Decision(current, "hold")  # not watched for a whole window yet
    sustained = min(_needs_over(policy, samples, now - policy.window_s, now) or [(0.0, "hold")])
    if sustained[0] > current * (1 + TOLERANCE) and now - history.last_up_at >= policy.scale_up_cooldown_s:
        target = min(math.ceil(sustained[0]), high)
        if target > current:
            return Decision(target, sustained[1])
    return _scale_down(policy, samples, current, now, history, floor_nodes)


def _scale_down(policy: AutoscaleConfig, samples: Sequence[Sample], current: int, now: float, history: History,
                floor_nodes: int) -> Decision:
    cooldown = policy.scale_down_cooldown_s
    if now - max(history.last_up_at, history.last_down_at) < cooldown:
        return Decision(current, "hold")
    if samples[0].at > now - cooldown + policy.interval_s / 2:
        return Decision(current, "hold")  # not yet watched for a whole cool-down
    worst = max(n for n, _ in _needs_over(policy, samples, now - max(cooldown, policy.interval_s), now))
    target = max(math.ceil(worst / (1 - DOWN_HEADROOM) - 1e-9), floor_nodes, policy.min_nodes)
    return Decision(target, "idle") if target < current else Decision(current, "hold")


# ---- the schedule ------------------------------------------------------------------------------
def peak_offset_s(peak: ScheduledPeak, started_wall: float) -> float:
    """Seconds from server start to the peak itself."""
    if peak.at_s is not None:
        return peak.at_s
    text = str(peak.at_clock)
    start = datetime.fromtimestamp(started_wall).astimezone()
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        try:
            day_time = clock_time.fromisoformat(text)
        except ValueError:
            raise ValueError(f'at_clock "{text}" is neither an ISO 8601 date-time nor a time of day HH:MM[:SS].') from None
        when = datetime.combine(start.date(), day_time, tzinfo=start.tzinfo)
        if when < start:
            when += timedelta(days=1)
    if when.tzinfo is None:
        when = when.astimezone()
    return when.timestamp() - started_wall


def schedule_steps(peaks: Sequence[ScheduledPeak], started_wall: float) -> list[tuple[float, int]]:
    """(seconds since start from which the floor applies, floor), in time order."""
    return sorted((peak_offset_s(p, started_wall) - p.warm_ahead_s, p.nodes) for p in peaks)


def floor_at(steps: Sequence[tuple[float, int]], elapsed_s: float) -> int | None:
    """The floor of the latest step already begun; None before the first."""
    floor = None
    for begins, nodes in steps:
        if begins <= elapsed_s:
            floor = nodes
    return floor


# ---- the loop ----------------------------------------------------------------------------------
@dataclass
class PoolScaler:
    policy: AutoscaleConfig
    steps: list[tuple[float, int]]
    samples: deque[Sample] = field(default_factory=deque)
    history: History = field(default_factory=History)
    target: int = 0
    reason: str = "start"
    floor: int | None = None

    def remember(self, sample: Sample) -> None:
        self.samples.append(sample)
        keep = max(self.policy.scale_down_cooldown_s, self.policy.window_s) + 2 * self.policy.interval_s
        while self.samples and self.samples[0].at < sample.at - keep:
            self.samples.popleft()


class Autoscaler:
    """Applies `decide` to every pool that has an `autoscale` section, every `interval_s`."""

    def __init__(
        self, config: ServerConfig, cluster: Cluster, dispatchers: dict[str, PoolDispatcher], metrics: Metrics,
        *, clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time,
    ) -> None:
        self.config, self.cluster, self.dispatchers, self._clock, self._wall = config, cluster, dispatchers, clock, wall
        self.started = clock()
        started_wall = wall()
        self.pools = {
            name: PoolScaler(pool.autoscale, schedule_steps(pool.autoscale.schedule, started_wall), target=pool.nodes)
            for name, pool in config.pools.items() if pool.autoscale is not None
        }
        self.target_gauge = Gauge("rushhour_autoscaler_target_nodes", "Nodes the autoscaler wants per pool.",
                                  ["pool"], registry=metrics.registry)
        self._task: asyncio.Task[None] | None = None

    def set_epoch(self, epoch_wall: float) -> None:
        """Count schedule times from `epoch_wall` (a drill's start) instead of the server's start,
        so a pre-warm planned for the promotion lines up with the drill's clock."""
        self.started = self._clock() - (self._wall() - epoch_wall)
        for scaler in self.pools.values():
            scaler.steps = schedule_steps(scaler.policy.schedule, epoch_wall)

    def sample(self, pool: str, now: float) -> Sample:
        nodes = self.cluster.pool_nodes(pool)
        dispatcher = self.dispatchers[pool]
        cfg = self.config.pools[pool]
        capacity = (self.config.admission.slots_per_node or 2 * cfg.max_batch_size) * sum(1 for n in nodes if n.routable())
        queue = dispatcher.queued() + sum(n.queue_depth for n in nodes)
        if capacity > 0:
            utilisation = min(dispatcher.busy / capacity, 2.0)
        else:
            utilisation = 1.0 if dispatcher.busy or queue else 0.0
        return Sample(now, float(queue), utilisation, len(nodes))

    async def step(self) -> None:
        """One round: sample, decide and (when the size changes) scale each pool in turn."""
        now = self._clock()
        for name, scaler in self.pools.items():
            scaler.remember(self.sample(name, now))
            current = len(self.cluster.pool_nodes(name))
            scaler.floor = floor_at(scaler.steps, now - self.started)
            decision = decide(scaler.policy, scaler.samples, current, now, scaler.history, scaler.floor)
            scaler.target = decision.nodes
            self.target_gauge.labels(name).set(decision.nodes)
            if decision.nodes == current:
                continue
            scaler.reason = decision.reason
            if decision.nodes > current:
                scaler.history = History(now, scaler.history.last_down_at)
            else:
                scaler.history = History(scaler.history.last_up_at, now)
            log.info("autoscaler: pool %s %d -> %d nodes (%s)", name, current, decision.nodes, decision.reason)
            await self.cluster.scale(name, decision.nodes, reason=decision.reason)

    async def run_forever(self) -> None:
        interval = min((s.policy.interval_s for s in self.pools.values()), default=1.0)
        while True:
            try:
                await self.step()
            except Exception:  # one bad round must not end autoscaling for good
                log.exception("autoscaler round failed")
            await asyncio.sleep(interval)

    def start(self) -> None:
        if self.pools and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self.run_forever(), name="autoscaler")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None

    def targets(self) -> dict[str, int]:
        """The size each autoscaled pool is meant to have now."""
        return {name: s.target for name, s in self.pools.items()}

    def status(self) -> dict[str, dict[str, object]]:
        """Per autoscaled pool: the size it aims for, why, and the bounds and signal behind it."""
        out: dict[str, dict[str, object]] = {}
        for name, s in self.pools.items():
            last = s.samples[-1] if s.samples else None
            out[name] = {
                "target": s.target, "reason": s.reason, "min_nodes": s.policy.min_nodes, "max_nodes": s.policy.max_nodes,
                "schedule_floor": s.floor, "queue": last.queue if last else None,
                "utilisation": round(last.utilisation, 3) if last else None,
            }
        return out
