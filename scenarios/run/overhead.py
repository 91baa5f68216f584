"""The harness's own overhead on this machine: how fast one Locust process can fire validly, and
how much latency the harness itself adds, measured against a target that costs nothing.

Every latency a drill measures includes the client's share (gevent scheduling, the HTTP client,
recording the result, loopback). To show it beside the measured figures, a short ladder of
constant-rate steps is fired from one Locust process at the null server
(`rushhour.scenarios.run.nullserver`), with the run's own request mix and protocol: each step is judged as
the drill judges its generator (schedule lag and pool wait P99 within the scenario's lag limit,
every request sent once), the highest valid step is the rate one process carries, and each
step's latency (and time to first token, when streamed) P50/P99/P99.9 is what the harness adds
at that rate. A run reads the lowest step at or above its peak rate, an upper bound on its own
overhead (the overhead grows with the rate).

The figures are cached in `$RUSHHOUR_STATE_DIR/overhead/<key>.json`, keyed by machine, rushhour
version, the load generator's source and the protocol, and measured again after `MAX_AGE_S`.
The whole check is bounded: about `sum(LADDER_RPS) * STEP_S` requests over `WARMUP_S + len(LADDER_RPS) *
STEP_S` seconds plus Locust's start, under `CHECK_LIMIT_S`.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, TextIO

import numpy as np
import pandas as pd

from rushhour.kernel.atomic import write_json_atomic, write_parquet_atomic
from rushhour.kernel.generator import generator_problems, schedule_lag_ms
from rushhour.kernel.processes import free_port, stop_process
from rushhour.kernel.quantiles import percentile_value
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.load.health import generator_figures
from rushhour.scenarios.load.session import LoadSession
from rushhour.scenarios.run.envinfo import machine_facts
from rushhour.scenarios.run.lifecycle import RunLifecycle

__all__ = ["LADDER_RPS", "SKIP_ENV", "drill_overhead", "at_peak", "cache_dir", "measure_overhead", "overhead_key", "run_overhead_check"]

LADDER_RPS = (50.0, 200.0, 500.0, 1000.0, 2000.0, 3000.0)
STEP_S = 1.0
WARMUP_S = 1.0
WARMUP_STEP = -1
"""A first second at the lowest rate, not judged: the generator's first sends pay for its start
(connections opened, code paths warmed), which no later request of a run does."""
GIVE_UP_ROWS = 30
CHECK_LIMIT_S = 30.0
MAX_AGE_S = 7 * 24 * 3600.0
READY_S = 10.0
LOAD_DIR = Path(__file__).resolve().parents[1] / "load"
SKIP_ENV = "RUSHHOUR_NO_OVERHEAD_CHECK"
"""Set (to anything) to skip the check in every `rushhour run`, as `--no-overhead-check` does."""
QUANTILES = {"p50": 50.0, "p99": 99.0, "p99_9": 99.9}
Say = Callable[[str], None]


def cache_dir() -> Path:
    return Path(os.environ.get("RUSHHOUR_STATE_DIR", "~/.rushhour")).expanduser() / "overhead"


def overhead_key(protocol: str, streaming: bool) -> tuple[str, dict[str, Any]]:
    """(key, what it is made of): the machine, rushhour's version, the generator's source, the protocol."""
    facts = machine_facts()
    packages = facts.get("packages") if isinstance(facts.get("packages"), dict) else {}
    digest = hashlib.sha256()
    for path in sorted([*LOAD_DIR.glob("*.py"), *(LOAD_DIR.parent / "generator").glob("*.py")]):
        digest.update(path.name.encode() + path.read_bytes())
    parts = {"machine": {k: facts.get(k) for k in ("cpu_model", "cpu_cores", "memory_gb", "gpu")},
             "rushhour": packages.get("rushhour") if isinstance(packages, dict) else None,
             "generator": digest.hexdigest()[:16], "protocol": protocol, "streaming": streaming,
             "ladder_rps": list(LADDER_RPS), "step_s": STEP_S}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:20], parts


def ladder_schedule(mix: pd.DataFrame, *, seed: int = 0) -> pd.DataFrame:
    """The run's request mix re-timed as the ladder: a warm-up, then each step `STEP_S` long at its
    rate, uniform arrivals given the count; a `step` column says which rung a row belongs to."""
    rng = np.random.default_rng(seed)
    if "turn" in mix.columns:  # a later turn of a conversation waits for the one before: first turns only
        mix = mix[mix["turn"].fillna(0) == 0]
    frames = []
    rungs = [(WARMUP_STEP, LADDER_RPS[0], 0.0, WARMUP_S)]
    rungs += [(i, rate, WARMUP_S + i * STEP_S, STEP_S) for i, rate in enumerate(LADDER_RPS)]
    for index, rate, start, length in rungs:
        count = int(round(rate * length))
        rows = mix.iloc[rng.integers(0, len(mix), count)].copy()
        rows["offset_s"] = start + np.sort(rng.uniform(0.0, length, count))
        rows["step"] = index
        frames.append(rows)
    return pd.concat(frames, ignore_index=True)


def judge_steps(requests: pd.DataFrame, steps: np.ndarray, lag_limit_ms: float) -> list[dict[str, Any]]:
    """Each rung: its generator figures, valid or not (as the drill judges it), and the latency
    and time to first token quantiles of its successful requests."""
    out = []
    for index, rate in enumerate(LADDER_RPS):
        rows = requests[steps == index]
        figures = generator_figures(rows)
        unsent = int(rows["sent_s"].isna().sum())
        ok = rows["ok"].to_numpy(dtype=bool)
        judged = {p.check for p in generator_problems(
            lag_p99_ms=figures["lag_p99_ms"], pool_wait_p99_ms=figures["pool_wait_p99_ms"],
            duplicates=int(figures["duplicates"] or 0), cpu_max=None, max_lag_p99_ms=lag_limit_ms)}
        reasons = [text for bad, text in (
            (unsent > 0, f"{unsent} not sent"),
            ("lag" in judged, f"lag P99 {figures['lag_p99_ms']} ms"),
            ("pool_wait" in judged, f"pool wait P99 {figures['pool_wait_p99_ms']} ms"),
            ("duplicates" in judged, f"{figures['duplicates']} fired twice"),
            (not ok.all(), f"{int((~ok).sum())} failed against the null target")) if bad]
        out.append({"rate_rps": rate, "requests": len(rows), "valid": not reasons, "reasons": reasons,
                    "lag_p99_ms": figures["lag_p99_ms"], "pool_wait_p99_ms": figures["pool_wait_p99_ms"],
                    "latency_ms": _quantiles(rows["latency_ms"].to_numpy(dtype=float)[ok]),
                    "ttft_ms": _quantiles(rows["ttft_ms"].to_numpy(dtype=float)[ok]) if "ttft_ms" in rows else None})
    return out


def _quantiles(values: np.ndarray) -> dict[str, float | None] | None:
    values = values[np.isfinite(values)]
    if not len(values):
        return None
    return {name: round(float(percentile_value(values, q)), 3) for name, q in QUANTILES.items()}


class NullServer:
    """The null target as a subprocess of this one, stopped by its PID (`stop`)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> NullServer:
        self.proc = subprocess.Popen([sys.executable, "-m", "rushhour.scenarios.run.nullserver", str(self.port)],
                                     stdout=subprocess.PIPE, cwd=str(LOAD_DIR.parents[1]))
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # "ready", or "" if it died; bounded by the process itself
        if line.strip() != b"ready":
            self.stop()
            raise RuntimeError("the null target did not start")
        return self

    def stop(self) -> None:
        stop_process(self.proc, grace_s=2.0)


