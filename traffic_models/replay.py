"""Real access logs as arrivals: read a trace once, then scale it in time and rate per run.

The Azure LLM inference trace (CC-BY 4.0, Patel et al., "Splitwise", ISCA 2024) is the
reference format: TIMESTAMP, ContextTokens, GeneratedTokens. Plain CSV and JSONL logs need a
timestamp column and may carry chars (or tokens), max_tokens, priority and session_id (the turns
of one conversation). Mooncake and BurstGPT traces are read by `rushhour.traffic_models.traceformats`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from rushhour.traffic_models.errors import TrafficModelError
from rushhour.traffic_models.limits import MAX_DURATION_S, MAX_OUTPUT_TOKENS, MAX_REQUEST_CHARS
from rushhour.traffic_models.traceformats import READERS, read_jsonl

TIME_COLUMNS = ("timestamp", "time", "ts", "offset_s", "TIMESTAMP")
END_PADDING_S = 1e-3


@dataclass(frozen=True)
class Trace:
    """A log's arrivals on its own clock (0 = first request), with optional sizes and priorities."""

    clock_s: np.ndarray
    chars: np.ndarray | None
    priority: np.ndarray | None
    generated: np.ndarray | None = None
    """Logged output tokens per request (GeneratedTokens, or a max_tokens column), if any."""
    blocks: np.ndarray | None = None
    """Each prompt's shared block ids ("3 17 42"; Mooncake's hash_ids), if the trace names them."""
    session: np.ndarray | None = None
    """Each request's conversation (codes of a session_id column), if the trace has one."""

    @property
    def span_s(self) -> float:
        """Model length of the replay: up to and including the last request."""
        return float(self.clock_s[-1]) + END_PADDING_S


def load_trace(path: Path, fmt: str, chars_per_token: float) -> Trace:
    """The parsed log, cached per file version so repeated runs do not re-read it."""
    if not path.is_file():
        raise TrafficModelError(f'the log file "{path}" does not exist.')
    return _load_cached(str(path), path.stat().st_mtime_ns, fmt, chars_per_token)


@lru_cache(maxsize=8)
def _load_cached(path: str, _mtime_ns: int, fmt: str, chars_per_token: float) -> Trace:
    name = Path(path).name
    try:
        if fmt in READERS:
            frame = READERS[fmt](Path(path))
        else:
            frame = read_jsonl(Path(path)) if fmt == "jsonl" else pd.read_csv(path)
    except TrafficModelError:
        raise
    except (ValueError, OSError) as exc:
        raise TrafficModelError(f"{name}: the log could not be parsed as {fmt} ({exc}).") from exc
    if frame.empty:
        raise TrafficModelError(f"{name}: the log has no rows.")
    return _trace_from(frame, name, fmt, chars_per_token)


def _trace_from(frame: pd.DataFrame, name: str, fmt: str, chars_per_token: float) -> Trace:
    time_col = "TIMESTAMP" if fmt == "azure-llm" else next((c for c in TIME_COLUMNS if c in frame), None)
    if time_col is None or time_col not in frame:
        wanted = "TIMESTAMP" if fmt == "azure-llm" else " or ".join(TIME_COLUMNS[:4])
        raise TrafficModelError(f"{name}: the log has no {wanted} column.")
    seconds = _seconds(frame[time_col], name, time_col)
    order = np.argsort(seconds, kind="stable")
    chars = _chars(frame, name, chars_per_token)
    priority = frame["priority"].astype(str).to_numpy(dtype=object) if "priority" in frame else None
    generated = _generated(frame, name)
    blocks = frame["blocks"].astype(str).to_numpy(dtype=object) if "blocks" in frame else None
    session = pd.factorize(frame["session_id"].astype(str))[0].astype(np.int64) if "session_id" in frame else None
    clock_s = seconds[order] - seconds[order[0]]
    _check_span(float(clock_s[-1]), name, time_col)
    return Trace(
        clock_s=clock_s,
        chars=None if chars is None else chars[order],
        priority=None if priority is None else priority[order],
        generated=None if generated is None else generated[order],
        blocks=None if blocks is None else blocks[order],
        session=None if session is None else session[order],
    )


