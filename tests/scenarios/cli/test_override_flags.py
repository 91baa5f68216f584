"""The override flags made from the settings' table, on a stand-in click command."""

from __future__ import annotations

from typing import Any

import click
from click.testing import CliRunner

from rushhour.scenarios.cli.override_flags import help_text, override_options
from rushhour.scenarios.spec.overrides import BY_NAME, Overrides

SEEN: list[Overrides] = []


@click.command()
@override_options("target_url", "duration", "seed", "no_chaos", "processes",
                  notes={"seed": "A stand-in note."}, defaults={"duration": "ten seconds"})
def stand_in(**values: Any) -> None:
    SEEN.append(Overrides.of(values))


def _invoke(*args: str) -> tuple[int, str]:
    SEEN.clear()
    result = CliRunner().invoke(stand_in, list(args))
    return result.exit_code, result.output


def test_override_flags_reach_the_command_as_overrides() -> None:
    code, output = _invoke("--target", "http://127.0.0.1:9", "--duration", "30s", "--seed", "4", "--no-chaos",
                           "--processes", "3")
    assert code == 0, output
    assert SEEN == [Overrides(target_url="http://127.0.0.1:9", duration="30s", seed=4, no_chaos=True, processes=3)]


def test_override_flags_absent_leave_every_setting_unset() -> None:
    assert _invoke() == (0, "") and SEEN == [Overrides()]


def test_override_flags_refuse_out_of_range_values_with_exit_2() -> None:
    for args, words in ((("--seed", "-1"), "-1 is not in the range x>=0"),
                        (("--processes", "65"), "65 is not in the range 1<=x<=64"),
                        (("--duration", "0s"), '--duration: "0s" must be longer than zero.'),
                        (("--duration", "soon"), "--duration:")):
        code, output = _invoke(*args)
        assert code == 2 and words in output and not SEEN, (args, output)


def test_override_flags_help_has_notes_and_defaults_of_the_command() -> None:
    output = " ".join(CliRunner().invoke(stand_in, ["--help"]).output.split())
    assert "--seed INTEGER RANGE Seed of the arrival schedule. A stand-in note. Default: the scenario's" in output
    assert "--duration DURATION Run length" in output and "Default: ten seconds." in output
    assert "--target URL" in output


def test_override_flags_help_text_joins_help_note_and_default() -> None:
    assert help_text(BY_NAME["no_chaos"]) == "Skip the scenario's chaos experiments."
    assert help_text(BY_NAME["seed"], "N.", "none") == "Seed of the arrival schedule. N. Default: none."


def test_allow_remote_is_the_one_declared_flag_on_every_command_that_contacts_a_target() -> None:
    from rushhour.scenarios.cli.main import cli
    from rushhour.scenarios.cli.override_flags import ALLOW_REMOTE_FLAG

    def flag_of(command: click.Command) -> click.Option | None:
        found = [p for p in command.params if isinstance(p, click.Option) and ALLOW_REMOTE_FLAG in p.opts]
        return found[0] if found else None

    context = click.Context(cli)

    def command(name: str) -> click.Command:
        found = cli.get_command(context, name)
        assert found is not None, name
        return found

    for name in ("run", "capacity", "ab", "init", "worker"):
        option = flag_of(command(name))
        assert option is not None, name
        assert (option.name, option.is_flag, option.default, option.opts) == ("allow_remote", True, False,
                                                                            [ALLOW_REMOTE_FLAG]), name
    assert flag_of(command("serve")) is None  # serving contacts nobody