@dataclass
class LadderRun(RunLifecycle[dict[str, Any]]):
    """The ladder fired once, in a run's order (`rushhour.scenarios.run.lifecycle`): a temporary
    folder, a fresh null server, one Locust process, both stopped whatever happened; a failure to
    start or fire is raised once they are stopped, not recorded (the caller says it)."""

    aborting: ClassVar[tuple[type[Exception], ...]] = ()
    schedule: pd.DataFrame
    target: dict[str, object] | None
    lag_limit_ms: float
    languages: tuple[str, ...]
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    abort_reason: str | None = None
    interrupted: bool = False
    began: float = field(default_factory=time.monotonic)
    _folder: ExitStack = field(default_factory=ExitStack)
    _work: Path = Path()
    _server: NullServer | None = None
    _session: LoadSession | None = None
    _requests: pd.DataFrame | None = None

    def _claim(self) -> None:
        self._work = Path(self._folder.enter_context(tempfile.TemporaryDirectory(prefix="rushhour-overhead-")))

    def _boot_and_load(self) -> None:
        path = self._work / "schedule.parquet"
        write_parquet_atomic(self.schedule.drop(columns=["step"]), path)
        self._server = NullServer().start()
        self._session = LoadSession(LoadSettings(
            host=self._server.url, schedule_path=path, work_dir=self._work / "load",
            duration_s=WARMUP_S + len(LADDER_RPS) * STEP_S, processes=1, languages=self.languages,
            max_timeout_s=2.0, timeout_margin_s=1.0, request_timeout_s=2.0, target=self.target))
        self._session.start()
        seen: list[pd.DataFrame] = []
        while not self._session.finished() and time.monotonic() - self.began < CHECK_LIMIT_S:
            time.sleep(0.2)
            seen.append(self._session.poll())
            if _hopeless(pd.concat(seen), self.lag_limit_ms):
                break  # a rung is already far behind: the ones above it cannot be valid

    def _interrupted(self) -> None:
        raise KeyboardInterrupt  # the check is not worth finishing: stopped, then the interruption goes on

    def _stop_steps(self) -> tuple[Callable[[], object], ...]:
        return (self._stop_load, self._stop_server)

    def _stop_load(self) -> None:
        if self._session is not None:
            self._session.stop()

    def _stop_server(self) -> None:
        if self._server is not None:
            self._server.stop()

    def _write_results(self) -> None:
        if self._session is not None:
            self._requests = self._session.requests(self.schedule.drop(columns=["step"]))

    def _report(self) -> dict[str, Any]:
        if self._requests is None:
            raise RuntimeError("The overhead ladder's requests could not be read back from its load session.")
        steps = judge_steps(self._requests, self.schedule["step"].to_numpy(), self.lag_limit_ms)
        valid = [s["rate_rps"] for s in steps if s["valid"]]
        return {"steps": steps, "max_valid_rps_per_process": max(valid) if valid else None,
                "lag_limit_ms": self.lag_limit_ms, "measure_s": round(time.monotonic() - self.began, 2)}

    def _close(self) -> None:
        self._folder.close()