def _check_span(span_s: float, name: str, field: str) -> None:
    """A replay needs its requests spread over time, and no further apart than rushhour supports."""
    if span_s <= 0:
        raise TrafficModelError(f"{name}: every request in column {field} carries the same time; a replay needs "
                                "requests at two or more different times.")
    if span_s > MAX_DURATION_S:
        raise TrafficModelError(f"{name}: column {field} spans {span_s:.6g} s from first to last request, past the "
                                f"{MAX_DURATION_S:.0f} s (366 days) rushhour replays.")


def _generated(frame: pd.DataFrame, name: str) -> np.ndarray | None:
    column = next((c for c in ("GeneratedTokens", "max_tokens") if c in frame), None)
    if column is None:
        return None
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
    if not np.isfinite(values).all() or (values < 0).any():
        raise TrafficModelError(f"{name}: column {column} must hold non-negative numbers.")
    _check_cap(values, name, column, MAX_OUTPUT_TOKENS, "output tokens")
    return np.rint(values).astype(np.int64)


def _seconds(column: pd.Series, name: str, field: str) -> np.ndarray:
    if pd.api.types.is_numeric_dtype(column):
        values = column.to_numpy(dtype=np.float64)
    else:
        try:
            stamps = pd.to_datetime(column, format="ISO8601")
        except (ValueError, TypeError) as exc:
            raise TrafficModelError(f"{name}: column {field} holds values that are not timestamps.") from exc
        values = (stamps - stamps.min()).dt.total_seconds().to_numpy(dtype=np.float64)
    if not np.isfinite(values).all():
        raise TrafficModelError(f"{name}: column {field} has empty or non-finite values.")
    return values


def _chars(frame: pd.DataFrame, name: str, chars_per_token: float) -> np.ndarray | None:
    if "chars" in frame:
        column, scale = "chars", 1.0
    elif "ContextTokens" in frame:
        column, scale = "ContextTokens", chars_per_token
    elif "tokens" in frame:
        column, scale = "tokens", chars_per_token
    else:
        return None
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
    if not np.isfinite(values).all() or (values < 0).any():
        raise TrafficModelError(f"{name}: column {column} must hold non-negative numbers.")
    _check_cap(values * scale, name, column, MAX_REQUEST_CHARS, "characters")
    return np.maximum(np.rint(values * scale), 1).astype(np.int64)


def _check_cap(values: np.ndarray, name: str, column: str, cap: int, unit: str) -> None:
    """Refuse a size past `cap` (in `unit`), naming the first row that passes it."""
    over = np.flatnonzero(values > cap)
    if over.size:
        row = int(over[0])
        raise TrafficModelError(f"{name}: column {column} row {row + 1} asks for {values[row]:.6g} {unit}, past the "
                                f"{cap:,} rushhour sends in one request ({over.size} row(s) over).")


def replay_rows(
    trace: Trace,
    *,
    window: tuple[float, float],
    time_scale: float,
    copies: float,
    jitter_s: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Compressed offsets (sorted) and the trace row behind each arrival.

    `copies` below 1 thins the log (each row kept with that probability); above 1 it
    duplicates rows (whole copies plus one more with the fractional probability), moving
    each copy by up to `jitter_s` model seconds so the duplicates are not simultaneous.
    """
    start, end = window
    lo, hi = np.searchsorted(trace.clock_s, [start, end], side="left")
    rows = np.arange(lo, hi, dtype=np.int64)
    whole, frac = divmod(copies, 1.0)
    per_row = int(whole) + (rng.random(rows.size) < frac)
    rows = np.repeat(rows, per_row)
    is_copy = np.concatenate([[False], rows[1:] == rows[:-1]]) if rows.size else np.zeros(0, bool)
    jitter = np.where(is_copy, rng.uniform(-jitter_s, jitter_s, rows.size), 0.0)
    clocks = np.clip(trace.clock_s[rows] + jitter, start, np.nextafter(end, start))
    order = np.argsort(clocks, kind="stable")
    return (clocks[order] - start) / time_scale, rows[order]


def replay_rate(trace: Trace, edges_clock: np.ndarray) -> np.ndarray:
    """Observed requests per model second in each bin between consecutive clock edges."""
    counts, _ = np.histogram(trace.clock_s, bins=edges_clock)
    widths = np.diff(edges_clock)
    return np.divide(counts, widths, out=np.zeros(widths.size), where=widths > 0)
