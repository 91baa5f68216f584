"""The click options of the scenario settings a flag can override, made from their one declaration.

`override_options("seed", "duration")` adds `--seed` and `--duration` to a command exactly as
`rushhour.scenarios.spec.overrides.SETTINGS` declares them: flag, type and bounds, metavar and
help; a command adds a note of its own or says what its default is instead (`ab` draws a seed per
night). Each option's value reaches the command under the setting's name (`target_url` for
`--target`), so `Overrides.of(locals())` collects them.

`allow_remote_option` is the one declaration of `--allow-remote`, the flag that lets a command
contact a host that is not this machine: not a scenario setting (a scenario file can never open the
guard), so it has no `Overrides` field; each command that contacts a target takes it from here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click

from rushhour.scenarios.cli.errors import BadInput
from rushhour.scenarios.spec.overrides import BY_NAME, Setting

Command = TypeVar("Command", bound=Callable[..., Any])


def help_text(setting: Setting, note: str = "", default: str | None = None) -> str:
    """The option's help: what it does, the command's note, and its default."""
    default = setting.default if default is None else default
    return " ".join(part for part in (setting.help, note, f"Default: {default}." if default else "") if part)


def click_type(setting: Setting) -> click.ParamType | type:
    """The click type of the setting: its choices, its bounded or plain int, or a string."""
    if setting.choices:
        return click.Choice(setting.choices)
    if setting.kind is int:
        low, high = setting.bounds()
        return click.IntRange(low, high) if low is not None or high is not None else int
    return str


def parse_check(name: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A click callback that refuses a bad value of setting `name` as the flag is read (exit 2)."""
    setting = BY_NAME[name]

    def callback(_ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        if value is not None and setting.check is not None:
            try:
                setting.check(value)
            except ValueError as exc:
                raise BadInput(f"{setting.flag}: {exc}") from exc
        return value

    return callback


def option(setting: Setting, note: str = "", default: str | None = None) -> Callable[[Command], Command]:
    """The click option of one setting."""
    text = help_text(setting, note, default)
    if setting.kind is bool:
        return click.option(setting.flag, setting.name, is_flag=True, help=text)
    return click.option(setting.flag, setting.name, type=click_type(setting), metavar=setting.metavar, help=text,
                        callback=parse_check(setting.name) if setting.parse_check else None)


def override_options(*names: str, notes: Mapping[str, str] | None = None,
                     defaults: Mapping[str, str] | None = None) -> Callable[[Command], Command]:
    """Add the options of the settings `names`, in that order; `notes` and `defaults` by setting name."""
    unknown = [name for name in [*names, *(notes or {}), *(defaults or {})] if name not in BY_NAME]
    if unknown:
        raise KeyError(f'"{unknown[0]}" is not an overridable setting; known: {", ".join(BY_NAME)}.')

    def decorate(command: Command) -> Command:
        for name in reversed(names):
            command = option(BY_NAME[name], (notes or {}).get(name, ""), (defaults or {}).get(name))(command)
        return command

    return decorate


ALLOW_REMOTE_FLAG = "--allow-remote"
ALLOW_REMOTE_HELP = "Allow a target that is not on this machine."


def allow_remote_option(help_text: str = ALLOW_REMOTE_HELP) -> Callable[[Command], Command]:
    """`--allow-remote` (value `allow_remote`, off by default); `help_text` words it for the command."""
    return click.option(ALLOW_REMOTE_FLAG, "allow_remote", is_flag=True, default=False, help=help_text)
