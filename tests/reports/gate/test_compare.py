"""The P99 gate of stored runs: paired when schedules match, several baseline runs, failures as
infinitely slow, the failure share judged on its own, explained."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from benchmarks.synth import make_answered_results, make_results
from rushhour.reports.gate.baselines import ScheduleMismatch
from rushhour.reports.gate.compare import compare_runs, explain_comparison
from rushhour.reports.gate.decision import explain
from rushhour.reports.gate.population import GatePopulation, parse_population
from rushhour.reports.rundata.results import ResultsError
from rushhour.scenarios.cli.report import compare
from tests.reports.helpers import requests_frame, write_run

NIGHTLY_LIKE = 2_000  # requests per synthetic run: groups of about 600 paid, 1,000 free, 400 batch


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("compare")
    return {
        "base": make_results(root / "base", n_requests=20_000, seed=3),
        "same": make_results(root / "same", n_requests=20_000, seed=3),
        "slow": make_results(root / "slow", n_requests=20_000, seed=3, slowdown=1.3),
        "noisy": make_results(root / "noisy", n_requests=20_000, seed=4),
    }


@pytest.mark.slow
def test_compare_paired_flags_planted_30_percent_regression(runs: dict[str, Path]) -> None:
    result = compare_runs(runs["base"], runs["slow"])
    assert result.regression and result.decision.paired
    judged = {g.group: g for g in result.decision.groups if g.skipped is None}
    assert set(judged) == {"batch", "free", "paid"}
    for group in judged.values():
        assert group.ratio == pytest.approx(1.3, abs=0.03) and group.ci is not None
        assert group.pairs == group.samples_current == group.samples_baseline
    free, paid, batch = judged["free"].ci, judged["paid"].ci, judged["batch"].ci
    assert free is not None and paid is not None and batch is not None
    assert paid[0] > 1.1 and judged["paid"].regression
    # 0.87% of batch and 0.71% of free requests fail in both runs (the same ones, inside the fault
    # window). The bootstrap resamples blocks of consecutive requests, so a resample can hold more
    # than 1% of them: its P99 is a failure on both sides, no change, and the interval reaches 1.
    assert judged["batch"].failed_current / judged["batch"].samples_current == pytest.approx(0.0087, abs=0.001)
    assert batch[0] == pytest.approx(1.0) and not judged["batch"].regression
    assert free[0] == pytest.approx(1.0) and free[1] >= 1.29
    p99 = next(row for row in result.rows if row["metric"].startswith("P99"))
    assert p99["change"] == pytest.approx(0.3, abs=0.03)


@pytest.mark.slow
def test_compare_passes_identical_rerun(runs: dict[str, Path]) -> None:
    result = compare_runs(runs["base"], runs["same"])
    assert not result.regression and result.decision.paired
    assert all(g.ratio == 1.0 and g.ci == (1.0, 1.0) for g in result.decision.groups)


@pytest.mark.slow
def test_compare_different_schedules_fall_back_to_unpaired(runs: dict[str, Path]) -> None:
    result = compare_runs(runs["base"], runs["noisy"])
    assert not result.regression and not result.decision.paired
    assert "schedules differ" in result.decision.pairing
    assert any("Seeds differ" in note for note in result.notes)
    assert all(g.pairs is None for g in result.decision.groups)


@pytest.mark.slow
def test_compare_paired_refuses_different_schedules(runs: dict[str, Path]) -> None:
    with pytest.raises(ScheduleMismatch, match="needs runs that replayed the same schedule") as caught:
        compare_runs(runs["base"], runs["noisy"], paired=True)
    assert isinstance(caught.value, ResultsError)  # the CLI maps ResultsError to exit 2
    assert "intended_s" in str(caught.value)


def _answered(root: Path, **kwargs: Any) -> Path:
    return make_answered_results(root, **kwargs)


def _trial(root: Path, seed: int, slowdown: float) -> bool:
    """Same schedule, independent per-request noise of +-15%: is the current run flagged?"""
    base = _answered(root / f"base-{seed}", n_requests=NIGHTLY_LIKE, seed=100 + seed, noise=0.15,
                     noise_seed=1_000 + seed)
    cur = _answered(root / f"cur-{seed}-{slowdown}", n_requests=NIGHTLY_LIKE, seed=100 + seed,
                    noise=0.15, noise_seed=2_000 + seed, slowdown=slowdown)
    return compare_runs(base, cur).regression


@pytest.mark.slow
def test_compare_power_30_percent_slowdown_flagged_in_9_of_10_seeds(tmp_path: Path) -> None:
    flagged = sum(_trial(tmp_path, seed, 1.3) for seed in range(10))
    assert flagged >= 9


@pytest.mark.slow
def test_compare_same_code_flagged_at_most_1_of_10_seeds(tmp_path: Path) -> None:
    flagged = sum(_trial(tmp_path, seed, 1.0) for seed in range(10))
    assert flagged <= 1


@pytest.mark.slow
def test_compare_directory_of_baseline_runs_models_run_to_run_noise(tmp_path: Path) -> None:
    # Two same-code baseline runs that differ by 25% as a whole (a noisy machine), and a current
    # run 20% slower than the first. Against the first run alone that is a regression. Against
    # both, their spread is run-to-run noise known from one degree of freedom: the t band is so
    # wide that neither 20% nor 60% can be told from noise, and the explanation says why.
    baselines = tmp_path / "baselines"
    for name, factor, noise_seed in (("run-1", 1.0, 1), ("run-2", 1.25, 2)):
        _answered(baselines / name, n_requests=NIGHTLY_LIKE, seed=5, noise=0.15, noise_seed=noise_seed,
                  slowdown=factor)
    current = _answered(tmp_path / "cur", n_requests=NIGHTLY_LIKE, seed=5, noise=0.15, noise_seed=3, slowdown=1.2)
    assert compare_runs(baselines / "run-1", current).regression
    both = compare_runs(baselines, current)
    assert not both.regression and len(both.decision.baseline_runs) == 2
    for group in both.decision.groups:
        assert group.threshold == pytest.approx(1.1) and group.noise_band is not None and group.noise_band > 3.0
        assert group.run_noise_sd is not None and 0.05 < group.run_noise_sd < 0.3 and group.noise_df == 1
    assert "fewer than 5 runs" in explain_comparison(both)
    slow = _answered(tmp_path / "slow", n_requests=NIGHTLY_LIKE, seed=5, noise=0.15, noise_seed=4, slowdown=1.6)
    assert not compare_runs([baselines / "run-1", baselines / "run-2"], slow).regression
    # Six runs spread the same way (x1 to x1.25) pin the noise down: 60% is found, 20% is not.
    for name, factor, noise_seed in (("run-3", 1.1, 5), ("run-4", 1.2, 6), ("run-5", 1.05, 7), ("run-6", 1.15, 8)):
        _answered(baselines / name, n_requests=NIGHTLY_LIKE, seed=5, noise=0.15, noise_seed=noise_seed,
                  slowdown=factor)
    assert compare_runs(baselines, slow).regression
    assert not compare_runs(baselines, current).regression


@pytest.mark.slow
def test_compare_failures_count_as_infinitely_slow(tmp_path: Path) -> None:
    # 2,000 requests at 100 ms. The current run answers 3% of them 504 after 3 s: the ok requests
    # are as fast as before, so only counting failures as slow reveals the regression.
    times = np.linspace(0, 100, 2_000)
    base = write_run(tmp_path / "b", requests_frame(times, np.full(2_000, 100.0)))
    failed = np.arange(2_000) % 33 == 0
    slow = requests_frame(times, np.where(failed, 3_000.0, 100.0), ok=~failed)
    result = compare_runs(base, write_run(tmp_path / "c", slow))
    [group] = result.decision.groups
    assert result.regression and group.failed_current == int(failed.sum()) and group.p_current_ms == np.inf
    assert group.latency_regression and group.failure_regression


def _instant_503(root: Path, share: float, seed: int) -> Path:
    """2,000 requests answered in 100-200 ms, except `share` of them: an instant (1 ms) 503."""
    rng = np.random.default_rng(seed)
    failed = rng.permutation(2_000) < round(share * 2_000)
    latency = np.where(failed, 1.0, rng.uniform(100.0, 200.0, 2_000))
    frame = requests_frame(np.linspace(0, 100, 2_000), latency, ok=~failed)
    frame["status"] = np.where(failed, 503, 200)
    return write_run(root, frame)


@pytest.mark.slow
def test_compare_instant_503s_are_a_regression_exit_1(tmp_path: Path) -> None:
    # The candidate sheds 10% of requests with an instant 503: counted at its end, that would
    # lower P99; counted as infinitely slow, and by its failure share, it is a regression.
    base, cur = _instant_503(tmp_path / "b", 0.0, 1), _instant_503(tmp_path / "c", 0.10, 2)
    result = compare_runs(base, cur)
    [group] = result.decision.groups
    assert result.regression and group.p_current_ms == np.inf and group.failure_regression
    assert "failure share 0.00% -> 10." in result.reason
    done = CliRunner().invoke(compare, [str(base), str(cur)])
    assert done.exit_code == 1, done.output
    assert "rushhour ab" in done.output and "cannot separate the machine's load from the code" in done.output


@pytest.mark.slow
def test_compare_failure_share_is_judged_when_p99_fails_in_both(tmp_path: Path) -> None:
    # 2% of the baseline's requests fail, so its P99 is a failure, and 6% of the current's: the
    # ratio cannot say anything; the failure share does. 2% against 2.2% is no regression.
    base = _instant_503(tmp_path / "b", 0.02, 1)
    worse = compare_runs(base, _instant_503(tmp_path / "c", 0.06, 2))
    [group] = worse.decision.groups
    assert worse.regression and group.ratio is None and group.failure_regression
    assert group.note is not None and "judged on the failure share only" in group.note
    similar = compare_runs(base, _instant_503(tmp_path / "s", 0.022, 3))
    assert not similar.regression and not similar.decision.groups[0].failure_regression


@pytest.mark.slow
def test_compare_small_change_is_not_a_regression_even_if_significant(tmp_path: Path) -> None:
    latency = np.linspace(100.0, 200.0, 5000)
    base = write_run(tmp_path / "b", requests_frame(np.linspace(0, 10, 5000), latency))
    cur = write_run(tmp_path / "c", requests_frame(np.linspace(0, 10, 5000), latency * 1.05))
    result = compare_runs(base, cur)
    [group] = result.decision.groups
    assert group.ci is not None and group.ci[0] > 1.0 and not result.regression
    assert "below its x1.100 threshold" in result.reason


def test_compare_population_leaves_documents_out_unless_asked(tmp_path: Path) -> None:
    # Short requests unchanged, documents twice as slow: the default gate (documents excluded)
    # passes; a gate on documents only flags it.
    n = 1_000
    kinds = np.where(np.arange(n) % 2 == 0, "short", "document")
    latency = np.where(kinds == "short", 100.0, 5_000.0) * np.linspace(0.5, 1.5, n)
    times = np.linspace(0, 50, n)
    base = write_run(tmp_path / "b", requests_frame(times, latency, kind=kinds))
    cur = write_run(tmp_path / "c", requests_frame(times, latency * np.where(kinds == "document", 2.0, 1.0),
                                                   kind=kinds))
    assert not compare_runs(base, cur).regression
    documents = GatePopulation(kinds=("document",), exclude_kinds=(), split_by=None)
    result = compare_runs(base, cur, population=documents)
    assert result.regression and result.decision.groups[0].group == "all"


@pytest.mark.slow
def test_compare_explains_itself(runs: dict[str, Path]) -> None:
    result = compare_runs(runs["base"], runs["slow"])
    text = explain(result.decision)
    for phrase in ("Population: P99 of attempted requests (kind not document), one group per priority.",
                   "Paired: yes", "Baseline: 1 run(s)", "8 time sections", "needs two or more baseline runs", "interval",
                   "thresh", "REGRESSION:"):
        assert phrase in text
    paid = next(line for line in text.splitlines() if line.startswith("paid"))
    assert "REGRESSION" in paid and "1.100" in paid
    full = explain_comparison(result)
    assert full.startswith("metric") and "gate paid: P99 (ms)" in full and text in full
    assert explain(result.as_dict()["decision"]) == text


def test_compare_rejects_missing_directory_and_empty_population(tmp_path: Path, runs: dict[str, Path]) -> None:
    with pytest.raises(ResultsError, match="does not exist"):
        compare_runs(tmp_path / "nope", runs["base"])
    tiny = write_run(tmp_path / "tiny", requests_frame(np.arange(50.0), np.full(50, 10.0)))
    with pytest.raises(ResultsError, match="has the 100 attempted requests"):
        compare_runs(tiny, tiny)


def test_gate_population_from_cli_text() -> None:
    population = parse_population("kinds=short|chat, by=none, p=95")
    assert population == GatePopulation(kinds=("short", "chat"), split_by=None, percentile=95.0)
    assert parse_population("") == GatePopulation()
    assert parse_population("exclude=,priorities=paid").exclude_kinds == ()
    with pytest.raises(ValueError, match='key "colour" in "colour=red" is unknown'):
        parse_population("colour=red")
    with pytest.raises(ValueError, match='percentile "150"'):
        parse_population("p=150")
    with pytest.raises(ResultsError, match='groups requests by "colour"'):
        GatePopulation(split_by="colour").groups(requests_frame([0.0], [1.0], kind="short"))


def _spiky(root: Path, spike_seed: int, slowdown: float = 1.0) -> Path:
    """A same-schedule run whose slowest 3% are random requests made 4x slower: each run's tail
    is made of different requests, as on a real machine."""
    run = _answered(root, n_requests=NIGHTLY_LIKE, seed=5, slowdown=slowdown)
    requests = pd.read_parquet(run / "requests.parquet")
    spiked = np.random.default_rng(spike_seed).random(len(requests)) < 0.03
    factor = np.where(spiked, 4.0, 1.0)
    requests["latency_ms"] = requests["latency_ms"] * factor
    requests["done_s"] = requests["intended_s"] + requests["latency_ms"] / 1000.0
    requests.to_parquet(run / "requests.parquet")
    return run


@pytest.mark.slow
def test_compare_several_baselines_do_not_shrink_the_baseline_tail(tmp_path: Path) -> None:
    """The baseline's P99 is the geometric mean of the runs' own P99s, not the P99 of per-request medians
    (which would miss every run's spikes and make a same-code night look ~4x slower)."""
    baselines = tmp_path / "baselines"
    for i in range(5):
        _spiky(baselines / f"run-{i + 1}", spike_seed=i)
    same = compare_runs(baselines, _spiky(tmp_path / "same", spike_seed=99))
    assert not same.regression
    assert all(g.ratio is not None and 0.8 < g.ratio < 1.25 for g in same.decision.groups), same.decision.groups
    slow = compare_runs(baselines, _spiky(tmp_path / "slow", spike_seed=98, slowdown=1.3))
    assert slow.regression


@pytest.mark.slow
def test_comparison_names_the_method_and_sample_behind_each_interval(runs: dict[str, Path]) -> None:
    result = compare_runs(runs["base"], runs["same"]).as_dict()
    for group in (g for g in result["decision"]["groups"] if g["skipped"] is None):
        assert group["method"].startswith("paired bootstrap over requests")
        # these runs hold a few hundred requests a group: too few for 4 sections past a P99
        assert "one baseline run too short for 4 time sections" in group["method"]
        assert "run-to-run noise not modelled" in group["method"]
        assert group["bootstrap_blocks"] is not None and 10 < group["bootstrap_blocks"] < group["pairs"]
        assert "Fisher exact test on counts divided by the design effect" in group["failure_method"]
        assert group["failure_design_effect"] >= 1.0 and group["failure_effective_current"] > 0
    assert "blocks resampled" in explain_comparison(result)
