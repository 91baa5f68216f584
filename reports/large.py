"""The report of a run too large to load whole: the verdict's figures from a narrow projection.

A soak of millions of requests cannot be read into pandas with every column (about 250 bytes a
row with its strings). Above LARGE_ROWS (counted from the parquet footer, before anything is
read) the report reads, through pyarrow, only the columns its verdict needs, with the label
columns dictionary-encoded (categoricals, a byte a row): about 80 bytes a row. On that narrow
frame it runs the same functions the full report runs, so each figure it gives is the figure the
full report would give (tests/reports/test_large.py): request counts, throughput, latency
percentiles with their intervals, the generator's health, the steady windows, every SLO, the
cost, the soak section with its drift verdicts, the harness's overhead. Sections that need the
other columns (faults over time, cost per token, documents, streaming, goodput, findings,
charts) are left out and named in `missing`.
Small runs keep the full pandas path (`rushhour.reports.build`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from rushhour.kernel import contract
from rushhour.reports.measures.cost import compute_cost
from rushhour.reports.measures.drift import soak_and_drift
from rushhour.reports.measures.environment import describe_environment
from rushhour.reports.measures.facts import judged_slos
from rushhour.reports.measures.faults import fault_windows
from rushhour.reports.measures.harness import harness_checks
from rushhour.reports.measures.live import live_section
from rushhour.reports.measures.overhead import flag_tight_slos, overhead_section
from rushhour.reports.measures.slos import evaluate_slos
from rushhour.reports.measures.steady import steady_mask, steady_section, steady_windows
from rushhour.reports.measures.steady_slos import judge_steady
from rushhour.reports.rundata.attempts import fill_missing_ends, latest_end_s
from rushhour.reports.rundata.results import ResultsError, RunData, load_run
from rushhour.reports.rundata.selection import phase_labels
from rushhour.reports.rundata.window import schedule_window
from rushhour.reports.summary.aggregate import (
    _scenario,
    generator_health,
    latency_sections,
    request_counts,
    throughput,
    verdict,
)
from rushhour.reports.summary.model import Summary

LARGE_ROWS = 2_000_000
"""Above this many requests the report takes the narrow path (about 150 MB of columns at the limit)."""
NARROW_COLUMNS = contract.columns_of(
    contract.REQUEST_COLUMNS, "intended_s", "sent_s", "done_s", "latency_ms", "service_ms", "pool_wait_ms", "fired",
    "status", "ok", "degraded", "cached", "chars", "priority", "phase", "kind", "mode", "model")
"""The requests columns the verdict's figures need: all the narrow path reads."""
LABELS = contract.columns_of(NARROW_COLUMNS, "priority", "phase", "kind", "mode", "model")
"""Of those, the label columns, read as categoricals."""
BATCH_ROWS = 65_536
COST_COLUMNS = list(contract.columns_of(NARROW_COLUMNS, "ok", "chars", "cached", "model", "priority", "mode",
                                        "intended_s", "done_s"))
"""Of those, the columns the cost section reads."""
LEFT_OUT = ("faults", "cost per token", "documents", "streaming", "goodput", "findings", "charts")


def request_rows(root: Path) -> int:
    """How many requests a results folder holds, from the parquet footer (0 when unreadable)."""
    try:
        return int(pq.ParquetFile(Path(root) / contract.REQUESTS_FILE).metadata.num_rows)
    except (OSError, ValueError):
        return 0


def is_large(root: Path, limit: int | None = None) -> bool:
    return request_rows(root) > (LARGE_ROWS if limit is None else limit)


def load_narrow(root: Path) -> RunData:
    """The run with a requests frame of NARROW_COLUMNS only, its labels as categoricals."""
    root = Path(root)
    path = root / contract.REQUESTS_FILE
    present = set(pq.ParquetFile(path).schema_arrow.names)
    absent = [c for c in contract.REQUIRED_REQUEST_COLUMNS if c not in present and c in NARROW_COLUMNS]
    if absent:
        raise ResultsError(f'"{path}" lacks the column(s) {", ".join(absent)}.')
    shell = load_run_without_requests(root)
    judged = {spec.column for spec in shell.scenario.slos}  # an SLO on time to first token reads ttft_ms
    columns = [c for c in dict.fromkeys([*NARROW_COLUMNS, *sorted(judged)]) if c in present]
    requests = read_columns(path, columns, [c for c in LABELS if c in present])
    for name, default in (("pool_wait_ms", float("nan")), ("fired", 1), ("degraded", False), ("cached", False)):
        if name not in requests:
            requests[name] = default
    requests = fill_missing_ends(requests, latest_end_s(requests, shell.events))
    shell.requests = requests
    return shell