def measure_overhead(mix: pd.DataFrame, *, target: dict[str, object] | None, lag_limit_ms: float,
                     languages: tuple[str, ...] = ("en-de",)) -> dict[str, Any]:
    """Fire the ladder from one Locust process at a fresh null server; the steps and the highest valid rate."""
    began = time.monotonic()
    return LadderRun(ladder_schedule(mix), target, lag_limit_ms, languages, began=began).run()


def _hopeless(parts: pd.DataFrame, lag_limit_ms: float) -> bool:
    """Whether the rows recorded so far already show a rung far behind (lag P99 over twice the limit)."""
    if len(parts) < GIVE_UP_ROWS or "sent_s" not in parts or "intended_s" not in parts:
        return False
    recent = parts.tail(GIVE_UP_ROWS)
    return bool(percentile_value(schedule_lag_ms(recent), 99) > 2 * lag_limit_ms)


def at_peak(record: dict[str, Any], peak_rps: float) -> dict[str, Any] | None:
    """The rung that stands for the run's peak: the lowest at or above it (the top one beyond it)."""
    steps = [s for s in record.get("steps") or [] if s.get("latency_ms")]
    if not steps:
        return None
    above = [s for s in steps if s["rate_rps"] >= peak_rps]
    return min(above, key=lambda s: s["rate_rps"]) if above else max(steps, key=lambda s: s["rate_rps"])


