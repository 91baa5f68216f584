"""`rushhour traffic MODEL`: preview a traffic model before pointing it at a service."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import numpy as np

from rushhour.kernel.clock import format_clock, parse_clock
from rushhour.scenarios.cli.errors import BadInput
from rushhour.traffic_models.errors import TrafficModelError
from rushhour.traffic_models.loader import load_traffic_model
from rushhour.traffic_models.model import TrafficModel
from rushhour.traffic_models.phases import window_phases
from rushhour.traffic_models.schedule import generate_schedule, rate_curve
from rushhour.traffic_models.summary import summarize
from rushhour.traffic_models.window import FLAG_NAMES, Window, check_drawable, check_rate_scale, resolve_window


@click.command("traffic")
@click.argument("model_spec", metavar="MODEL")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write a PNG of the rate curve (events marked) to this file.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed of the schedule.")
@click.option("--time-scale", type=float, default=1.0, show_default=True,
              help="Model seconds per run second (1440 shows 24 h in 1 minute).")
@click.option("--rate-scale", type=float, default=1.0, show_default=True, help="Multiplier on the rate.")
@click.option("--start", "start", default="0", show_default=True,
              help='Model clock to start at, e.g. "18:00".')
@click.option("--duration", "duration", default=None,
              help='Run length in compressed time, e.g. "10m" (default: the rest of the model).')
def traffic(
    model_spec: str, plot_path: Path | None, as_json: bool, seed: int,
    time_scale: float, rate_scale: float, start: str, duration: str | None,
) -> None:
    """Preview a traffic MODEL: a YAML file, a bundled name (promo-day) or constant:RPS.

    Prints total requests, mean and peak rate, characters and the request mix.
    """
    try:
        model = load_traffic_model(model_spec)
        window = resolve_window(model, time_scale=time_scale, start_clock_s=_clock("--start", start),
                                duration_s=None if duration is None else _clock("--duration", duration),
                                names=FLAG_NAMES)
        check_drawable(window, FLAG_NAMES)
        check_rate_scale(rate_scale, name=FLAG_NAMES.rate_scale, allow_zero=False)
        report, counts = _preview(model, window, seed, rate_scale)
        if plot_path is not None:
            _write_plot(plot_path, model, window, rate_scale, counts)
    except TrafficModelError as exc:
        raise BadInput(str(exc)) from exc
    if as_json:
        click.echo(json.dumps(report, sort_keys=True))
    else:
        _print_text(model, report)
    if plot_path is not None:
        click.echo(f"plot written to {plot_path}", err=as_json)


def _preview(
    model: TrafficModel, window: Window, seed: int, rate_scale: float
) -> tuple[dict[str, Any], tuple[np.ndarray, np.ndarray]]:
    frame = generate_schedule(model, seed=seed, time_scale=window.time_scale, rate_scale=rate_scale,
                              start_clock_s=window.start_clock_s, duration_s=window.duration_s)
    curve = _curve(model, window, rate_scale)
    report = summarize(frame, duration_s=window.duration_s, curve_rps=curve[1],
                       run_phases=window_phases(model, window))
    report = {"model": model.name, "seed": seed, "time_scale": window.time_scale, "rate_scale": rate_scale,
              "start_clock_s": window.start_clock_s, **report}
    width = window.duration_s / 200
    counts = np.bincount((frame["offset_s"].to_numpy() // width).astype(np.int64), minlength=200)[:200]
    return report, (np.arange(200) * width, counts / width)


def _curve(model: TrafficModel, window: Window, rate_scale: float) -> tuple[np.ndarray, np.ndarray]:
    return rate_curve(model, time_scale=window.time_scale, rate_scale=rate_scale,
                      start_clock_s=window.start_clock_s, duration_s=window.duration_s)


def _write_plot(path: Path, model: TrafficModel, window: Window, rate_scale: float,
                counts: tuple[np.ndarray, np.ndarray]) -> None:
    from rushhour.traffic_models.plot import plot_rate  # matplotlib is slow to import; only when asked

    if not path.parent.is_dir():
        raise BadInput(f"--plot: the folder {path.parent} does not exist.")
    plot_rate(path, model=model, window=window, curve=_curve(model, window, rate_scale),
              run_phases=window_phases(model, window), counts=counts)


def _clock(flag: str, value: str) -> float:
    try:
        return parse_clock(value)
    except ValueError as exc:
        raise BadInput(f"{flag}: {exc}") from exc


def _print_text(model: TrafficModel, report: dict[str, Any]) -> None:
    click.echo(f"traffic model {report['model']}: {model.description}".rstrip(": "))
    click.echo(f"  window      from {format_clock(report['start_clock_s'])} for {report['duration_s']:g} s"
               f" (time scale {report['time_scale']:g}, rate scale {report['rate_scale']:g}, seed {report['seed']})")
    click.echo(f"  requests    {report['total_requests']:,}")
    click.echo(f"  rate        mean {report['mean_rps']:.2f} rps, peak {report['peak_rps']:.2f} rps "
               f"(observed {report['peak_rps_observed']:.2f})")
    click.echo(f"  characters  {report['total_chars']:,} (mean {report['mean_chars']:.0f} per request, "
               f"{report['repeat_fraction']:.0%} repeats)")
    for column, shares in report["mix"].items():
        text = ", ".join(f"{name} {share:.1%}" for name, share in shares.items())
        click.echo(f"  {column:<11} {text}")
    phases = ", ".join(f"{p['name']} {p['start_s']:g}-{p['end_s']:g}s" for p in report["phases"])
    click.echo(f"  phases      {phases}")