def read_columns(path: Path, columns: list[str], labels: list[str]) -> pd.DataFrame:
    """Columns of a parquet file read a batch at a time into arrays allocated once, so no second
    copy of the table is ever held; `labels` become categoricals. Missing numbers read as the
    results loader reads them (NaN, 0, False)."""
    file = pq.ParquetFile(path, read_dictionary=labels)
    rows, schema = file.metadata.num_rows, file.schema_arrow
    plain = {c: np.empty(rows, dtype=schema.field(c).type.to_pandas_dtype()) for c in columns if c not in labels}
    codes = {c: np.empty(rows, dtype=np.int32) for c in labels}
    categories: dict[str, dict[str, int]] = {c: {} for c in labels}
    start = 0
    for batch in file.iter_batches(batch_size=BATCH_ROWS, columns=columns):
        stop = start + batch.num_rows
        for name, array in plain.items():
            array[start:stop] = _filled(batch.column(name), array.dtype).to_numpy(zero_copy_only=False)
        for name, array in codes.items():
            array[start:stop] = _codes(batch.column(name), categories[name])
        start = stop
    pa.default_memory_pool().release_unused()  # what the batches held, back to the system
    made = {name: pd.Categorical.from_codes(codes.pop(name), categories=pd.Index(list(categories[name])))
            for name in labels}
    return pd.DataFrame({name: made[name] if name in made else plain.pop(name) for name in columns}, copy=False)


def _filled(column: pa.Array, dtype: np.dtype) -> pa.Array:
    if column.null_count == 0 or dtype.kind == "f":
        return column
    return pc.fill_null(column, False if dtype.kind == "b" else 0)


def _codes(column: pa.Array, known: dict[str, int]) -> np.ndarray:
    """Codes of a dictionary column against the categories seen so far (extended in place)."""
    if not pa.types.is_dictionary(column.type) or column.null_count:
        column = pc.fill_null(column.cast(pa.string()), "").dictionary_encode()
    mapping = np.array([known.setdefault(str(v), len(known)) for v in column.dictionary.to_pylist()], dtype=np.int32)
    return mapping[column.indices.to_numpy(zero_copy_only=False)]


def load_run_without_requests(root: Path) -> RunData:
    """Every file of the run but requests.parquet, which stays on disk (an empty frame stands in)."""
    return load_run(root, requests=pd.DataFrame({c: pd.Series(dtype=t) for c, t in contract.REQUEST_COLUMNS.items()}))


def summarise_large(run: RunData) -> dict[str, Any]:
    """The summary sections the narrow frame allows, validated as a whole (`Summary`)."""
    requests, duration = run.requests, run.duration_s
    specs, implicit = judged_slos(run.scenario.slos)
    phase_events, window = run.events_of("phase"), schedule_window(run)
    windows = fault_windows(run.events, duration)
    phases, steady = phase_labels(requests, phase_events), steady_windows(requests, phase_events, window)
    judged = evaluate_slos(requests, phases, phase_events, specs, duration, run.scenario.traffic.time_scale,
                           window=window, faults=[(w.start_s, w.end_s) for w in windows])
    slos = [slo | {"implicit": implicit is not None} for slo in
            judge_steady(judged, specs, requests, phases, steady_mask(requests["intended_s"].to_numpy(float), steady))]
    summary: dict[str, Any] = {
        "schema_version": 2, "scenario": _scenario(run, duration), "requests": request_counts(requests),
        **throughput(requests, window), **latency_sections(requests), "slos": slos, "implicit_slo": implicit,
        "cost": compute_cost(requests[COST_COLUMNS], run.metrics, run.scenario.cost,
                             [(w.start_s, w.end_s) for w in windows], window=window),
        "faults": [], "generator": generator_health(run),
        "phases": [{"name": e.get("name"), "start_s": e.get("start_s"), "end_s": e.get("end_s")} for e in phase_events],
        "environment": describe_environment(next(iter(run.events_of("run_start")), None), run.metrics,
                                            run.scenario.seed),
        "missing": [*run.missing, _left_out_note(len(requests), len(windows))],
        "aborted": [e.get("reason", "") for e in run.events_of("abort")], **harness_checks(run),
        "streaming": None, "goodput": None, "steady": steady_section(steady), "deviations": [],
        "fail_on_deviation": run.scenario.fail_on_deviation,
    }
    overhead = overhead_section(run.events, summary["latency_ms"], summary["slos"])
    if overhead is not None:
        summary |= {"harness_overhead": overhead, "slos": flag_tight_slos(summary["slos"], overhead)}
    summary |= soak_and_drift(requests, run.target_metrics, duration, specs, summary["slos"])
    summary["verdict"], summary["verdict_reason"] = verdict(summary)
    summary |= {"fault_period_s": 0.0, "findings": [], "headline": summary["verdict_reason"],
                "live": live_section(run.events)}
    return Summary.model_validate(summary).as_dict()


def _left_out_note(rows: int, faults: int) -> str:
    note = (f"requests.parquet has {rows:,} rows (over {LARGE_ROWS:,}): the report read only the columns its "
            f"verdict needs, so {', '.join(LEFT_OUT)} are left out")
    return note + (f"; {faults} fault window(s) were not measured" if faults else "")
