"""Capacities cached per machine, server configuration and version, and relative peaks resolved."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from rushhour.scenarios.capacity import calibrate
from rushhour.scenarios.capacity.calibrate import (
    cache_dir,
    calibrated_peak,
    calibration_job,
    calibration_key,
    remember,
)
from rushhour.scenarios.capacity.freshness import checked
from rushhour.scenarios.capacity.job import CapacityJob, slo_floors
from rushhour.scenarios.capacity.search import GENERATOR, StepVerdict
from rushhour.scenarios.spec.model import Scenario, load_scenario
from rushhour.scenarios.spec.peak import RelativePeak

BASE = {
    "name": "cal", "traffic": {"model": "promo-day", "time_scale": 360, "peak_rps": "0.7x capacity",
                               "start_clock": "06:00", "duration": "180s"},
    "target": {"embedded": {"nodes": 2, "max_batch_size": 8}},
    "slos": [{"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 5000, "priority": "free"}],
}


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RUSHHOUR_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def _scenario(tmp_path: Path, **changes: object) -> tuple[Scenario, Path]:
    data = json.loads(json.dumps(BASE))
    for dotted, value in changes.items():
        section, _, key = dotted.partition("__")
        data[section][key] = value
    path = tmp_path / "cal.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_scenario(path), path


def _key(scenario: Scenario, path: Path, condition: str = "none") -> str:
    return calibration_key(scenario, condition, source=str(path), base_dir=path.parent)[0]


def _measurer(measured: list[str], figure: float) -> Callable[..., float]:
    """A stand-in for a capacity measurement: records the condition asked for, answers `figure`."""
    def measure(scenario: object, condition: str, **_: object) -> float:
        measured.append(condition)
        return figure
    return measure


@pytest.mark.slow
def test_calibrate_key_changes_with_server_slos_and_condition(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    key = _key(scenario, path)
    assert key == _key(scenario, path)
    assert key != _key(scenario, path, "n-1")
    assert key != _key(*_scenario(tmp_path, target__embedded={"nodes": 3}))
    other_slo = scenario.model_copy(update={"slos": []})
    assert key != _key(other_slo, path)


def _at_url(scenario: Scenario, url: str, protocol: str = "rushhour") -> Scenario:
    return scenario.model_copy(update={"target": scenario.target.model_copy(
        update={"embedded": None, "url": url, "protocol": protocol})})


def test_calibrate_a_url_target_is_keyed_by_its_url_and_protocol_never_its_credentials(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    at_9 = _key(_at_url(scenario, "http://127.0.0.1:9"), path)
    assert at_9 != _key(scenario, path)  # the embedded server is another target
    assert at_9 != _key(_at_url(scenario, "http://127.0.0.1:10"), path)
    assert at_9 != _key(_at_url(scenario, "http://127.0.0.1:9", "openai-chat"), path)
    assert at_9 == calibration_key(scenario, "none", source=str(path), base_dir=path.parent,
                                   target_url="http://127.0.0.1:9/")[0]  # a capacity job's --target: the same
    _, parts = calibration_key(_at_url(scenario, "http://user:secret@127.0.0.1:9"), "none", source=str(path),
                               base_dir=path.parent)
    assert "secret" not in json.dumps(parts) and parts["url"] == "http://***@127.0.0.1:9"
    assert "server" not in parts and "server" not in parts["version"]


def test_calibrate_a_url_job_loads_the_url_and_is_cached_under_its_key(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    remote = _at_url(scenario, "http://127.0.0.1:9")
    job = calibration_job(remote, "none", source=str(path), base_dir=path.parent)
    assert job.target_url == "http://127.0.0.1:9"
    written = remember(job, _document(42.0))
    assert [p.name for p in written] == [f"{_key(remote, path)}.json"]
    assert json.loads(written[0].read_text())["target"] == "http://127.0.0.1:9"


def test_calibrate_refuses_a_scenario_without_a_per_request_slo_saying_what_to_write(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    bare = scenario.model_copy(update={"slos": []})
    with pytest.raises(ValueError, match=r"no per-request SLO .* add one under slos: .* or give peak_rps as a number"):
        calibrated_peak(bare, RelativePeak(0.7, "none"), source=str(path), base_dir=path.parent,
                        run=lambda job: pytest.fail("nothing may be measured"))


def test_calibrate_refuses_n_minus_one_on_a_service_without_the_admin_api(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    scenario, path = _scenario(tmp_path)
    monkeypatch.delenv("RUSHHOUR_ADMIN_TOKEN", raising=False)
    chat = _at_url(scenario, "http://127.0.0.1:9", "openai-chat")
    with pytest.raises(ValueError, match=r'write "0.6x capacity" to calibrate on the healthy service'):
        calibrated_peak(chat, RelativePeak(0.6, "n-1"), source=str(path), base_dir=path.parent,
                        run=lambda job: pytest.fail("nothing may be measured"))


def _document(capacity: float | None, **extra: object) -> dict[str, object]:
    entry = {"condition": "none", "capacity_rps": capacity, "bracket": [capacity, 50.0], "summary": "s",
             "generator_bound": False, "ceiling": False, "confirmed": True, **extra}
    return {"conditions": [entry]}


def test_calibrate_remember_caches_only_full_embedded_measurements(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    job = calibration_job(scenario, "none", source=str(path), base_dir=path.parent)
    written = remember(job, _document(42.0))
    assert [p.name for p in written] == [f"{_key(scenario, path)}.json"]
    assert json.loads(written[0].read_text())["capacity_rps"] == 42.0
    assert remember(job, _document(None)) == [] and remember(job, _document(42.0, generator_bound=True)) == []
    assert remember(job, _document(42.0) | {"aborted": "interrupted by SIGTERM"}) == []  # a search cut short
    partial = calibration_job(scenario, "none", source=str(path), base_dir=path.parent)
    object.__setattr__(partial, "slos", [])
    assert remember(partial, _document(42.0)) == []


def test_calibrate_windows_spend_the_paired_error_on_met_and_cache_only_a_confirmed_figure(tmp_path: Path) -> None:
    """A calibration's figure passes two windows, so each window's "met" spends sqrt(5%): its
    windows need 175 requests in a P99's scope, not 314; a figure left unconfirmed would rest on
    one such window, so it is not cached. A plain capacity job (5% per window) caches it."""
    scenario, path = _scenario(tmp_path)
    job = calibration_job(scenario, "none", source=str(path), base_dir=path.parent)
    assert job.rules.met_error == pytest.approx(0.05 ** 0.5) and job.rules.confidence == "77.6%"
    p99 = next(f for f in job.floors if f.name == "p99")
    assert p99.needed == 175
    plain = dataclasses.replace(job, rules=dataclasses.replace(job.rules, met_error=0.05))
    assert slo_floors(job.mix, job.slos, 60.0)[0].needed > job.floors[0].needed
    assert remember(job, _document(42.0, confirmed=False)) == [] and remember(job, _document(42.0, confirmed=None)) == []
    assert [p.name for p in remember(plain, _document(42.0, confirmed=False))] == [f"{_key(scenario, path)}.json"]
    moved = {"changed": True, "sentence": "the machine answered the same load 9% slower at the end"}
    assert remember(plain, _document(42.0, confirmed=False, machine_drift=moved)) == []  # a changing machine's figure: never cached
    assert remember(job, _document(42.0, machine_drift=moved | {"changed": False})) != []


def test_calibrate_an_unconfirmed_figure_serves_the_run_and_says_it_is_not_cached(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    said: list[str] = []
    figure = calibrate.measure(scenario, "none", source=str(path), base_dir=path.parent, say=said.append,
                               run=lambda job: _document(37.5, confirmed=False, summary="37.5 req/s"))
    assert figure == 37.5 and not any(cache_dir().glob("*.json"))
    assert any("not confirmed by a second window (one window's 77.6%)" in line and "not cached" in line for line in said)


def test_calibrate_a_resolved_peak_says_whether_a_second_window_confirmed_its_figure(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    peak = RelativePeak(0.5, "none")
    unconfirmed = calibrated_peak(scenario, peak, source=str(path), base_dir=path.parent,
                                  run=lambda job: _document(37.5, confirmed=False, summary="37.5 req/s"))
    assert unconfirmed.capacity_rps == 37.5 and unconfirmed.confirmed is False
    confirmed = calibrated_peak(scenario, peak, source=str(path), base_dir=path.parent,
                                run=lambda job: _document(41.0, summary="41 req/s"))
    assert confirmed.capacity_rps == 41.0 and confirmed.confirmed is True  # measured, then cached
    planned = calibrated_peak(scenario, peak, source=str(path), base_dir=path.parent, dry_run=True)
    assert planned.confirmed is True and planned.capacity_rps == 41.0  # the cached figure was confirmed


@pytest.mark.slow
def test_calibrate_a_cached_figure_resolves_the_peak_and_a_remeasure_starts_next_to_it(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    job = calibration_job(scenario, "none", source=str(path), base_dir=path.parent)
    remember(job, _document(40.0))
    calibration = calibrated_peak(scenario, RelativePeak(0.7, "none"), source=str(path), base_dir=path.parent,
                                  run=lambda job: _check_document(job.start_rps, passed=True))
    assert calibration.capacity_rps == 40.0 and calibration.peak_rps == 28.0 and "every SLO met" in calibration.note
    assert calibration.measured_at and "load average" in calibration.note and calibration.load_now is not None
    changed, changed_path = _scenario(tmp_path, target__embedded={"nodes": 3})
    again = calibration_job(changed, "none", source=str(changed_path), base_dir=changed_path.parent)
    assert again.start_rps == pytest.approx(36.0) and again.settings.growth < 2.0


def test_calibrate_a_miss_measures_now_but_a_dry_run_never_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scenario, path = _scenario(tmp_path)
    measured: list[str] = []
    monkeypatch.setattr(calibrate, "measure", _measurer(measured, 30.0))
    peak = RelativePeak(0.5, "n-1")
    planned = calibrated_peak(scenario, peak, source=str(path), base_dir=path.parent, dry_run=True)
    assert measured == [] and "not measured" in planned.note
    resolved = calibrated_peak(scenario, peak, source=str(path), base_dir=path.parent)
    assert measured == ["n-1"] and resolved.peak_rps == 15.0 and resolved.condition == "n-1"
    assert not any(cache_dir().glob("*.json"))  # the fake measurement cached nothing


def _check_document(rate: float | None, *, passed: bool = False, missed: bool = False) -> dict[str, object]:
    """capacity.json of a one-step check at `rate`: passed, P99 shown missed, or neither (open)."""
    decision = "met" if passed else "missed" if missed else "open"
    step = {"offered_rps": rate, "passed": passed, "verdict": "pass" if passed else "fail",
            "limiting": None if passed else "p99", "reason": "r", "slos": [{"name": "p99", "decision": decision}]}
    return {"steps": [step], "conditions": [], "aborted": None}


def _search_document(capacity: float, *, ceiling: bool = False) -> dict[str, object]:
    return _document(capacity, ceiling=ceiling, summary=f"{capacity} req/s")


def test_calibrate_a_search_at_its_ceiling_is_searched_again_above_it(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    jobs: list[CapacityJob] = []

    def run(job: CapacityJob) -> dict[str, Any]:
        jobs.append(job)
        top = job.settings.max_rps
        return _search_document(top, ceiling=True) if len(jobs) == 1 else _search_document(top * 0.6)

    figure = calibrate.measure(scenario, "none", source=str(path), base_dir=path.parent, say=lambda _t: None, run=run)
    first, second = jobs
    assert second.settings.min_rps == first.settings.max_rps  # the ceiling is the new floor
    assert figure == pytest.approx(second.settings.max_rps * 0.6) and figure > first.settings.max_rps


def test_calibrate_a_ceiling_that_never_ends_is_refused_with_the_reason(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    with pytest.raises(ValueError, match="only known to be above"):
        calibrate.measure(scenario, "none", source=str(path), base_dir=path.parent, say=lambda _t: None,
                          run=lambda job: _search_document(job.settings.max_rps, ceiling=True))
    assert not any(cache_dir().glob("*.json"))  # a lower bound is never cached as the capacity


def test_calibrate_a_cached_figure_the_machine_no_longer_carries_is_measured_again(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    remember(calibration_job(scenario, "none", source=str(path), base_dir=path.parent), _document(400.0))
    checks: list[float] = []
    searches: list[CapacityJob] = []

    def run(job: CapacityJob) -> dict[str, Any]:
        if job.settings.max_steps == 1:  # the check step at the cached rate: shown missed
            assert job.start_rps is not None
            checks.append(job.start_rps)
            return _check_document(job.start_rps, missed=True)
        searches.append(job)
        return _search_document(36.0)

    calibration = calibrated_peak(scenario, RelativePeak(0.5, "none"), source=str(path), base_dir=path.parent, run=run)
    assert checks == [400.0] and calibration.capacity_rps == 36.0 and calibration.peak_rps == 18.0
    # afresh below the check's rate, which is the search's first failure, around the probed throughput
    first = searches[0]
    assert first.settings.max_rps == 400.0 and first.start_rps is None and first.probe
    assert first.known_fail is not None and (first.known_fail.rate_rps, first.known_fail.verdict) == (400.0, "fail")
    assert first.known_fail.limiting == "p99" and "missed p99" in first.known_fail.reason
    assert "re-measured" in calibration.note and "missed p99" in calibration.note
    with pytest.raises(calibrate.CalibrationInvalid, match="no-recalibrate"):
        remember(calibration_job(scenario, "none", source=str(path), base_dir=path.parent), _document(400.0))
        calibrated_peak(scenario, RelativePeak(0.5, "none"), source=str(path), base_dir=path.parent, run=run,
                        recalibrate=False)


def test_calibrate_a_check_step_that_is_only_open_keeps_the_cached_figure(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    remember(calibration_job(scenario, "none", source=str(path), base_dir=path.parent), _document(40.0))
    calibration = calibrated_peak(scenario, RelativePeak(0.5, "none"), source=str(path), base_dir=path.parent,
                                  run=lambda job: _check_document(job.start_rps), recalibrate=False)
    assert calibration.capacity_rps == 40.0 and "no SLO shown missed" in calibration.check


def test_calibrate_no_recalibrate_makes_a_stale_figure_an_invalid_run(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from rushhour.scenarios.cli.calibration import StaleCalibration
    from rushhour.scenarios.cli.calibration import calibrate as calibration_step

    scenario, path = _scenario(tmp_path)
    remember(calibration_job(scenario, "none", source=str(path), base_dir=path.parent), _document(400.0))
    monkeypatch.setattr(calibrate, "_run_capacity", lambda job, say: _check_document(job.start_rps, missed=True))
    with pytest.raises(StaleCalibration) as raised:
        calibration_step(scenario, RelativePeak(0.5, "none"), source=str(path), base_dir=path.parent, dry_run=False,
                         say=lambda _t: None, recalibrate=False)
    assert raised.value.exit_code == 3 and "400" in raised.value.message


def test_calibrate_a_first_measurement_searches_around_the_probed_throughput_first(tmp_path: Path) -> None:
    """The first search probes the throughput; one that ends below its lowest rate (the knee below
    what a 60 s step can show) is followed by the scenario's whole range with 180 s steps: the
    probed search already reached the lowest rate of the 60 s whole-range search."""
    scenario, path = _scenario(tmp_path)
    jobs: list[CapacityJob] = []
    said: list[str] = []

    def run(job: CapacityJob) -> dict[str, Any]:
        jobs.append(job)
        return _document(None, below_min=True) if job.probe else _search_document(33.0)

    figure = calibrate.measure(scenario, "none", source=str(path), base_dir=path.parent, say=said.append, run=run)
    probed, whole = jobs
    assert probed.probe and not whole.probe and figure == 33.0
    assert probed.rules.measure_s == 60.0 and whole.rules.measure_s == 180.0
    assert whole.start_rps is None and probed.out_dir != whole.out_dir
    assert whole.settings.min_rps < probed.settings.min_rps
    assert "its throughput first" in said[0] and "180 s steps" in said[1]


def _recording(jobs: list[CapacityJob], capacity: float) -> Callable[[CapacityJob], dict[str, Any]]:
    def run(job: CapacityJob) -> dict[str, Any]:
        jobs.append(job)
        return _search_document(capacity)
    return run


def test_calibrate_a_probed_search_that_finds_the_capacity_is_the_only_one(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    jobs: list[CapacityJob] = []
    figure = calibrate.measure(scenario, "none", source=str(path), base_dir=path.parent, say=lambda _t: None,
                               run=_recording(jobs, 41.0))
    assert figure == 41.0 and [job.probe for job in jobs] == [True]
    assert jobs[0].settings.generator_limits  # the drill's own generator bounds what it may report


def test_calibrate_a_figure_of_another_version_is_measured_again_probed_first(tmp_path: Path) -> None:
    """A changed server (or version) changes the key: the new measurement probes the throughput
    and sizes its steps to their rate like a first one, starting next to the old figure only
    when the probe gives no plan."""
    scenario, path = _scenario(tmp_path)
    remember(calibration_job(scenario, "none", source=str(path), base_dir=path.parent), _document(40.0))
    changed, changed_path = _scenario(tmp_path, target__embedded={"nodes": 3})
    jobs: list[CapacityJob] = []
    calibrate.measure(changed, "none", source=str(changed_path), base_dir=changed_path.parent, say=lambda _t: None,
                      run=_recording(jobs, 38.0))
    assert [job.probe for job in jobs] == [True] and jobs[0].start_rps == pytest.approx(36.0)


def test_calibrate_a_remeasure_after_a_failed_check_probes_below_the_failure(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    jobs: list[CapacityJob] = []
    failure = StepVerdict(40.0, "fail", "p99", "a 20 s step at 40 req/s missed p99")
    calibrate.measure(scenario, "none", source=str(path), base_dir=path.parent, say=lambda _t: None,
                      run=_recording(jobs, 30.0), known_fail=failure)
    assert [job.probe for job in jobs] == [True] and jobs[0].settings.max_rps == 40.0
    assert jobs[0].known_fail == failure


def test_calibrate_a_known_failure_below_every_rate_a_step_can_show_is_dropped(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    low = calibration_job(scenario, "none", source=str(path), base_dir=path.parent).settings.min_rps
    job = calibration_job(scenario, "none", source=str(path), base_dir=path.parent,
                          known_fail=StepVerdict(low * 0.9, "fail", "p99", "r"))
    assert job.known_fail is None and job.settings.max_rps > low


def test_calibrate_a_generator_invalid_check_is_a_failure_limited_by_the_generator() -> None:
    document = _check_document(80.0)
    document["steps"][0] |= {"verdict": "invalid", "reason": "send lag P99 400 ms"}  # type: ignore[index]
    result = checked(document)
    assert not result.held and result.failure == StepVerdict(80.0, "fail", GENERATOR, result.reason)
    assert checked(_check_document(80.0)).failure is None  # open: it held, nothing to start from


def test_calibrate_names_the_highest_rate_that_passed_when_a_planned_search_ends_at_its_top(tmp_path: Path) -> None:
    """A search planned around the probe tops out below the scenario's whole range: the widening
    message names the top it reached, not the range's."""
    scenario, path = _scenario(tmp_path)
    said: list[str] = []
    jobs: list[CapacityJob] = []

    def run(job: CapacityJob) -> dict[str, Any]:
        jobs.append(job)
        return _search_document(job.settings.max_rps * 0.4, ceiling=True) if len(jobs) == 1 else _search_document(
            job.settings.min_rps * 1.2)

    calibrate.measure(scenario, "none", source=str(path), base_dir=path.parent, say=said.append, run=run)
    top = jobs[0].settings.max_rps * 0.4
    [message] = [line for line in said if "lower bound" in line]
    assert message.startswith(f"every rate up to {top:g} req/s passed")


