"""`rushhour ab calibrate` takes its scenario settings (--protocol, --duration) from their one
declaration, as `rushhour ab` does, and its A/B options (--threshold, --error-margin, ...) from
`rushhour ab`'s own: the same type, bounds, default and check."""

from __future__ import annotations

import click
from click.testing import CliRunner

from rushhour.scenarios.cli.ab import ab
from rushhour.scenarios.cli.ab_calibrate import calibrate
from rushhour.scenarios.spec.overrides import BY_NAME


def _option(command: click.Command, name: str) -> click.Option:
    return next(p for p in command.params if isinstance(p, click.Option) and p.name == name)


def test_ab_calibrate_declares_protocol_and_duration_as_the_settings_table_does() -> None:
    for name in ("protocol", "duration"):
        mine, ab_s = _option(calibrate, name), _option(ab, name)
        assert mine.opts == [BY_NAME[name].flag] and mine.metavar == ab_s.metavar
        assert mine.type.to_info_dict() == ab_s.type.to_info_dict()
        assert (mine.help or "").startswith(BY_NAME[name].help)
        assert f"Default: {BY_NAME[name].default}." in (mine.help or "")


def test_ab_calibrate_reads_the_ab_options_as_ab_declares_them() -> None:
    for name in ("trials", "allow_remote", "threshold", "error_margin", "interleave"):
        mine, ab_s = _option(calibrate, name), _option(ab, name)
        assert (mine.opts, mine.default, mine.is_flag) == (ab_s.opts, ab_s.default, ab_s.is_flag), name
        assert mine.type.to_info_dict() == ab_s.type.to_info_dict(), name
    result = CliRunner().invoke(ab, ["calibrate", "s.yaml", "--baseline", "embedded", "--threshold", "1.0"])
    assert result.exit_code == 2 and "1.0<x<=100.0" in result.output


def test_ab_calibrate_refuses_a_zero_duration_with_exit_2_before_opening_the_scenario() -> None:
    result = CliRunner().invoke(ab, ["calibrate", "no-such-scenario.yaml", "--baseline", "embedded",
                                     "--duration", "0s"])
    assert result.exit_code == 2
    assert '--duration: "0s" must be longer than zero.' in result.output
    assert "no-such-scenario.yaml" not in result.output


def test_ab_calibrate_help_shows_the_settings_metavar_and_its_note() -> None:
    output = " ".join(CliRunner().invoke(ab, ["calibrate", "--help"]).output.split())
    assert '--duration DURATION Run length, e.g. "30s" or "3m". Each night runs this long.' in output
    assert "The protocol the target speaks. The baseline and the candidate both speak it." in output
