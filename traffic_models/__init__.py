"""rushhour traffic models: traffic shapes and request mixes turned into arrival schedules.

It sits beside `reports`, `experiments` and `reference_server`, above the shared kernel
(`kernel`), and imports none of them.

    model = load_traffic_model("promo-day")          # or a path, or "constant:20"
    frame = generate_schedule(model, seed=1, time_scale=60, rate_scale=2)
    run_phases = phases(model, time_scale=60)
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
