from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import click
import numpy as np
import pytest
from click.testing import CliRunner

from rushhour.scenarios.cli.errors import EXIT_BAD_INPUT
from rushhour.traffic_models import load_traffic_model


@pytest.fixture(scope="module")
def rushhour() -> click.Group:
    from rushhour.scenarios.cli.main import _register, cli

    try:
        _register()
    except ImportError:
        # Another package's command may not exist yet in this checkout; ours must still register.
        from rushhour.scenarios.cli.traffic import traffic

        cli.add_command(traffic)
    return cli


def invoke(cli: click.Group, *args: str):
    return CliRunner().invoke(cli, ["traffic", *args], catch_exceptions=False)


def test_traffic_json_is_one_deterministic_object(rushhour: click.Group) -> None:
    args = ("promo-day", "--json", "--time-scale", "60", "--rate-scale", "2")
    first, second = invoke(rushhour, *args, "--seed", "3"), invoke(rushhour, *args, "--seed", "3")
    assert first.exit_code == 0, first.output
    assert first.output == second.output
    report = json.loads(first.output)
    for key in ("total_requests", "mean_rps", "peak_rps", "total_chars", "mix"):
        assert key in report
    assert report["total_requests"] > 1000
    evening = load_traffic_model("promo-day").rate(np.array([19 * 3600.0]))[0]
    assert report["peak_rps"] == pytest.approx(2 * evening, rel=0.01)
    assert report["peak_rps"] > 4 * report["mean_rps"]
    assert set(report["mix"]["priority"]) == {"paid", "free", "batch"}
    assert sum(p["requests"] for p in report["phases"]) == report["total_requests"]
    other = json.loads(invoke(rushhour, *args, "--seed", "4").output)
    assert other["total_requests"] != report["total_requests"] or other["total_chars"] != report["total_chars"]


def test_traffic_text_output_names_totals_rates_and_mix(rushhour: click.Group) -> None:
    result = invoke(rushhour, "constant:20", "--duration", "30s")
    assert result.exit_code == 0, result.output
    for word in ("requests", "mean", "peak 20.00 rps", "characters", "kind", "priority", "mode"):
        assert word in result.output


def test_traffic_plot_writes_a_png(rushhour: click.Group, tmp_path: Path) -> None:
    out = tmp_path / "rate.png"
    result = invoke(rushhour, "flash-crowd", "--plot", str(out), "--time-scale", "10")
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert str(out) in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("missing.yaml",), "missing.yaml: the traffic model file does not exist"),
        (("no-such-model",), '"no-such-model" is neither'),
        (("promo-day", "--time-scale", "0"), "--time-scale must be a finite number > 0, got 0.0."),
        (("promo-day", "--start", "lunch"), '--start: "lunch" is not a clock time'),
        (("promo-day", "--plot", "/no/such/dir/x.png"), "--plot: the folder /no/such/dir does not exist"),
    ],
)
def test_traffic_bad_input_exits_2(rushhour: click.Group, args: tuple[str, ...], message: str) -> None:
    result = CliRunner().invoke(rushhour, ["traffic", *args])
    assert result.exit_code == EXIT_BAD_INPUT
    assert message in result.output


def test_traffic_bad_file_exits_2_naming_the_field(rushhour: click.Group, write_model: Callable[..., Path]) -> None:
    path = write_model("events: [{type: promotion, start: 19:00, hold: 1h, multiplier: -2}]\n", name="promo.yaml")
    result = CliRunner().invoke(rushhour, ["traffic", str(path)])
    assert result.exit_code == EXIT_BAD_INPUT
    assert "promo.yaml: events[0].multiplier: must be > 0" in result.output


def test_traffic_json_stdout_stays_parseable_with_plot(rushhour: click.Group, tmp_path: Path) -> None:
    out = tmp_path / "step.png"
    result = invoke(rushhour, "step", "--json", "--plot", str(out), "--time-scale", "30")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["total_requests"] > 0
    assert out.stat().st_size > 10_000