@pytest.mark.parametrize("entry", [{"below_min": True}, {}], ids=["only-failures", "a-pass"])
def test_calibrate_an_interrupted_search_stops_the_calibration_and_caches_nothing(
        tmp_path: Path, entry: dict[str, object]) -> None:
    """Ctrl-C in the middle of a search: whatever its steps showed so far (all failures, which
    look like "below the lowest rate", or an unconfirmed pass) is neither cached nor followed by
    the next search; the command ends as interrupted (exit 3)."""
    from rushhour.scenarios.cli.calibration import CalibrationStopped
    from rushhour.scenarios.cli.calibration import calibrate as calibration_step

    scenario, path = _scenario(tmp_path)
    jobs: list[CapacityJob] = []

    def run(job: CapacityJob) -> dict[str, Any]:
        jobs.append(job)
        return _document(None if entry else 44.0, **entry) | {"aborted": "interrupted by the operator (Ctrl-C)"}

    with pytest.raises(calibrate.CalibrationAborted, match="interrupted by the operator"):
        calibrate.measure(scenario, "none", source=str(path), base_dir=path.parent, say=lambda _t: None, run=run)
    assert len(jobs) == 1 and not any(cache_dir().glob("*.json"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(calibrate, "_run_capacity", lambda job, say: run(job))
        with pytest.raises(CalibrationStopped) as raised:
            calibration_step(scenario, RelativePeak(0.5, "none"), source=str(path), base_dir=path.parent,
                             dry_run=False, say=lambda _t: None)
    assert raised.value.exit_code == 3 and "nothing was cached" in raised.value.message


def test_calibrate_a_check_step_cut_short_stops_instead_of_measuring_again(tmp_path: Path) -> None:
    scenario, path = _scenario(tmp_path)
    remember(calibration_job(scenario, "none", source=str(path), base_dir=path.parent), _document(40.0))
    jobs: list[CapacityJob] = []

    def run(job: CapacityJob) -> dict[str, Any]:
        jobs.append(job)
        return _check_document(job.start_rps) | {"aborted": "interrupted by the operator (Ctrl-C)"}

    with pytest.raises(calibrate.CalibrationAborted, match="check of the cached capacity stopped"):
        calibrated_peak(scenario, RelativePeak(0.5, "none"), source=str(path), base_dir=path.parent, run=run)
    assert len(jobs) == 1 and jobs[0].settings.max_steps == 1  # the check alone, no search after it
