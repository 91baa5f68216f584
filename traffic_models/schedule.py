"""Arrival schedules: every request of a run, drawn as a non-homogeneous Poisson process.

Arrivals come from inverting the cumulative intensity: the number of arrivals is Poisson
with mean Λ (the integrated rate), and their times are sorted uniforms on [0, Λ] mapped
back through Λ(t). One pass of numpy, so a million arrivals take well under a second.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rushhour.kernel.contract import SCHEDULE_COLUMNS
from rushhour.traffic_models.errors import TrafficModelError
from rushhour.traffic_models.limits import check_request_count
from rushhour.traffic_models.mix import draw_people, draw_texts, mix_frame, priority_codes, replayed_texts
from rushhour.traffic_models.model import ReplaySpec, TrafficModel
from rushhour.traffic_models.phases import phase_column, window_phases
from rushhour.traffic_models.replay import Trace, load_trace, replay_rate, replay_rows
from rushhour.traffic_models.sessions import first_turns, replayed_sessions, synthetic_sessions
from rushhour.traffic_models.text import RAW_PROMPT, block_prompt
from rushhour.traffic_models.traceformats import LLM_FORMATS, MOONCAKE_BLOCK_TOKENS
from rushhour.traffic_models.window import Window, check_drawable, check_rate_scale, resolve_window

GRID_STEP_S = 1.0
MIN_GRID, MAX_GRID = 2_000, 500_000
CURVE_POINTS = 2_000
COLUMNS = list(SCHEDULE_COLUMNS)


def generate_schedule(
    model: TrafficModel,
    *,
    seed: int,
    time_scale: float = 1.0,
    rate_scale: float = 1.0,
    start_clock_s: float = 0.0,
    duration_s: float | None = None,
) -> pd.DataFrame:
    """Every arrival of the run, sorted by offset_s (compressed seconds); same seed, same frame.

    The compressed rate is the model's rate at the mapped clock times `rate_scale`, for
    generated and replayed models alike: a log replayed with time_scale 10 keeps one request
    in ten unless rate_scale is 10 too (then every logged request is sent, ten times faster).
    """
    window = resolve_window(model, time_scale=time_scale, start_clock_s=start_clock_s, duration_s=duration_s)
    check_drawable(window)
    check_rate_scale(rate_scale)
    rng = _rng(seed)
    extra: dict[str, np.ndarray] = {}
    if model.replay is not None:
        offsets, texts, logged, extra = _replayed(model, model.replay, window, rate_scale, rng, seed)
    else:
        offsets = poisson_offsets(model, window, rate_scale, rng)
        if model.sessions is not None:
            offsets, extra = synthetic_sessions(model.sessions, offsets, window.time_scale, rng)
        texts, logged = draw_texts(model.mix, offsets.size, rng), None
    people = draw_people(model.mix, offsets.size, rng, logged)
    frame = mix_frame(model.mix, texts, people)
    frame.insert(0, "offset_s", offsets.astype(np.float64))
    frame["phase"] = phase_column(window_phases(model, window), offsets)
    for name, values in extra.items():
        frame[name] = values
    frame = frame[COLUMNS + list(extra)]
    return frame.sort_values("offset_s", kind="stable").reset_index(drop=True) if extra else frame


def poisson_offsets(
    model: TrafficModel, window: Window, rate_scale: float, rng: np.random.Generator
) -> np.ndarray:
    """Sorted compressed arrival offsets of the model's rate over the window."""
    grid, cumulative = intensity(model, window, rate_scale)
    total = float(cumulative[-1])
    count = int(rng.poisson(total)) if total > 0 else 0
    spacings = np.cumsum(rng.exponential(size=count + 1))
    uniforms = spacings[:-1] / spacings[-1] * total
    clocks = np.interp(uniforms, cumulative, grid)
    return np.asarray(window.to_offset(clocks), dtype=np.float64)


