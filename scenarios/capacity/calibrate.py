"""Drills calibrated to the machine: `peak_rps: 0.7x capacity` (or `0.7x n-1 capacity`) resolved.

The capacity is what `rushhour capacity` measures for the scenario (its mix, all its SLOs, its
target: the embedded server, or the service at its URL), cached per machine, target (the server
configuration, or the URL and protocol) and version under the state directory
(`$RUSHHOUR_STATE_DIR`, default ~/.rushhour), in `capacity/<key>.json`. When any of them
changes the key changes, and the next run measures again the way a first measurement does
(a probe of the throughput, then steps sized to their rate around it; starting next to the last
figure this scenario had when the probe gives no plan). A dry run never measures: without a
cached figure it plans at the search's starting rate and says so.

A cached figure is checked before it is used (`rushhour.scenarios.capacity.freshness`): one short step at
that rate; if it shows an SLO missed the machine carries less now, and the figure is measured
again (or, told not to, the run is invalid). The re-measure probes the throughput and steps around
it like a first measurement, starting from the check's failure: it never steps at that rate
again. A search whose every rate passed is searched again above its ceiling, since a lower bound
taken for the capacity would under-load the drill.

A calibration's figure is cached only once it is confirmed, i.e. once two windows at it or above
it passed, so each window may spend a larger error on "met" (`rushhour.reports.estimate.sequential.paired_error`:
22.4% each, 5% for the two together); its windows need 175 paid requests instead of 314, and
"missed" keeps 5% in every window. A figure the search could not confirm is used for this run
only, said so, and measured again by the next.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rushhour.kernel.atomic import write_json_atomic
from rushhour.reports.estimate.sequential import ALPHA, paired_error
from rushhour.scenarios.capacity.conditions import HEALTHY, N_MINUS_ONE
from rushhour.scenarios.capacity.freshness import (
    CheckResult,
    RunFn,
    age_text,
    check_job,
    checked,
    load_average,
    widened,
)
from rushhour.scenarios.capacity.job import CapacityJob, load_mix, slo_floors, step_rules
from rushhour.scenarios.capacity.search import SearchSettings, StepVerdict
from rushhour.scenarios.capacity.target import embedded_config
from rushhour.scenarios.run.envinfo import machine_facts
from rushhour.scenarios.spec.model import Scenario, ScenarioError
from rushhour.scenarios.spec.peak import Calibration, RelativePeak
from rushhour.scenarios.spec.target import TargetProtocol
from rushhour.scenarios.spec.urls import hide_userinfo

__all__ = ["CalibrationAborted", "CalibrationInvalid", "cache_dir", "calibrated_peak", "calibrated_target", "calibration_key",
           "check_calibratable", "measure", "remember"]

REFERENCE_SERVER = Path(__file__).resolve().parents[2] / "reference_server"
CALIBRATION_STEP_S = 60.0
CALIBRATION_STEPS_S = (CALIBRATION_STEP_S, 3 * CALIBRATION_STEP_S)
CALIBRATION_PRECISION = 0.15
CALIBRATION_SPAN = 8.0
REMEASURE_GROWTH = 1.25
REMEASURE_START = 0.9
MACHINE_FACTS = ("cpu_model", "cpu_cores", "memory_gb", "gpu")
LOAD_FIELDS = {"languages", "documents_via_jobs", "processes", "request_timeout_s", "timeout_margin_s", "mode"}
SERVER_VOLATILE = {"host", "port", "state_dir", "model_cache_dir"}
MAX_WIDENINGS = 2
CALIBRATION_MET_ERROR = paired_error()
"""The error each calibration window spends on "met": two confirming windows are wrong together at most 5%."""


class CalibrationInvalid(Exception):
    """The cached capacity no longer holds and the run was told not to measure it again."""


class CalibrationAborted(Exception):
    """The measurement stopped before its end (Ctrl-C, SIGTERM, a server that would not boot):
    nothing of it is cached, and no further search is tried."""


def cache_dir() -> Path:
    return Path(os.environ.get("RUSHHOUR_STATE_DIR", "~/.rushhour")).expanduser() / "capacity"


def _package_version(facts: dict[str, object], name: str) -> object:
    """A package's version among the machine facts (None when not listed)."""
    packages = facts.get("packages")
    return packages.get(name) if isinstance(packages, dict) else None


