"""The live numbers from known part rows: counters, histograms, offered load, SLO tallies, burn."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rushhour.reports.schema import SloSpec
from rushhour.scenarios.load.parts import PART_COLUMNS
from rushhour.scenarios.run.live.fold import COUNTERS, LATENCY_BUCKETS_S, LiveFold
from rushhour.scenarios.run.live.rows import KEEP_GROUPS
from rushhour.scenarios.run.live.slo import SloBoard, burn_windows, window_name
from rushhour.traffic_models import load_traffic_model
from rushhour.traffic_models.chunked import iter_schedule, write_schedule
from rushhour.traffic_models.facts import ScheduleFacts


def _schedule() -> pd.DataFrame:
    return pd.DataFrame({
        "offset_s": [0.0, 1.0, 2.0, 3.0, 4.0], "kind": ["short"] * 5, "chars": [10, 20, 30, 40, 50],
        "priority": ["paid", "paid", "free", "free", "free"], "mode": ["auto"] * 5, "tenant": ["t"] * 5,
        "phase": ["base"] * 5, "deadline_ms": [5000] * 5, "max_tokens": [0] * 5, "text_id": [0] * 5,
    })


def _parts(rows: list[int], latency_s: list[float], status: list[int]) -> pd.DataFrame:
    intended = np.asarray(rows, dtype=float)  # offset_s == row in _schedule
    frame = pd.DataFrame(dict.fromkeys(PART_COLUMNS, np.nan), index=range(len(rows)))
    frame["row"] = rows
    frame["intended_s"] = intended
    frame["sent_s"] = intended + 0.002
    frame["done_s"] = intended + np.asarray(latency_s)
    frame["status"] = status
    frame["pool_wait_ms"] = 0.0
    for name, value in (("error", ""), ("model", "quality"), ("node", "quality-0"), ("via", "translate")):
        frame[name] = value
    frame["cached"] = False
    frame["degraded"] = False
    return frame


def test_latency_buckets_resolve_5ms_to_60s_within_a_quarter() -> None:
    buckets = np.asarray(LATENCY_BUCKETS_S)
    assert buckets[0] == pytest.approx(0.005) and buckets[-1] == 60.0
    assert (buckets[1:] / buckets[:-1]).max() <= 1.28


def test_live_fold_counts_each_scheduled_row_once_by_label() -> None:
    fold = LiveFold(_schedule())
    fold.add(_parts([0, 1, 2], [0.1, 0.2, 3.0], [200, 503, 200]))
    fold.add(_parts([1, 3], [0.5, 0.05], [200, 429]))  # row 1 again: a duplicate firing, not counted
    assert fold.groups == [("free", "short", "auto", "base"), ("paid", "short", "auto", "base")]
    assert fold.counters["sent"].tolist() == [2, 2]
    assert fold.counters["ok"].tolist() == [1, 1]
    assert fold.counters["shed"].tolist() == [1, 1]
    assert fold.counters["failed"].tolist() == [1, 1]
    assert fold.counters["ok_chars"].tolist() == [30, 10]


def test_live_fold_histogram_puts_latency_from_intended_in_its_bucket() -> None:
    fold = LiveFold(_schedule())
    fold.add(_parts([0, 1], [0.1, 0.2], [200, 503]))
    paid = fold.latency.counts[1]
    assert paid.sum() == 2 and fold.latency.sums[1] == pytest.approx(0.3)
    assert paid[LATENCY_BUCKETS_S.index(0.1)] == 1  # le="0.1" holds 0.1 (upper bound inclusive)
    assert paid[LATENCY_BUCKETS_S.index(0.2)] == 1


def test_live_fold_offered_follows_the_clock_and_recent_p99_per_priority() -> None:
    fold = LiveFold(_schedule())
    fold.advance(2.5)
    assert fold.offered.tolist() == [1, 2]
    fold.advance(10.0)
    assert fold.total("offered") == 5 and fold.offered_between(0.5, 3.0) == 3
    fold.add(_parts([0, 1, 2], [0.1, 0.2, 3.0], [200, 200, 500]))
    recent = fold.recent(now_s=6.0, window_s=10.0)
    assert recent.done == 3 and recent.failed == 1
    # recent P99s come from log buckets: within their stated 1% of the exact nearest rank
    assert recent.by_priority["paid"][1] == pytest.approx(200.0, rel=0.01)
    assert recent.by_priority["free"] == (1, pytest.approx(3000.0, rel=0.01), 1.0)


def test_slo_board_good_means_ok_and_within_threshold_and_burn_uses_end_time() -> None:
    fold = LiveFold(_schedule())
    spec = SloSpec(name="p90", kind="latency", percentile=90, threshold_ms=1000)
    board = SloBoard.for_specs([spec, SloSpec(name="g", kind="goodput", min_rps=1.0)], time_scale=3600.0)
    board.add(fold.add(_parts([0, 1, 2, 3], [0.1, 0.2, 3.0, 0.05], [200, 200, 200, 503])))
    tally = board.tallies[0]
    assert [t.spec.name for t in board.tallies] == ["p90"]  # goodput is not a good/bad SLO
    assert (tally.good, tally.bad) == (2, 2)  # slow ok and fast 503 are both bad
    # ends: 0.1, 1.2, 5.0, 3.05; 1 h / 3600 = a 1 s window: (4.5, 5.5] holds only the slow one
    assert tally.burn_rate(5.5, 1.0) == pytest.approx(1.0 / 0.1)
    assert tally.burn_rate(100.0, 1.0) == 0.0
    assert board.burn_rates(5.5)[("p90", "1h")] == pytest.approx(10.0)


def test_burn_windows_keep_the_model_clock_names() -> None:
    assert window_name(3600) == "1h" and window_name(300) == "5m" and window_name(45) == "45s"
    assert burn_windows(60.0) == [("1h", 60.0), ("5m", 5.0), ("6h", 360.0), ("30m", 30.0)]


def test_live_fold_lag_p99_is_the_exact_one_within_one_percent() -> None:
    fold = LiveFold(_schedule())
    parts = _parts([0, 1, 2, 3, 4], [0.1] * 5, [200] * 5)
    parts["sent_s"] = parts["intended_s"] + np.array([0.001, 0.004, 0.002, 0.030, 0.003])
    fold.add(parts)
    assert fold.lag_p99_ms() == pytest.approx(30.0, rel=0.01)


def _array_bytes(obj: object, depth: int = 3) -> int:
    """Bytes of every numpy array an object holds, in its fields and theirs."""
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if isinstance(obj, dict):
        return sum(_array_bytes(v, depth) for v in obj.values())
    if depth == 0 or not hasattr(obj, "__dict__") or isinstance(obj, (pd.DataFrame, type)):
        return 0
    return sum(_array_bytes(v, depth - 1) for v in vars(obj).values())


def test_live_fold_keeps_nothing_per_request_as_rows_arrive() -> None:
    schedule = pd.concat([_schedule()] * 2000, ignore_index=True)
    schedule["offset_s"] = np.arange(len(schedule)) * 0.01
    fold = LiveFold(schedule)
    sizes = []
    for start in range(0, len(schedule), 2000):
        rows = list(range(start, start + 2000))
        parts = _parts(rows, [0.05] * len(rows), [200] * len(rows))
        parts["intended_s"] = schedule["offset_s"].to_numpy()[rows]
        parts["sent_s"], parts["done_s"] = parts["intended_s"] + 0.001, parts["intended_s"] + 0.05
        fold.add(parts)
        sizes.append(_array_bytes(fold))
    assert fold.total("completed") == len(schedule)
    assert len(set(sizes)) == 1  # the same arrays, the same size, after 2,000 rows as after 10,000


def test_live_fold_over_the_schedule_file_equals_the_fold_over_the_frame(tmp_path: Path) -> None:
    path = tmp_path / "schedule.parquet"
    model = load_traffic_model("constant:200")
    write_schedule(path, iter_schedule(model, seed=3, duration_s=30, chunk_rows=1_000))  # six row groups
    facts = ScheduleFacts.of(iter_schedule(model, seed=3, duration_s=30))
    whole = pd.read_parquet(path)
    in_memory = LiveFold(whole)
    from_file = LiveFold(path, labels=facts.labels, count=facts.count)
    assert from_file.groups == in_memory.groups and from_file.count == len(whole)
    rows = np.random.default_rng(0).permutation(len(whole))[:3000]  # out of order, across every row group
    parts = _parts(list(rows), [0.05] * rows.size, [200] * rows.size)
    parts["intended_s"] = whole["offset_s"].to_numpy()[rows]
    pd.testing.assert_frame_equal(from_file.add(parts.copy()), in_memory.add(parts.copy()))
    assert from_file.add(parts.copy()).empty  # each row is folded once
    for now in (1.0, 7.3, 29.0):
        in_memory.advance(now)
        from_file.advance(now)
        assert from_file.offered.tolist() == in_memory.offered.tolist()
        assert from_file.offered_between(now - 5.0, now) == in_memory.offered_between(now - 5.0, now) > 0
    for name in COUNTERS:
        assert from_file.counters[name].tolist() == in_memory.counters[name].tolist()
    assert len(from_file.rows._cache) <= KEEP_GROUPS  # a few row groups of the file, never all of it