def is_streaming(target: dict[str, object] | None) -> bool:
    """Whether the run's protocol streams its answers (then time to first token is reported too)."""
    from rushhour.scenarios.protocols.base import make_protocol

    return bool(target) and make_protocol(target).streaming  # type: ignore[arg-type]


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("steps"), list) else None


def _fresh(record: dict[str, Any]) -> bool:
    try:
        measured = datetime.fromisoformat(str(record["measured_at"]))
    except (KeyError, ValueError):
        return False
    return (datetime.now(UTC) - measured).total_seconds() < MAX_AGE_S


def cached_or_measured(mix: pd.DataFrame, *, target: dict[str, object] | None, lag_limit_ms: float,
                       languages: tuple[str, ...], say: Say) -> dict[str, Any]:
    """The cached record when fresh, else measured now and cached (atomically)."""
    protocol = str((target or {}).get("protocol") or "rushhour")
    streaming = is_streaming(target)
    key, parts = overhead_key(protocol, streaming)
    path = cache_dir() / f"{key}.json"
    record = _read(path)
    if record is not None and _fresh(record) and record.get("lag_limit_ms") == lag_limit_ms:
        return record | {"cached": True}
    say(f"measuring the harness's own overhead on this machine (null target, one Locust process, "
        f"{len(LADDER_RPS)} steps up to {max(LADDER_RPS):g} req/s) ...")
    record = measure_overhead(mix, target=target, lag_limit_ms=lag_limit_ms, languages=languages)
    record |= {"key": key, "made_of": parts, "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
               "loadavg_1m": round(os.getloadavg()[0], 2)}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(record, path)
    return record | {"cached": False}


def run_overhead_check(mix: pd.DataFrame, *, peak_rps: float, target: dict[str, object] | None,
                       lag_limit_ms: float, languages: tuple[str, ...], say: Say) -> dict[str, Any]:
    """The event a run writes (`harness_overhead`): the rung standing for its peak, the highest
    valid rate per process, where the figures came from; said in one line."""
    record = cached_or_measured(mix, target=target, lag_limit_ms=lag_limit_ms, languages=languages, say=say)
    rung = at_peak(record, peak_rps)
    event = {"peak_rps": round(peak_rps, 3), "max_valid_rps_per_process": record.get("max_valid_rps_per_process"),
             "at_rps": rung["rate_rps"] if rung else None, "latency_ms": rung["latency_ms"] if rung else None,
             "ttft_ms": rung["ttft_ms"] if rung and is_streaming(target) else None,
             "measured_at": record.get("measured_at"), "cached": record["cached"], "key": record.get("key"),
             "steps": record["steps"]}
    p99 = (event["latency_ms"] or {}).get("p99")
    say(f"harness overhead: P99 {p99} ms at {event['at_rps']} req/s, up to "
        f"{event['max_valid_rps_per_process']} req/s valid per process "
        f"({'cached, measured ' + str(record.get('measured_at')) if record['cached'] else 'measured now'})")
    return event


def drill_overhead(plan: Any, say: Say) -> dict[str, Any]:
    """The check as a drill runs it, before its own server boots: the `harness_overhead` event's
    fields; a check that could not run says why instead (the drill goes on without it)."""
    load = plan.scenario.load
    try:  # the mix is the schedule's first chunk: all of a short run, a sample of a soak's rows
        mix = next(iter(plan.draw.chunks()))
        return run_overhead_check(mix, peak_rps=plan.facts.peak_rps, target=plan.scenario.target.wire_dict(),
                                  lag_limit_ms=load.max_lag_p99_ms, languages=tuple(load.languages), say=say)
    except Exception as exc:  # noqa: BLE001 - the drill itself does not depend on the check
        say(f"warning: the harness overhead check did not run: {exc}")
        return {"error": str(exc)}