def _code_digest() -> str:
    """The reference server's version: a digest of its source, so any change re-measures."""
    digest = hashlib.sha256()
    for path in sorted(REFERENCE_SERVER.rglob("*.py")):
        digest.update(path.relative_to(REFERENCE_SERVER).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def calibrated_target(scenario: Scenario, target_url: str | None = None) -> str | None:
    """The URL a calibration measures (a `--target` of a capacity job, else the scenario's own
    `target.url`); None for the embedded server."""
    if target_url is not None:
        return target_url.rstrip("/")
    return None if scenario.target.embedded is not None or scenario.target.url is None else str(scenario.target.url).rstrip("/")


def check_calibratable(scenario: Scenario, relative: RelativePeak, *, source: str, target_url: str | None = None) -> None:
    """Refuse, before anything is measured, a relative peak this scenario's target cannot give a
    figure for, saying what to write instead."""
    per_request = [slo for slo in scenario.slos if slo.kind not in ("goodput", "drift")]
    if not per_request:
        raise ScenarioError(
            f'{source}: traffic.peak_rps: "{relative.text}" is a share of the highest rate meeting every SLO, and the '
            "scenario has no per-request SLO (latency, availability, degraded, ttft, tpot, itl) to measure it by; "
            "add one under slos: (e.g. {name: p99, kind: latency, percentile: 99, threshold_ms: 1500}) or give "
            "peak_rps as a number of requests per second.")
    url = calibrated_target(scenario, target_url)
    if url is None or relative.condition != N_MINUS_ONE:
        return
    if scenario.target.protocol != "rushhour" or not os.environ.get("RUSHHOUR_ADMIN_TOKEN"):
        raise ScenarioError(
            f'{source}: traffic.peak_rps: "{relative.text}" is measured with one node of the quality pool held '
            f'down through the reference server\'s admin API, which "{hide_userinfo(url)}" does not offer here '
            f"(protocol {scenario.target.protocol}, RUSHHOUR_ADMIN_TOKEN "
            f"{'set' if os.environ.get('RUSHHOUR_ADMIN_TOKEN') else 'unset'}); write "
            f'"{relative.factor:g}x capacity" to calibrate on the healthy service, or measure the degraded capacity '
            "with `rushhour capacity SCENARIO --target URL --faults EXPERIMENT` and give peak_rps as a number.")


def calibration_key(scenario: Scenario, condition: str, *, source: str, base_dir: Path,
                    target_url: str | None = None) -> tuple[str, dict[str, Any]]:
    """(key, what it was made of): machine, version, the target (the embedded server's config, or
    the URL and protocol of a service), mix, SLOs, load, condition."""
    facts = machine_facts()
    url = calibrated_target(scenario, target_url)
    if url is not None:
        protocol = scenario.target.model_dump(mode="json", include=set(TargetProtocol.model_fields))
        target: dict[str, Any] = {"url": hide_userinfo(url), "protocol": protocol}
        version: dict[str, Any] = {"rushhour": _package_version(facts, "rushhour")}
    else:
        embedded = scenario.target.embedded
        if embedded is None:
            raise ScenarioError(f"{source}: target: the scenario names no target to calibrate on.")
        target = {"server": embedded_config(embedded, source=source, base_dir=base_dir).model_dump(
            mode="json", exclude=SERVER_VOLATILE)}
        version = {"rushhour": _package_version(facts, "rushhour"), "server": _code_digest()}
    parts = {
        "machine": {key: facts.get(key) for key in MACHINE_FACTS},
        "version": version,
        **target,
        "mix": load_mix(scenario, source=source, base_dir=base_dir).mix.model_dump(mode="json"),
        "slos": [slo.model_dump(mode="json") for slo in scenario.slos],
        "load": scenario.load.model_dump(mode="json", include=LOAD_FIELDS),
        "condition": condition,
    }
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20], parts


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("capacity_rps"), (int, float)) else None


def _target_name(scenario: Scenario, target_url: str | None = None) -> str:
    url = calibrated_target(scenario, target_url)
    return "embedded" if url is None else hide_userinfo(url)


