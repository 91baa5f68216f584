"""What the capacity search finds on an ideal queue: the whole search, simulated, many times.

The search (`rushhour.scenarios.capacity.search.search`) and each step's sequential verdict
(`rushhour.reports.estimate.sequential.look_call`, with the step's planned looks, warm-up and pending requests as
`rushhour capacity` has them, and a confirmation right after its pass going on with that pass's
load) run unchanged; only the service is replaced by a simulated M/D/c queue (benchmarks/mdc.py),
whose long-run capacity is known. Repeated over many seeds this gives
the distribution of the capacity a search reports for a given step length and rate bracket: what
the design promises, against which a real run on the real server is judged
(tests/scenarios/capacity/test_ground_truth.py).

A queue may run on a wandering machine (`Queue.wander`: each service time multiplied by exp(x),
x a log-AR(1) process on one clock through the search, `Machine`); its truth is then the long-run
capacity with the speed in its stationary law. `benchmarks.mdc_whole` sums whole searches up.

Near the knee a queue's slow answers come in bursts (a design effect of tens), so a short step
holds few independent-equivalent requests and can only show the objective met well below the
long-run capacity; long steps close the gap. This module's command prints that as a table:

    python -m benchmarks.mdc_search [--steps 20,300] [--searches 200] [--seed 1] [--out F]
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import click
import numpy as np

from benchmarks.mdc import true_capacity, true_ttft_capacity
from rushhour.reports.capacity.stepstats import samples_to_show
from rushhour.reports.estimate.quantilebound import percentile_look
from rushhour.reports.estimate.sequential import PILOT_FLOOR, look_call
from rushhour.scenarios.capacity.job import evidence_window_s, step_rules
from rushhour.scenarios.capacity.search import SearchSettings, StepVerdict, search
from rushhour.scenarios.capacity.steps import SETTLE_S, StepRules

__all__ = ["MDC", "STREAMING", "ChainedSteps", "Queue", "SearchFigures", "found_capacities", "search_figures",
           "simulate_step", "simulate_step_and_next_window", "simulate_timed_step"]

MAX_LAG_P99_MS = 250.0
WANDER_S = 60.0
"""How long the machine speed takes to forget itself (the log-AR(1)'s correlation time, seconds)."""


@dataclass(frozen=True, kw_only=True)
class Queue:
    """An M/D/c service and its objective: `percentile` of the response time (or, when `first_ms`
    is set, of the time to first token of a stream that holds its worker `service_ms`) within
    `threshold_ms`. `min_rps`/`max_rps` are the bracket the search is given."""

    name: str
    workers: int
    service_ms: float
    threshold_ms: float
    percentile: float
    min_rps: float
    max_rps: float
    first_ms: float | None = None
    every_ms: float = 0.0
    wander: float = 0.0
    """The spread (standard deviation of its log) of a machine speed that wanders as a log-AR(1)
    process over the whole search, between and within steps (0: a steady machine)."""
    wander_s: float = WANDER_S
    confirm_after_s: float = 0.0
    """When above 0, a confirmation is a fresh step this many seconds of machine time after its
    pass (the search doing other work meanwhile), instead of the window right after it."""
    rule: str = "share"
    """How a step's "met" is judged: "share" as `rushhour capacity` judges it (the late share over
    the effective sample size), "percentile" by the candidate bound on the percentile itself
    (`rushhour.reports.estimate.quantilebound.percentile_look`)."""

    @property
    def allowed(self) -> float:
        return 1.0 - self.percentile / 100.0

    @property
    def offset_ms(self) -> float:
        """How much shorter the judged time is than the response time (the stream after its first token)."""
        return 0.0 if self.first_ms is None else self.service_ms - self.first_ms

    def truth(self) -> float:
        """The long-run capacity: the highest rate whose simulated percentile is within the threshold."""
        return _long_run_capacity(self)


@functools.lru_cache(maxsize=8)
def _long_run_capacity(queue: Queue) -> float:
    if queue.wander > 0:
        return _wandering_capacity(queue)
    if queue.first_ms is None:
        return true_capacity(queue.threshold_ms, workers=queue.workers, service_ms=queue.service_ms,
                             percentile=queue.percentile)
    tokens = round((queue.service_ms - queue.first_ms) / queue.every_ms) + 1
    return true_ttft_capacity(queue.threshold_ms, workers=queue.workers,
                              stream=(queue.first_ms, queue.every_ms, tokens), percentile=queue.percentile)


MDC = Queue(name="M/D/c, P99 <= 500 ms", workers=4, service_ms=100.0, threshold_ms=500.0, percentile=99.0,
            min_rps=20.0, max_rps=80.0)
STREAMING = Queue(name="streaming M/D/c, TTFT P95 <= 300 ms", workers=8, service_ms=190.0, first_ms=100.0,
                  every_ms=10.0, threshold_ms=300.0, percentile=95.0, min_rps=15.0, max_rps=60.0)


def _starts(arrive: np.ndarray, workers: int, service_s: float | np.ndarray) -> np.ndarray:
    """First come first served: request i starts at max(arrival_i, start_{i-c} + its service), a
    cumulative maximum per residue class mod c (exact for equal service times; with a slowly
    wandering speed neighbours' service times are nearly equal, so the lanes stay FCFS)."""
    start = np.empty_like(arrive)
    service = np.broadcast_to(np.asarray(service_s, dtype=float), arrive.shape)
    for lane in range(workers):
        times = arrive[lane::workers]
        held = service[lane::workers]
        offset = np.concatenate([[0.0], np.cumsum(held[:-1])])
        start[lane::workers] = offset + np.maximum.accumulate(times - offset)
    return start


class Machine:
    """A machine speed that wanders: the log of the service-time factor is an AR(1) process in
    seconds (stationary spread `queue.wander`, correlation time `queue.wander_s`) that runs on
    one clock through the whole search, so consecutive steps and windows share its slow states."""

    def __init__(self, queue: Queue, rng: np.random.Generator) -> None:
        self.sigma, self.rho = queue.wander, float(np.exp(-1.0 / queue.wander_s))
        self.rng = rng
        self.state = float(rng.standard_normal()) * self.sigma if self.sigma > 0 else 0.0

    def factors(self, arrive: np.ndarray, span_s: float) -> np.ndarray:
        """The service-time factor at each arrival of a stretch of `span_s` seconds (the clock
        then moves on by that much)."""
        if self.sigma <= 0:
            return np.ones_like(arrive)
        seconds = int(np.ceil(span_s)) + 1
        shocks = self.rng.standard_normal(seconds) * self.sigma * np.sqrt(1.0 - self.rho**2)
        path = np.empty(seconds)
        level = self.state
        for k in range(seconds):
            path[k] = level
            level = self.rho * level + shocks[k]
        self.state = float(path[min(seconds - 1, int(span_s))])
        return np.exp(np.interp(arrive, np.arange(seconds, dtype=float), path))


def _wandering_capacity(queue: Queue, *, seconds: float = 4000.0, seed: int = 7) -> float:
    """The long-run capacity of a queue whose machine speed wanders: the highest rate whose
    percentile over a long run (the speed in its stationary law) is within the threshold."""
    low, high = 1.0, queue.workers * 1000.0 / queue.service_ms

    def fits(rate: float) -> bool:
        rng = np.random.default_rng(seed)
        arrive = np.sort(rng.uniform(0.0, seconds, round(rate * seconds)))
        service = queue.service_ms / 1000.0 * Machine(queue, rng).factors(arrive, seconds)
        judged = (_starts(arrive, queue.workers, service) + service - arrive) * 1000.0 - queue.offset_ms
        return float(np.quantile(judged, queue.percentile / 100.0)) <= queue.threshold_ms

    while high - low > 0.1:
        middle = (low + high) / 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def simulate_step(queue: Queue, rate: float, rules: StepRules, rng: np.random.Generator) -> StepVerdict:
    """One step against the simulated queue, judged as `rushhour capacity` judges it
    (`simulate_timed_step`)."""
    return simulate_timed_step(queue, rate, rules, rng)[0]


def simulate_timed_step(queue: Queue, rate: float, rules: StepRules, rng: np.random.Generator
                        ) -> tuple[StepVerdict, float]:
    """One step against the simulated queue and the moment (step clock) its verdict came: a fixed
    count of Poisson arrivals over warm-up plus window (the queue empty at the start), and at each
    planned look the window's requests due so far, those still unanswered counted as unknown
    (or, for a response time, bad once they have waited past the threshold). The last look comes
    at the window's end or, when requests of the window are still in flight, at the last answer."""
    return _judge(queue, _Run.draw(queue, rate, rules.schedule_s, rng), rules)


@dataclass(frozen=True)
class _Run:
    """One stretch of load on the simulated queue: arrivals, answers and judged times (seconds
    and milliseconds on the step clock), the queue empty at its start."""

    rate: float
    arrive: np.ndarray
    done: np.ndarray
    judged_ms: np.ndarray

    @classmethod
    def draw(cls, queue: Queue, rate: float, span_s: float, rng: np.random.Generator,
             machine: Machine | None = None) -> _Run:
        arrive = np.sort(rng.uniform(0.0, span_s, round(rate * span_s)))
        factor = machine.factors(arrive, span_s) if machine is not None else 1.0
        service = queue.service_ms / 1000.0 * factor
        done = _starts(arrive, queue.workers, service) + service
        return cls(rate, arrive, done, (done - arrive) * 1000.0 - queue.offset_ms)


def _judge(queue: Queue, run: _Run, rules: StepRules) -> tuple[StepVerdict, float]:
    """The verdict on `run` over `rules.window` (looks as in `simulate_timed_step`) and when it came."""
    arrive, done, threshold = run.arrive, run.done, queue.threshold_ms
    settle = min(threshold / 1000.0, SETTLE_S) + rules.record_lag_s
    for look in range(1, rules.looks + 1):
        final = look == rules.looks
        rows = (arrive >= rules.warmup_s) & (arrive < rules.look_end(look))
        now = float(max(done[rows].max(initial=0.0), rules.schedule_s)) if final else rules.look_end(look) + settle
        pending = done[rows] > now
        waited = (now - arrive[rows]) * 1000.0
        latency = run.judged_ms[rows]
        good = ~pending & (latency <= threshold)
        unknown = pending & (waited <= threshold) if queue.first_ms is None else pending
        score = np.where(~pending, latency, np.where(unknown, np.nan, np.inf))
        if queue.rule == "percentile":
            call, _ = percentile_look(~good & ~unknown, unknown, np.where(good, latency, np.inf), queue.percentile,
                                      threshold, look=look, looks=rules.looks, score=score,
                                      floor=PILOT_FLOOR * threshold, met_error=rules.met_error)
        else:
            call = look_call(~good & ~unknown, unknown, queue.allowed, look=look, looks=rules.looks, score=score,
                             floor=PILOT_FLOOR * threshold, met_error=rules.met_error)
        if call.met[0]:
            return StepVerdict(run.rate, "pass"), now
        if call.missed[0] or final:
            evidence = None if call.missed[0] else evidence_window_s(
                int(rows.sum()), float(call.effect[0]), samples_to_show(queue.allowed, rules.looks, rules.met_error),
                rules.measure_s)
            return StepVerdict(run.rate, "fail", "slo", "missed" if call.missed[0] else "not shown met",
                               open=not call.missed[0], evidence_s=evidence), now
    raise AssertionError("the last look always decides")


def simulate_step_and_next_window(queue: Queue, rate: float, rules: StepRules, rng: np.random.Generator
                                  ) -> tuple[StepVerdict, StepVerdict]:
    """A step and the window right after it on the same load, both judged whatever the first says:
    what a confirmation that goes on from a pass (`ChainedSteps`) is judged on."""
    run = _Run.draw(queue, rate, rules.schedule_s + rules.measure_s, rng)
    first, now = _judge(queue, run, rules)
    return first, _judge(queue, run, rules.following(now))[0]


class ChainedSteps:
    """The queue stepped as `rushhour capacity` steps it (`rushhour.scenarios.capacity.stepper`): each step
    a fresh queue whose load has room for a second window; a pass leaves it running, and a next
    step at the same rate is judged on the window after the pass's, with no warm-up (or, with
    `Queue.confirm_after_s`, is a fresh step that much machine time later).
    `seconds` adds up the step clock the steps took."""

    def __init__(self, queue: Queue, rules_at: Callable[[float], StepRules], rng: np.random.Generator) -> None:
        self.queue, self.rules_at, self.rng = queue, rules_at, rng
        self.machine = Machine(queue, rng)
        self.seconds = 0.0
        self._held: tuple[_Run, StepRules] | None = None  # a pass's load and the window after it

    def __call__(self, rate: float) -> StepVerdict:
        held, self._held = self._held, None
        if held is not None and held[0].rate == rate and self.queue.confirm_after_s > 0:
            self.machine.factors(np.zeros(0), self.queue.confirm_after_s)  # the machine's clock runs on
            self.seconds += self.queue.confirm_after_s
        elif held is not None and held[0].rate == rate:
            run, rules = held
            verdict, now = _judge(self.queue, run, rules)
            self.seconds += now - rules.warmup_s
            return verdict
        rules = self.rules_at(rate)
        run = _Run.draw(self.queue, rate, rules.schedule_s + rules.measure_s, self.rng, self.machine)
        verdict, now = _judge(self.queue, run, rules)
        self.seconds += now
        if verdict.verdict == "pass":
            self._held = (run, rules.following(now))
        return verdict


def found_capacities(queue: Queue, *, step_s: float, searches: int, seed: int, precision: float = 0.05
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The capacity each of `searches` simulated searches reports (0 where none passed), and the
    number of steps each took."""
    rules = step_rules(step_s, MAX_LAG_P99_MS)
    settings = SearchSettings(min_rps=queue.min_rps, max_rps=queue.max_rps, precision=precision)
    found, steps = np.zeros(searches), np.zeros(searches, dtype=int)
    for k in range(searches):
        step = ChainedSteps(queue, lambda _rate: rules, np.random.default_rng([seed, k]))
        result = search(step, settings)
        found[k], steps[k] = result.capacity_rps or 0.0, len(result.steps)
    return found, steps


@dataclass(frozen=True)
class SearchFigures:
    """The distribution of the reported capacity, in req/s and relative to the long-run truth."""

    queue: str
    step_s: float
    searches: int
    truth_rps: float
    median_rps: float
    p2_5_rps: float
    p10_rps: float
    p90_rps: float
    max_rps: float
    above_truth_share: float
    within_10pct_share: float
    none_share: float
    steps_median: float
    seconds: float


def search_figures(queue: Queue, *, step_s: float, searches: int, seed: int, truth: float | None = None
                   ) -> SearchFigures:
    """Run the simulated searches and sum them up."""
    began = time.perf_counter()
    found, steps = found_capacities(queue, step_s=step_s, searches=searches, seed=seed)
    truth = queue.truth() if truth is None else truth
    p2_5, p10, median, p90 = (float(v) for v in np.percentile(found, [2.5, 10, 50, 90]))
    return SearchFigures(queue.name, step_s, searches, truth, median, p2_5, p10, p90, float(found.max()),
                         float(np.mean(found > truth)), float(np.mean(np.abs(found - truth) <= 0.1 * truth)),
                         float(np.mean(found == 0.0)), float(np.median(steps)), time.perf_counter() - began)


def _row(f: SearchFigures) -> str:
    rel = [100.0 * (v / f.truth_rps - 1.0) for v in (f.p2_5_rps, f.median_rps, f.p90_rps, f.max_rps)]
    return (f"| {f.queue} | {f.step_s:g} s | {f.truth_rps:.1f} | {f.p2_5_rps:.1f} ({rel[0]:+.0f}%) | "
            f"{f.median_rps:.1f} ({rel[1]:+.0f}%) | {f.p90_rps:.1f} ({rel[2]:+.0f}%) | {f.max_rps:.1f} ({rel[3]:+.0f}%) | "
            f"{100 * f.above_truth_share:.1f}% | {100 * f.within_10pct_share:.0f}% | {f.searches} |")


@click.command()
@click.option("--steps", default="20,300", show_default=True, help="Step lengths in seconds, comma-separated.")
@click.option("--searches", default=200, show_default=True, type=click.IntRange(min=10))
@click.option("--seed", default=1, show_default=True, type=int)
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write the figures as JSON here.")
def main(steps: str, searches: int, seed: int, out: Path | None) -> None:
    """Print the distribution of the simulated search's capacity for each queue and step length."""
    try:
        lengths = [float(v) for v in steps.split(",")]
    except ValueError as exc:
        raise click.BadParameter(f'"{steps}" is not a comma-separated list of seconds.', param_hint="--steps") from exc
    if any(v < 2.0 for v in lengths):
        raise click.BadParameter(f'"{steps}": every step length must be at least 2 s.', param_hint="--steps")
    click.echo("| queue | step | truth | 2.5th pct | median | 90th pct | max | above truth | within 10% | searches |")
    click.echo("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    rows = []
    for queue in (MDC, STREAMING):
        truth = queue.truth()
        for length in lengths:
            figures = search_figures(queue, step_s=length, searches=searches, seed=seed, truth=truth)
            rows.append(asdict(figures))
            click.echo(_row(figures))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"searches": searches, "seed": seed, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