def intensity(model: TrafficModel, window: Window, rate_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """(clock grid, expected arrivals up to each grid point): the cumulative intensity Λ(t).

    Every drawn schedule starts here, so here a schedule too large to draw is refused.
    """
    grid = _clock_grid(model, window, MIN_GRID, MAX_GRID)
    per_model_s = model.rate(grid) * (rate_scale / window.time_scale)
    cumulative = np.concatenate([[0.0], np.cumsum(np.diff(grid) * (per_model_s[1:] + per_model_s[:-1]) / 2)])
    turns = 1.0 if model.sessions is None else (model.sessions.turns_min + model.sessions.turns_max) / 2
    check_request_count(float(cumulative[-1]) * turns, what=_described(model, window, rate_scale))
    return grid, cumulative


def rate_curve(
    model: TrafficModel,
    *,
    time_scale: float = 1.0,
    rate_scale: float = 1.0,
    start_clock_s: float = 0.0,
    duration_s: float | None = None,
    step_s: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(offsets in compressed s, requests per compressed s) of the model's rate over the run.

    Generated models are sampled at `step_s` plus every event boundary (so spikes show at
    full height); replays give the logged count per bin of `step_s`.
    """
    window = resolve_window(model, time_scale=time_scale, start_clock_s=start_clock_s, duration_s=duration_s)
    check_rate_scale(rate_scale)
    step = window.duration_s / CURVE_POINTS if step_s is None else float(step_s)
    if not step > 0:
        raise TrafficModelError(f"step_s must be > 0, got {step_s!r}.")
    offsets = np.arange(0.0, window.duration_s, step)
    if model.replay is not None:
        edges = np.append(offsets, window.duration_s)
        trace = load_trace(model.replay.path, model.replay.format, model.replay.chars_per_token)
        per_model_s = replay_rate(trace, np.asarray(window.to_clock(edges)))
        return offsets, per_model_s * rate_scale
    marks = [t for e in model.events for _, lo, hi in e.marks() for t in (lo, hi)]
    extra = np.asarray(window.to_offset(np.array(marks, dtype=np.float64)))
    offsets = np.unique(np.concatenate([offsets, extra[(extra >= 0) & (extra < window.duration_s)]]))
    rates = model.rate(np.asarray(window.to_clock(offsets))) * rate_scale
    return offsets, rates


def _clock_grid(model: TrafficModel, window: Window, lo: int, hi: int) -> np.ndarray:
    """Fine clock grid over the window, with event boundaries added so steps stay sharp."""
    start, end = window.start_clock_s, window.end_clock_s
    points = int(np.clip(np.ceil((end - start) / GRID_STEP_S), lo, hi))
    marks = np.array([t for e in model.events for _, a, b in e.spans() for t in (a, b)], dtype=np.float64)
    inside = marks[(marks > start) & (marks < end)]
    return np.unique(np.concatenate([np.linspace(start, end, points + 1), inside]))


def _replayed(
    model: TrafficModel, replay: ReplaySpec, window: Window, rate_scale: float, rng: np.random.Generator,
    seed: int,
) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray | None, dict[str, np.ndarray]]:
    trace = load_trace(replay.path, replay.format, replay.chars_per_token)
    lo, hi = np.searchsorted(trace.clock_s, [window.start_clock_s, window.end_clock_s])
    check_request_count(float(hi - lo) * rate_scale / window.time_scale, what=_described(model, window, rate_scale))
    picked = trace if trace.session is None else _first_turns_only(trace)
    offsets, rows = replay_rows(
        picked,
        window=(window.start_clock_s, window.end_clock_s),
        time_scale=window.time_scale,
        copies=rate_scale / window.time_scale,
        jitter_s=replay.jitter,
        rng=rng,
    )
    extra: dict[str, np.ndarray] = {}
    if trace.session is not None:
        firsts = first_turns(trace.session)[rows]
        offsets, rows, extra = replayed_sessions(trace.session, trace.clock_s, offsets, firsts, window.time_scale)
    if trace.chars is None:
        texts = draw_texts(model.mix, offsets.size, rng)
        if trace.generated is not None:
            texts["max_tokens"] = trace.generated[rows].astype(np.int32)
    else:
        generated = trace.generated[rows] if trace.generated is not None else None
        texts = replayed_texts(model.mix, trace.chars[rows], rows, generated)
    logged = None
    if trace.priority is not None:
        logged = priority_codes(model.mix, trace.priority[rows], replay.path.name)
    if replay.format in LLM_FORMATS:
        extra["prompt"] = _prompts(trace, rows, replay.chars_per_token, seed)
    return offsets, texts, logged, extra


def _described(model: TrafficModel, window: Window, rate_scale: float) -> str:
    return (f'model "{model.name}" for {window.duration_s:g} s at time scale {window.time_scale:g} '
            f"and rate scale {rate_scale:g}")


def _first_turns_only(trace: Trace) -> Trace:
    """The trace's session openers alone: the replay picks conversations, then adds their turns."""
    first = first_turns(trace.session) if trace.session is not None else np.arange(trace.clock_s.size)
    return Trace(clock_s=trace.clock_s[first], chars=None, priority=None)


def _prompts(trace: Trace, rows: np.ndarray, chars_per_token: float, seed: int) -> np.ndarray:
    """Each row's `prompt`: its shared blocks when the trace names them, else its own raw text."""
    if trace.blocks is None:
        return np.full(rows.size, RAW_PROMPT, dtype=object)
    block_chars = max(2, round(MOONCAKE_BLOCK_TOKENS * chars_per_token))
    ids = pd.Series(trace.blocks[rows], dtype=object)
    return ids.radd(block_prompt(seed, block_chars, "")).where(ids != "", RAW_PROMPT).to_numpy(dtype=object)


def _rng(seed: int) -> np.random.Generator:
    try:
        return np.random.default_rng(seed)
    except (TypeError, ValueError) as exc:
        raise TrafficModelError(f"seed must be a non-negative integer, got {seed!r}.") from exc