def _previous(scenario: Scenario, condition: str) -> float | None:
    """The latest figure this scenario had on this target under `condition`, under any key (a
    re-measure starts there)."""
    target = _target_name(scenario)
    entries = [e for p in cache_dir().glob("*.json") if (e := _read(p)) is not None
               and e.get("scenario") == scenario.name and e.get("condition") == condition
               and e.get("target", "embedded") == target]
    latest = max(entries, key=lambda e: str(e.get("measured_at", "")), default=None)
    return float(latest["capacity_rps"]) if latest else None


def remember(job: CapacityJob, document: dict[str, Any]) -> list[Path]:
    """Cache every condition a job measured, when the job is the calibration's kind of measurement:
    all the scenario's SLOs on its target (the embedded server, its URL or the job's `--target`),
    run to its end; a figure whose windows spent more than 5% each on "met" only once it is
    confirmed. Returns the files written."""
    if document.get("aborted"):
        return []
    if [slo.name for slo in job.slos] != [slo.name for slo in job.scenario.slos]:
        return []
    written = []
    for entry in document.get("conditions") or []:
        name = entry.get("condition")
        usable = entry.get("capacity_rps") is not None and not entry.get("generator_bound") and not entry.get("ceiling")
        usable = usable and (entry.get("confirmed") is True or job.rules.met_error <= ALPHA)
        usable = usable and not (entry.get("machine_drift") or {}).get("changed")  # measured on a changing machine
        if name not in (HEALTHY, N_MINUS_ONE) or not usable:
            continue
        key, parts = calibration_key(job.scenario, name, source=job.source, base_dir=job.base_dir,
                                     target_url=job.target_url)
        record = {"key": key, "scenario": job.scenario.name, "target": _target_name(job.scenario, job.target_url),
                  "condition": name, "capacity_rps": entry["capacity_rps"],
                  "bracket": entry.get("bracket"), "summary": entry.get("summary"),
                  "measured_at": datetime.now(UTC).isoformat(timespec="seconds"), "loadavg_1m": load_average(),
                  "results": str(job.out_dir.resolve()), "made_of": parts}
        path = cache_dir() / f"{key}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(record, path)
        written.append(path)
    return written


