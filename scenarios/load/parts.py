"""Result parts read back and merged into `requests.parquet`.

The workers write each finished request into part files (`rushhour.scenarios.generator.partwriter`). The runner
joins the parts back onto the schedule, so every scheduled request gets exactly one row, answered
or not: `fired` says how many times the generator started it (0 = never sent). A row started twice
is a generator fault; the first firing is kept and the count stays visible (`duplicate_count`),
never silently dropped.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rushhour.kernel import contract
from rushhour.scenarios.generator.partwriter import (
    CHUNK_ROWS,
    PART_COLUMNS,
    PART_SCHEMA,
    PartWriter,
    list_parts,
    part_dtype,
)

__all__ = ["CHUNK_ROWS", "PART_COLUMNS", "PART_SCHEMA", "REQUEST_COLUMNS", "STREAM_COLUMNS", "PartWriter",
           "duplicate_count", "list_parts", "merge_requests", "read_parts"]

STREAM_COLUMNS = tuple(contract.STREAM_COLUMNS)
REQUEST_COLUMNS = tuple(contract.REQUEST_COLUMNS)


def read_parts(paths: list[Path]) -> pd.DataFrame:
    """Concatenate part files (an empty frame with the part columns when there are none)."""
    frames = [pd.read_parquet(p) for p in paths]
    if not frames:
        return pd.DataFrame({name: pd.Series(dtype=part_dtype(name)) for name in PART_COLUMNS})
    return pd.concat(frames, ignore_index=True)


def duplicate_count(requests: pd.DataFrame) -> int:
    """Scheduled requests the generator started more than once (0 for results without `fired`)."""
    if "fired" not in requests.columns:
        return 0
    return int((requests["fired"].to_numpy() > 1).sum())


def merge_requests(schedule: pd.DataFrame, parts: pd.DataFrame, *,
                   documents_via_jobs: bool = False) -> pd.DataFrame:
    """One row per scheduled request with the contract's columns; unanswered rows get status 0.

    A row never recorded was never sent: status 0, error "not sent", no send or end time, the
    `via` it would have gone to. Parts written before a column existed get it empty.
    """
    fired = parts["row"].value_counts()
    parts = parts.drop_duplicates("row", keep="first").set_index("row")
    parts = parts.reindex(columns=[c for c in PART_COLUMNS if c != "row"])
    joined = schedule.reset_index(drop=True).join(parts, how="left")
    out = pd.DataFrame(index=joined.index)
    # a conversation's later turn is intended when the answer before it ended plus its think time,
    # known only to the generator: its recorded intended send counts, the schedule's when unsent
    out["intended_s"] = joined["intended_s"].astype(float).fillna(schedule["offset_s"].astype(float)).to_numpy()
    out["sent_s"] = joined["sent_s"].astype(float)
    out["done_s"] = joined["done_s"].astype(float)
    out["latency_ms"] = (out["done_s"] - out["intended_s"]) * 1000.0
    out["service_ms"] = (out["done_s"] - out["sent_s"]) * 1000.0
    out["pool_wait_ms"] = joined["pool_wait_ms"].astype(float)
    out["fired"] = fired.reindex(out.index, fill_value=0).to_numpy(dtype="int64")
    out["status"] = joined["status"].fillna(0).astype("int64")
    out["ok"] = (out["status"] >= 200) & (out["status"] < 300)
    out["error"] = _text(joined["error"], missing="not sent")
    for name in ("kind", "priority", "mode", "tenant", "phase"):
        out[name] = schedule[name].astype(str).to_numpy()
    out["chars"] = schedule["chars"].astype("int64").to_numpy()
    out["model"] = _text(joined["model"], missing="")
    out["cached"] = joined["cached"].fillna(False).astype(bool)
    out["degraded"] = joined["degraded"].fillna(False).astype(bool)
    out["node"] = _text(joined["node"], missing="")
    out["first_segment_ms"] = (joined["first_segment_s"].astype(float) - out["intended_s"]) * 1000.0
    planned = np.where(documents_via_jobs & (out["kind"] == "document"), "job", "translate")
    out["via"] = joined["via"].astype(object).where(joined["via"].notna(), planned).astype(str)
    return _stream_columns(out, joined, schedule).loc[:, list(REQUEST_COLUMNS)]


def _stream_columns(out: pd.DataFrame, joined: pd.DataFrame, schedule: pd.DataFrame) -> pd.DataFrame:
    """TTFT from the intended send; TPOT = (last token - first token) / (tokens - 1)."""
    first = joined["first_token_s"].astype(float).to_numpy()
    last = joined["last_token_s"].astype(float).to_numpy()
    tokens = joined["output_tokens"].astype(float).to_numpy()
    tokens = np.where(tokens >= 0, tokens, np.nan)
    out["ttft_ms"] = (first - out["intended_s"].to_numpy()) * 1000.0
    with np.errstate(invalid="ignore", divide="ignore"):
        out["tpot_ms"] = np.where(tokens > 1, (last - first) * 1000.0 / (tokens - 1), np.nan)
    for name in ("itl_p50_ms", "itl_p99_ms", "itl_max_ms"):
        out[name] = joined[name].astype(float).to_numpy()
    out["output_tokens"] = tokens
    prompt = joined["input_tokens"].astype(float).to_numpy()
    out["input_tokens"] = np.where(prompt >= 0, prompt, np.nan)
    asked = schedule["max_tokens"] if "max_tokens" in schedule else pd.Series(0, index=schedule.index)
    out["max_tokens"] = asked.fillna(0).astype("int64").to_numpy()
    return out


def _text(column: pd.Series, *, missing: str) -> pd.Series:
    """Strings with NaN (row never recorded) replaced by `missing`."""
    return column.astype(object).where(column.notna(), missing).astype(str)
