"""An A/B run's files, drawn, written and merged a chunk at a time, equal the whole-schedule path.

The load here is a stand-in for the Locust workers: it reads each worker's share from the written
schedule as the workers do and records every row (a few unsent, a few fired twice) at the arm its
row names, so what is checked is everything the run does around the load, with no server.
"""

from __future__ import annotations

import functools
import io
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
import yaml
from click.testing import CliRunner

from rushhour.kernel.contract import AB_COLUMNS, REQUESTS_FILE, SCHEDULE_FILE
from rushhour.kernel.processes import free_port, stop_process
from rushhour.reference_server.launch import LaunchError
from rushhour.scenarios.ab.runner import AbRun
from rushhour.scenarios.ab.targets import ArmTarget
from rushhour.scenarios.ab.trials import TrialDesign, assign_rows
from rushhour.scenarios.cli.ab import ab, each_arm_at_full_rate
from rushhour.scenarios.cli.run import prepare
from rushhour.scenarios.generator.sharestream import share_tables
from rushhour.scenarios.load.parts import PART_COLUMNS, list_parts, merge_requests, read_parts
from rushhour.scenarios.load.session import LoadSession
from rushhour.scenarios.spec.plan import DrillPlan, Overrides, ScheduleDraw
from tests.support.waiting import wait_for_http

URLS = {"baseline": "http://127.0.0.1:1", "candidate": "http://127.0.0.1:2"}
SERVICE_S = {URLS["baseline"]: 0.100, URLS["candidate"]: 0.130}
CHUNK_ROWS = 97
TIMED_TARGET = Path(__file__).resolve().parents[2] / "support" / "timed_target.py"


class StandInSession(LoadSession):
    """A LoadSession whose workers are this function: every row of each share recorded at once."""

    given: ClassVar[dict[str, list[int]]] = {}

    def start(self) -> float:
        rng = np.random.default_rng(4)
        self.parts_dir.mkdir(parents=True, exist_ok=True)
        for index in range(self.settings.workers):
            for seq, table in enumerate(share_tables(self.settings.schedule_path, index, self.settings.workers,
                                                     batch_rows=CHUNK_ROWS)):
                share = table.to_pandas()
                for url, mine in share.groupby("base_url"):
                    StandInSession.given.setdefault(str(url), []).extend(mine["row"].tolist())
                rows = share[rng.random(len(share)) < 0.97]  # a few never sent
                rows = pd.concat([rows, rows.iloc[:2]])  # and two fired twice
                path = self.parts_dir / f"part-w{index:03d}-{seq:06d}.parquet"
                _part(rows, rng).to_parquet(path, index=False)
        self.t0 = time.time()
        return self.t0

    def finished(self) -> bool:
        return True

    def cpu_percent(self) -> float:
        return 10.0

    def stop(self) -> None:
        pass

    def failures(self) -> list[str]:
        return []