def calibration_job(scenario: Scenario, condition: str, *, source: str, base_dir: Path,
                    step_s: float = CALIBRATION_STEP_S, known_fail: StepVerdict | None = None) -> CapacityJob:
    """The quick search a calibration runs: all SLOs, 60 s steps, 15% precision, each window's
    "met" at CALIBRATION_MET_ERROR. `known_fail` is a step just seen failing (a cached figure that
    missed its check): the search starts afresh below its rate, which counts as the search's first
    failure."""
    mix = load_mix(scenario, source=source, base_dir=base_dir)
    floors = slo_floors(mix, list(scenario.slos), step_s, met_error=CALIBRATION_MET_ERROR)
    low = max(1.0, math.ceil(max((f.floor_rps for f in floors), default=1.0) * 10) / 10)
    # a re-measure starts next to the last figure; a first N-1 next to the healthy one (a node less
    # rarely carries more), so the search walks down from there in a few quick failures
    previous = _previous(scenario, condition) or (_previous(scenario, HEALTHY) if condition == N_MINUS_ONE else None)
    previous = previous if previous is not None and previous > low and known_fail is None else None
    if known_fail is not None and known_fail.rate_rps <= low:
        known_fail = None  # below every rate the search may try: nothing to start from
    top = known_fail.rate_rps if known_fail is not None else max(low * CALIBRATION_SPAN, (previous or 0) * 2)
    # the drill runs on the same generator: a rate it cannot drive bounds the calibration
    settings = SearchSettings(min_rps=low, max_rps=top, precision=CALIBRATION_PRECISION,
                              growth=REMEASURE_GROWTH if previous else 2.0, generator_limits=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return CapacityJob(
        scenario=scenario, source=source, base_dir=base_dir, mix=mix, slos=list(scenario.slos),
        conditions=[condition], settings=settings,
        rules=step_rules(step_s, scenario.load.max_lag_p99_ms, CALIBRATION_MET_ERROR),
        out_dir=cache_dir() / "runs" / f"{scenario.name}-{condition}-{stamp}", seed=scenario.traffic.seed,
        target_url=calibrated_target(scenario),
        start_rps=previous * REMEASURE_START if previous else None, floors=floors, known_fail=known_fail)


Say = Callable[[str], None]


def _run_capacity(job: CapacityJob, say: Say) -> dict[str, Any]:
    from rushhour.scenarios.capacity.runner import run_capacity

    outcome = run_capacity(job, say=say)
    return outcome.document | {"out_dir": str(outcome.out_dir)}


def _attempts(scenario: Scenario, condition: str, *, source: str, base_dir: Path,
              known_fail: StepVerdict | None) -> Iterator[CapacityJob]:
    """The searches a measurement tries in turn until one ends above its lowest rate: first the
    search around the probed throughput (`rushhour.scenarios.capacity.bracket`; below the failed rate after
    a failed check), then the scenario's whole range with 180 s steps for a machine too slow for
    60 s ones. The probed search already reaches down to the lowest rate a 60 s step can show, and
    with no plan it is the 60 s search (starting next to the last figure, if there is one)."""
    jobs = (calibration_job(scenario, condition, source=source, base_dir=base_dir, step_s=step_s,
                            known_fail=known_fail) for step_s in CALIBRATION_STEPS_S)
    first = next(jobs)
    yield dataclasses.replace(first, probe=True, out_dir=first.out_dir.with_name(first.out_dir.name + "-probed"))
    yield from jobs


def measure(scenario: Scenario, condition: str, *, source: str, base_dir: Path, say: Say,
            run: RunFn | None = None, known_fail: StepVerdict | None = None,
            heard: dict[str, Any] | None = None) -> float:
    """Search the capacity now and cache it; `run` runs one capacity job (default: for real); a
    search that saw the machine change leaves its sentence in `heard["machine_drift"]`.

    A first measurement searches around the target's probed throughput; a search that ends below
    its lowest rate is followed by the next of `_attempts`; a search that passed every rate is
    searched again above that ceiling; anything else that gives no capacity is refused with the
    reason.
    """
    runner: RunFn = run or (lambda job: _run_capacity(job, say))
    for attempt in _attempts(scenario, condition, source=source, base_dir=base_dir, known_fail=known_fail):
        job: CapacityJob | None = attempt
        for _ in range(MAX_WIDENINGS + 1):
            assert job is not None
            say(f"measuring the capacity ({condition}) for this machine, server and version: " + (
                "its throughput first, then steps around it ..." if job.probe else
                f"{job.settings.min_rps:g}-{job.settings.max_rps:g} req/s, {job.rules.measure_s:g} s steps ..."))
            document = runner(job)
            if document.get("aborted"):  # a search cut short is neither a figure nor a reason to search on
                raise CalibrationAborted(f"{source}: traffic.peak_rps: the capacity measurement stopped "
                                         f"({document['aborted']}); nothing was cached. See "
                                         f"{document.get('out_dir') or 'the calibration results'}.")
            remember(job, document)
            entry = (document.get("conditions") or [{}])[0]
            wider = widened(job, entry)
            if wider is None:
                break
            say(f"every rate up to {wider.settings.min_rps:g} req/s passed: that is a lower bound, searching above it")
            job = wider
        if not entry.get("below_min"):
            break
    where = document.get("out_dir") or "the calibration's results"
    if entry.get("ceiling"):
        raise ScenarioError(f"{source}: traffic.peak_rps: every rate up to {entry.get('capacity_rps')} req/s passed "
                            f"after {MAX_WIDENINGS} wider searches, so the capacity is only known to be above it; "
                            f"give peak_rps as a number instead. See {where}.")
    if entry.get("capacity_rps") is None or entry.get("generator_bound"):
        reason = entry.get("summary") or "no step ran"
        raise ScenarioError(f"{source}: traffic.peak_rps: the capacity could not be measured ({reason}); "
                            f"see {where}.")
    drift = entry.get("machine_drift") or {}
    if heard is not None and drift.get("changed"):
        heard["machine_drift"] = drift.get("sentence")
    if entry.get("confirmed") is not True:
        say(f"capacity {entry['summary']}; not confirmed by a second window (one window's "
            f"{attempt.rules.confidence}), so it serves this run only and is not cached.")
    else:
        say(f"capacity {entry['summary']}; cached.")
    return float(entry["capacity_rps"])


def _still_holds(scenario: Scenario, condition: str, figure: float, *, source: str, base_dir: Path, say: Say,
                 run: RunFn | None) -> CheckResult:
    """One short step at the cached figure (`freshness.checked`)."""
    job = check_job(calibration_job(scenario, condition, source=source, base_dir=base_dir), figure)
    say(f"checking the cached capacity: one {job.rules.measure_s:g} s step at {figure:g} req/s ...")
    document = (run or (lambda j: _run_capacity(j, say)))(job)
    if document.get("aborted"):  # Ctrl-C during the check stops the calibration, it is no miss
        raise CalibrationAborted(f"{source}: traffic.peak_rps: the check of the cached capacity stopped "
                                 f"({document['aborted']}); nothing was measured.")
    result = checked(document)
    say(("held: " if result.held else "missed: ") + result.reason)
    return result


def calibrated_peak(scenario: Scenario, relative: RelativePeak, *, source: str, base_dir: Path,
                    dry_run: bool = False, say: Say = lambda _text: None, recalibrate: bool = True,
                    run: RunFn | None = None) -> Calibration:
    """The relative peak as a rate: from the cache once a check step at it held, measured now
    (progress through `say`), or, for a dry run, which must boot nothing, a labelled placeholder.

    A cached figure the check step shows missed is measured again; with `recalibrate` False that
    raises CalibrationInvalid instead. `run` runs one capacity job (a seam for tests).
    """
    check_calibratable(scenario, relative, source=source)
    key, _ = calibration_key(scenario, relative.condition, source=source, base_dir=base_dir)
    cached = _read(cache_dir() / f"{key}.json")
    facts: dict[str, Any] = {"load_now": load_average()}
    if cached is not None:
        facts["confirmed"] = True  # only a confirmed figure is cached
    if cached is not None and dry_run:
        figure, note = float(cached["capacity_rps"]), f"measured {cached.get('measured_at', '?')}, cached, not checked"
    elif cached is not None:
        figure = float(cached["capacity_rps"])
        check = _still_holds(scenario, relative.condition, figure, source=source, base_dir=base_dir, say=say, run=run)
        held, reason = check.held, check.reason
        facts |= {"measured_at": cached.get("measured_at"), "load_then": cached.get("loadavg_1m"), "check": reason}
        note = (f"measured {cached.get('measured_at', '?')} ({age_text(cached.get('measured_at'))} ago) at load "
                f"average {_load(cached.get('loadavg_1m'))}, now {_load(facts['load_now'])}; checked: {reason}")
        if not held and not recalibrate:
            raise CalibrationInvalid(f"{source}: traffic.peak_rps: the cached capacity of {figure:g} req/s no longer "
                                     f"holds on this machine ({reason}), and --no-recalibrate forbids measuring it "
                                     f"again; the drill would be mis-loaded, so it is invalid.")
        if not held:
            figure = measure(scenario, relative.condition, source=source, base_dir=base_dir, say=say, run=run,
                             known_fail=check.failure, heard=facts)
            note = f"re-measured now at load average {_load(load_average())}: the cached figure failed its check ({reason})"
            facts |= {"measured_at": datetime.now(UTC).isoformat(timespec="seconds"), "load_then": load_average(),
                      "confirmed": _cached_as(key, figure)}
    elif dry_run:
        job = calibration_job(scenario, relative.condition, source=source, base_dir=base_dir)
        figure = job.start_rps or job.settings.min_rps
        note = "not measured on this machine yet; shown at the search's first rate, the run measures it first"
    else:
        figure = measure(scenario, relative.condition, source=source, base_dir=base_dir, say=say, run=run,
                         heard=facts)
        note = f"measured now at load average {_load(facts['load_now'])}"
        facts |= {"measured_at": datetime.now(UTC).isoformat(timespec="seconds"), "load_then": facts["load_now"],
                  "confirmed": _cached_as(key, figure)}
    url = calibrated_target(scenario)
    note = note if url is None else f"of {hide_userinfo(url)}, {note}"
    return Calibration(factor=relative.factor, condition=relative.condition, capacity_rps=round(figure, 2),
                       peak_rps=round(relative.factor * figure, 2), note=note, key=key, **facts)


def _cached_as(key: str, figure: float) -> bool:
    """Whether `measure` cached this very figure: it caches a figure only once a second window confirmed it."""
    cached = _read(cache_dir() / f"{key}.json")
    return cached is not None and abs(float(cached.get("capacity_rps", -1.0)) - figure) < 1e-9


def _load(value: object) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else "unknown"
