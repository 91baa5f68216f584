"""The results contract: every results file's name, the schedule's, part files' and requests' columns and types, exit codes.

A drill writes its results folder, `reports` reads it back, the live view and the Chaos Toolkit
extension read parts of it; they all spell the names from here, so the folder has one definition.
The documentation's results reference is generated from `REQUEST_COLUMNS`. Types are numpy/pandas
dtype names (`object`: text, written as an Arrow string); nothing here imports pandas, so a Locust
process may read it.
"""

from __future__ import annotations

from collections.abc import Collection
from enum import IntEnum
from typing import Final


class ExitCode(IntEnum):
    """What every `rushhour` command's exit status means."""

    OK = 0
    """The run passed, or the command did what it was asked."""
    FAILED = 1
    """An SLO was missed, or a regression was found."""
    BAD_INPUT = 2
    """Bad usage or an invalid input file; nothing was measured."""
    INVALID = 3
    """The run was aborted, or its measurement is invalid or inconclusive."""


# --- files of one run's results folder -------------------------------------------------------
SCENARIO_FILE: Final = "scenario.yaml"
SCHEDULE_FILE: Final = "schedule.parquet"
REQUESTS_FILE: Final = "requests.parquet"
SERVER_METRICS_FILE: Final = "server_metrics.parquet"
TARGET_METRICS_FILE: Final = "target_metrics.parquet"
EVENTS_FILE: Final = "events.jsonl"
CHAOS_DIR: Final = "chaos"
SUMMARY_FILE: Final = "summary.json"
REPORT_HTML_FILE: Final = "report.html"
REPORT_MD_FILE: Final = "report.md"
JUNIT_FILE: Final = "junit.xml"
CAPACITY_JSON_FILE: Final = "capacity.json"
CAPACITY_HTML_FILE: Final = "capacity.html"
AB_JSON_FILE: Final = "ab.json"
AB_HTML_FILE: Final = "ab.html"
AB_MD_FILE: Final = "ab.md"

# --- schedule.parquet: one row per planned arrival ---------------------------------------------
SCHEDULE_COLUMNS: Final[dict[str, str]] = {
    "offset_s": "float64",
    "kind": "category",
    "chars": "int32",
    "priority": "category",
    "mode": "category",
    "text_id": "int64",
    "tenant": "category",
    "phase": "category",
    "deadline_ms": "int32",
    "max_tokens": "int32",
}
"""Every column a drawn schedule has, with its dtype, in order: when (seconds from the run's start),
the mix's kind, characters, priority, mode, the text drawn, tenant, phase, deadline and token budget.
A multi-turn or replayed schedule adds its own columns after these."""

# --- load/part-w*.parquet: what a load worker records per finished request -------------------
PART_COLUMNS: Final[dict[str, str]] = {
    "row": "int64",
    "intended_s": "float64",
    "sent_s": "float64",
    "done_s": "float64",
    "pool_wait_ms": "float64",
    "status": "int64",
    "error": "object",
    "model": "object",
    "cached": "bool",
    "degraded": "bool",
    "node": "object",
    "first_segment_s": "float64",
    "via": "object",
    "first_token_s": "float64",
    "last_token_s": "float64",
    "output_tokens": "int64",
    "itl_p50_ms": "float64",
    "itl_p99_ms": "float64",
    "itl_max_ms": "float64",
    "input_tokens": "int64",
}
"""A part file's columns with their dtypes, in order: the schedule row it answers and what the
worker saw; merged onto the schedule into `requests.parquet`."""

# --- requests.parquet: one row per scheduled request -----------------------------------------
STREAM_COLUMNS: Final[dict[str, str]] = {
    "ttft_ms": "float64",
    "tpot_ms": "float64",
    "itl_p50_ms": "float64",
    "itl_p99_ms": "float64",
    "itl_max_ms": "float64",
    "output_tokens": "float64",
    "max_tokens": "int64",
    "input_tokens": "float64",
}
"""Generative targets: time to first token and per output token (from the intended send, like
every latency here), the answer's own inter-token gaps, tokens received, tokens asked for, and
the prompt's tokens as the server counted them."""

REQUEST_COLUMNS: Final[dict[str, str]] = {
    "intended_s": "float64",
    "sent_s": "float64",
    "done_s": "float64",
    "latency_ms": "float64",
    "service_ms": "float64",
    "pool_wait_ms": "float64",
    "fired": "int64",
    "status": "int64",
    "ok": "bool",
    "error": "object",
    "kind": "object",
    "chars": "int64",
    "priority": "object",
    "mode": "object",
    "model": "object",
    "cached": "bool",
    "degraded": "bool",
    "node": "object",
    "tenant": "object",
    "phase": "object",
    "first_segment_ms": "float64",
    "via": "object",
    **STREAM_COLUMNS,
}
"""Every column of `requests.parquet` with its pandas dtype, in the order it is written."""

REQUIRED_REQUEST_COLUMNS: Final = ("intended_s", "sent_s", "done_s", "latency_ms", "service_ms", "status", "ok")
"""The columns a results folder must have to be read at all (older and foreign folders may lack the rest)."""

AB_COLUMNS: Final[dict[str, str]] = {"arm": "object", "trial": "int64"}
"""What an A/B run (`rushhour ab`) adds to `requests.parquet`: the arm and the trial of each row."""

# --- server_metrics.parquet: the reference server's /v1/status, one row per pool a second -----
SERVER_METRICS_COLUMNS: Final[dict[str, str]] = {
    "t_s": "float64",
    "pool": "object",
    "nodes_alive": "int64",
    "nodes_ready": "int64",
    "breakers_open": "int64",
    "queue_depth": "int64",
    "inflight": "int64",
    "batch_size_mean": "float64",
    "provider": "object",
    "cache_hits_total": "int64",
    "cache_misses_total": "int64",
    "shed_total": "int64",
    "requests_total": "int64",
    "batching": "object",
}
"""One row per pool per scrape: when (seconds on the run's clock), the pool, its nodes alive and
ready, breakers open, queue depth, requests in flight, mean batch size, execution provider, the
cache and shed counters, requests served, and the batching its nodes use."""

# --- target_metrics.parquet: the target's own Prometheus samples -----------------------------
TARGET_METRICS_COLUMNS: Final[dict[str, str]] = {
    "t_s": "float64",
    "metric": "object",
    "labels": "object",
    "value": "float64",
}
"""One row per sample scraped from `target.metrics_url`: when (seconds on the run's clock), the
sample's name (`vllm:num_requests_running`, a counter's `_total`), its labels as sorted JSON
(`{"model_name": "m"}`), and its value."""


def columns_of(table: Collection[str], *names: str) -> tuple[str, ...]:
    """`names`, in the order given, each checked against a declared table's columns: a subset kept
    elsewhere (the columns one job reads) fails where it is defined once the table renames or drops
    one of them, instead of reading a column that is no longer written."""
    missing = [name for name in names if name not in table]
    if missing:
        raise LookupError(f"No column {', '.join(map(repr, missing))} is declared among {', '.join(map(repr, table))}.")
    return names