def _part(rows: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    frame = pd.DataFrame(dict.fromkeys(PART_COLUMNS, np.nan), index=range(len(rows)))
    intended = rows["offset_s"].to_numpy()
    frame["row"] = rows["row"].to_numpy(dtype=np.int64)
    frame["intended_s"], frame["sent_s"] = intended, intended + rng.exponential(0.002, len(rows))
    frame["done_s"] = frame["sent_s"] + rows["base_url"].map(SERVICE_S).to_numpy()
    frame["pool_wait_ms"], frame["status"], frame["error"] = 0.0, 200, ""
    frame["model"], frame["node"], frame["via"] = "fast", "fast-0", "translate"
    frame["cached"], frame["degraded"] = False, False
    frame["output_tokens"], frame["input_tokens"] = -1, -1
    return frame


def _plan(interleave: str) -> DrillPlan:
    plan = prepare("scenarios/smoke.yaml", Overrides(traffic="constant:20", duration="20s", seed=5),
                   allow_remote=False)
    return each_arm_at_full_rate(plan) if interleave == "requests" else plan


def _run(plan: DrillPlan, folder: Path, design: TrialDesign) -> AbRun:
    targets = (ArmTarget("baseline", URLS["baseline"], url=URLS["baseline"]),
               ArmTarget("candidate", URLS["candidate"], url=URLS["candidate"]))
    run = AbRun(plan, targets, design, folder, 1.1, 0.95, stream=io.StringIO(),
                probed={arm: f"{arm}: probed" for arm in URLS}, chunk_rows=CHUNK_ROWS)
    run.run()
    return run


@pytest.fixture
def chunks_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The run may draw its schedule only a chunk at a time: drawing it whole fails the test, and
    the size of every chunk drawn is kept."""
    sizes: list[int] = []
    chunks = ScheduleDraw.chunks

    def spied(draw: ScheduleDraw, chunk_rows: int = CHUNK_ROWS) -> Iterator[pd.DataFrame]:
        for frame in chunks(draw, chunk_rows):
            sizes.append(len(frame))
            yield frame

    monkeypatch.setattr(ScheduleDraw, "chunks", spied)
    monkeypatch.setattr(ScheduleDraw, "whole", _no_whole)
    monkeypatch.setattr("rushhour.scenarios.ab.runner.LoadSession", StandInSession)
    monkeypatch.setattr("rushhour.scenarios.ab.runner.machine_facts", dict)
    StandInSession.given = {}
    yield sizes


def _row_groups(path: Path) -> list[int]:
    meta = pq.ParquetFile(path).metadata
    return [meta.row_group(k).num_rows for k in range(meta.num_row_groups)]


@pytest.mark.parametrize("interleave", ["requests", "trials"])
def test_ab_files_equal_the_whole_schedule_path(tmp_path: Path, chunks_only: list[int], interleave: str) -> None:
    plan = _plan(interleave)
    design = TrialDesign.build(plan.duration_s, 8, plan.scenario.traffic.seed, interleave)
    _run(plan, tmp_path / "ab", design)
    whole = assign_rows(_whole(plan), design, URLS)
    assert len(whole) > 3 * CHUNK_ROWS and max(chunks_only) <= CHUNK_ROWS  # never more than a chunk at once
    schedule = pd.read_parquet(tmp_path / "ab" / SCHEDULE_FILE)
    pd.testing.assert_frame_equal(schedule, whole)  # each row's arm, trial and target as the whole path gives
    assert max(_row_groups(tmp_path / "ab" / SCHEDULE_FILE)) <= CHUNK_ROWS
    for url in URLS.values():  # each arm was given exactly the rows the whole path gives it
        assert sorted(StandInSession.given[url]) == whole.index[whole["base_url"] == url].tolist()
    expected = merge_requests(whole, read_parts(list_parts(tmp_path / "ab" / "load" / "parts")))
    for column, dtype in AB_COLUMNS.items():
        expected[column] = whole[column].to_numpy().astype(dtype)
    requests = pd.read_parquet(tmp_path / "ab" / REQUESTS_FILE)
    pd.testing.assert_frame_equal(requests, expected)  # intended times, arms, trials, every measured column
    assert max(_row_groups(tmp_path / "ab" / REQUESTS_FILE)) <= CHUNK_ROWS
    assert (requests["fired"] == 0).any() and (requests["fired"] == 2).any()


def test_ab_run_that_never_loaded_writes_every_row_unsent(tmp_path: Path, chunks_only: list[int],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def no_boot(*_args: object) -> None:
        raise LaunchError("the baseline server did not start")

    monkeypatch.setattr("rushhour.scenarios.ab.runner.ArmServers.start", no_boot)
    plan = _plan("requests")
    design = TrialDesign.build(plan.duration_s, 8, plan.scenario.traffic.seed, "requests")
    run = _run(plan, tmp_path / "ab", design)
    assert run.abort_reason == "the baseline server did not start" and max(chunks_only) <= CHUNK_ROWS
    assert not (tmp_path / "ab" / SCHEDULE_FILE).exists()  # as the whole path: no schedule was fired
    whole = assign_rows(_whole(plan), design, dict.fromkeys(URLS, ""))
    expected = merge_requests(whole, read_parts([]))
    for column, dtype in AB_COLUMNS.items():
        expected[column] = whole[column].to_numpy().astype(dtype)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "ab" / REQUESTS_FILE), expected)


def _whole(plan: DrillPlan) -> pd.DataFrame:
    """The whole schedule, drawn outside the spy (generate_schedule itself)."""
    from rushhour.traffic_models import generate_schedule

    d = plan.draw
    return generate_schedule(d.model, seed=d.seed, rate_scale=d.rate_scale, time_scale=d.time_scale,
                             start_clock_s=d.start_clock_s, duration_s=d.duration_s)


@pytest.fixture
def two_timed_targets() -> Iterator[dict[str, str]]:
    """Two ground-truth targets (`tests/support/timed_target.py`), 50 and 60 ms; stopped by PID."""
    started: list[subprocess.Popen[bytes]] = []
    urls = {}
    try:
        for arm, delay_ms in (("baseline", 50), ("candidate", 60)):
            port = free_port()
            started.append(subprocess.Popen([sys.executable, str(TIMED_TARGET), str(port), str(delay_ms)],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            urls[arm] = f"http://127.0.0.1:{port}"
            assert wait_for_http(urls[arm], proc=started[-1]), "the timed target did not start"
        yield urls
    finally:
        for proc in started:
            stop_process(proc, grace_s=2.0)


@pytest.mark.slow
def test_ab_command_through_locust_writes_the_whole_schedule_paths_files(
        tmp_path: Path, two_timed_targets: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`rushhour ab` end to end (Locust firing), its schedule in chunks of 37 rows: the same files
    as the whole-schedule path, and the whole schedule never drawn."""
    monkeypatch.setattr("rushhour.scenarios.ab.runner.AbRun", functools.partial(AbRun, chunk_rows=37))
    monkeypatch.setattr(ScheduleDraw, "whole", _no_whole)
    scenario = tmp_path / "abt.yaml"
    scenario.write_text(yaml.safe_dump({
        "name": "abt", "traffic": {"model": "constant:10", "duration": "8s", "seed": 11},
        "target": {"url": "http://127.0.0.1:9"}, "load": {"max_lag_p99_ms": 500},
        "slos": [{"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 5000}]}))
    out = tmp_path / "out"
    result = CliRunner().invoke(ab, [str(scenario), "--baseline", two_timed_targets["baseline"], "--candidate",
                                     two_timed_targets["candidate"], "--trials", "8", "--seed", "11",
                                     "--out", str(out)])
    assert result.exit_code in (0, 1, 3) and (out / REQUESTS_FILE).is_file(), result.output
    monkeypatch.undo()
    plan = each_arm_at_full_rate(prepare(str(scenario), Overrides(no_chaos=True), allow_remote=False))
    # the night pinned to seed 11: its texts salted from it, its first pairs warming both arms
    design = TrialDesign.build(plan.duration_s, 8, 11, "requests", warmup=True, fresh_texts=True)
    schedule = pd.read_parquet(out / SCHEDULE_FILE)
    pd.testing.assert_frame_equal(schedule, assign_rows(plan.draw.whole(), design, two_timed_targets))
    assert len(schedule) > 3 * 37 and max(_row_groups(out / SCHEDULE_FILE)) <= 37
    expected = merge_requests(schedule, read_parts(list_parts(out / "load" / "parts")))
    for column, dtype in AB_COLUMNS.items():
        expected[column] = schedule[column].to_numpy().astype(dtype)
    requests = pd.read_parquet(out / REQUESTS_FILE)
    pd.testing.assert_frame_equal(requests, expected)
    assert max(_row_groups(out / REQUESTS_FILE)) <= 37 and requests["ok"].mean() > 0.9
    ok = requests[requests["ok"]]
    assert (ok.groupby("arm")["latency_ms"].min() > pd.Series({"baseline": 49.0, "candidate": 59.0})).all()


def _no_whole(_draw: ScheduleDraw) -> pd.DataFrame:
    raise AssertionError("the A/B run drew its whole schedule")
