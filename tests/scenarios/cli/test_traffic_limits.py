from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from rushhour.scenarios.cli.errors import EXIT_BAD_INPUT

SMOKE = str(Path(__file__).resolve().parents[3] / "scenarios" / "smoke.yaml")
REFUSED = "rushhour draws at most 200,000,000 per run: lower the rate or the duration."


@pytest.fixture(scope="module")
def rushhour() -> click.Group:
    from rushhour.scenarios.cli.main import _register, cli

    _register()
    return cli


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("constant:1e12", "--duration", "10s"), 'about 1.0e+13 requests (model "constant-1e12" for 10 s'),
        (("promo-day", "--rate-scale", "1e9"), 'about 2.6e+14 requests (model "promo-day" for 86400 s'),
    ],
)
def test_traffic_refuses_a_schedule_too_large_to_draw(rushhour: click.Group, args: tuple[str, ...], message: str) -> None:
    result = CliRunner().invoke(rushhour, ["traffic", *args])
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert message in result.output and REFUSED in result.output


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--traffic", "constant:1e12"), 'about 1.5e+13 requests (model "constant-1e12" for 15 s'),
        (("--duration", "99999999h"), "traffic: duration is 3.6e+11 s, past the 31622400 s (366 days)"),
    ],
)
def test_run_dry_run_refuses_a_schedule_too_large_to_draw(
    rushhour: click.Group, args: tuple[str, ...], message: str
) -> None:
    result = CliRunner().invoke(rushhour, ["run", SMOKE, "--dry-run", "--no-probe", *args])
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert message in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--time-scale", "0"), "--time-scale must be a finite number > 0, got 0.0."),
        (("--duration", "0"), "--duration must be a finite number > 0, got 0.0."),
        (("--rate-scale", "0"), "--rate-scale must be a finite number > 0, got 0.0."),
        (("--rate-scale", "inf"), "--rate-scale must be a finite number > 0, got inf."),
        (("--start", "24:00"), '--start must be before the end of model "promo-day" at 24:00:00 (86400 s), '
                               "got 24:00:00 (86400 s)."),
    ],
)
def test_traffic_errors_name_the_flag_given(rushhour: click.Group, args: tuple[str, ...], message: str) -> None:
    result = CliRunner().invoke(rushhour, ["traffic", "promo-day", *args])
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert message in result.output
    assert "_s " not in result.output and "time_scale" not in result.output


@pytest.mark.timeout(60)
def test_run_dry_run_refuses_a_peak_rps_scenario_too_long_to_draw(rushhour: click.Group, tmp_path: Path) -> None:
    text = Path(SMOKE).read_text().replace("  duration: 15s\n", "  duration: 99999999h\n  peak_rps: 5\n")
    scenario = tmp_path / "long.yaml"
    scenario.write_text(text)
    result = CliRunner().invoke(rushhour, ["run", str(scenario), "--dry-run", "--no-probe"])
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert "long.yaml: traffic: duration is 3.6e+11 s, past the 31622400 s (366 days) rushhour supports." in result.output
