"""rushhour traffic models: traffic shapes and request mixes turned into arrival schedules.

It sits beside `reports`, `experiments` and `reference_server`, above the shared kernel
(`kernel`), and imports none of them.

    model = load_traffic_model("promo-day")          # or a path, or "constant:20"
    frame = generate_schedule(model, seed=1, time_scale=60, rate_scale=2)
    run_phases = phases(model, time_scale=60)

A model file:

    loader.py        a model from a YAML file, a bundled name, or a "constant:RPS" string
    model.py         the typed model: what a model file says about a day of traffic
    fields.py        shared pydantic field types of model files (clock values, positive numbers)
    mixspec.py       the request mix section: kinds, sizes, priorities, modes, repetition
    errors.py        the errors raised here

The rate over the day:

    curves.py        base curves: an ordinary day's shape, as multipliers of the base rate
    events.py        promotions, flash crowds and steps laid on the base curve
    window.py        the stretch of the model clock a run covers, in compressed seconds
    phases.py        named phases of a run (warm-up, base, ramp, peak, recovery)

The schedule:

    schedule.py      every request of a run, drawn as a non-homogeneous Poisson process
    chunked.py       the same schedule a chunk of rows at a time, in bounded memory
    limits.py        how much a schedule may hold, checked before an arrival is drawn
    mix.py           the mix drawn for a batch of arrivals: kind, text, size, priority, tenant, mode
    catalog.py       the text catalog: ids drawn Zipf-style, each with a fixed length
    text.py          deterministic stand-in texts: the same id, the same words
    sessions.py      multi-turn conversations: sessions started at the model's rate, chains of turns
    replay.py        real access logs as arrivals, scaled in time and rate per run
    traceformats.py  readers of published LLM production traces, into the replay's columns
    facts.py         what a run needs to know about its whole schedule, gathered a chunk at a time
    summary.py       totals, rates and mix of a schedule (the `rushhour traffic` output)
    plot.py          a PNG of the rate curve with phases shaded and events marked
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from rushhour.kernel.clock import parse_clock
from rushhour.traffic_models.errors import TrafficModelError
from rushhour.traffic_models.model import TrafficModel
from rushhour.traffic_models.phases import Phase, phases
from rushhour.traffic_models.text import text_for

if TYPE_CHECKING:
    from rushhour.traffic_models.loader import bundled_models, load_traffic_model
    from rushhour.traffic_models.schedule import generate_schedule, rate_curve

_LATER = {"bundled_models": "rushhour.traffic_models.loader", "load_traffic_model": "rushhour.traffic_models.loader",
          "generate_schedule": "rushhour.traffic_models.schedule", "rate_curve": "rushhour.traffic_models.schedule"}


def __getattr__(name: str) -> object:
    """The loader's and the schedule's names are imported on first use: they need pandas, which a
    load generator's process does without (it needs `text_for` and the model's types)."""
    if name not in _LATER:
        raise AttributeError(f"module 'traffic_models' has no attribute {name!r}")
    return getattr(import_module(_LATER[name]), name)


__all__ = [
    "Phase",
    "TrafficModel",
    "TrafficModelError",
    "bundled_models",
    "generate_schedule",
    "load_traffic_model",
    "parse_clock",
    "phases",
    "rate_curve",
    "text_for",
]
