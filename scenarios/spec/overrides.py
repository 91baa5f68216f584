"""Each scenario setting a command-line flag can override, declared once: flag, type, help, the field it replaces.

`SETTINGS` is the one table: the CLI's option decorator (`rushhour.scenarios.cli.override_flags`)
makes the flags of `run`, `capacity` and `ab` from it, `Overrides` holds one field per entry, and
`apply_overrides` walks it to put the given values into the scenario. A setting's bounds that the
scenario model already states (`load.processes` from 1 to 64) are read from the model, not repeated.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

import annotated_types
from pydantic import BaseModel, ValidationError

from rushhour.kernel.clock import parse_duration
from rushhour.scenarios.spec.model import Scenario, ScenarioError, format_errors
from rushhour.scenarios.spec.target import PROTOCOL_NAMES
from rushhour.scenarios.spec.urls import check_target_url


def check_positive_duration(value: str) -> None:
    """Raise ValueError unless `value` is a duration longer than zero ("30s", "3m")."""
    if parse_duration(value) <= 0:
        raise ValueError(f'"{value}" must be longer than zero.')


@dataclass(frozen=True)
class Setting:
    """One overridable setting: the `Overrides` field `name`, its flag, and the scenario field it replaces.

    `field` is a dotted path into the scenario (`traffic.seed`); `also` are fields of the same
    section set beside it (a replaced traffic model drops the file's rate). `check` refuses a bad
    value with a ValueError sentence; `parse_check` runs it as the flag is read (exit 2 before the
    scenario is opened), else it runs as the value is applied. `to_field` turns a flag's value into
    the field's (`--no-chaos` into no chaos entries).
    """

    name: str
    flag: str
    kind: type[str] | type[int] | type[bool]
    help: str
    field: str
    default: str = ""
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    also: Mapping[str, object] = dataclasses.field(default_factory=dict)
    check: Callable[[Any], None] | None = None
    parse_check: bool = False
    to_field: Callable[[Any], object] | None = None

    @property
    def section(self) -> str:
        return self.field.split(".", 1)[0]

    def bounds(self) -> tuple[int | None, int | None]:
        """The lowest and highest value: the declared minimum, else what the scenario model allows."""
        low, high = self.minimum, None
        for item in model_field(self.field).metadata:
            if isinstance(item, annotated_types.Ge) and isinstance(item.ge, int) and low is None:
                low = item.ge
            if isinstance(item, annotated_types.Le) and isinstance(item.le, int):
                high = item.le
        return low, high


SETTINGS: tuple[Setting, ...] = (
    Setting("target_url", "--target", str, "Load this running service instead of the scenario's target.",
            "target.url", default="the scenario's target.url or its embedded server", metavar="URL",
            also={"embedded": None}, check=check_target_url),
    Setting("protocol", "--protocol", str, "The protocol the target speaks.", "target.protocol",
            default="the scenario's target.protocol, else rushhour", choices=PROTOCOL_NAMES),
    Setting("traffic", "--traffic", str, 'Replace the traffic model, e.g. "constant:20" (requests/s); the '
            "file's rate and peak_rps are dropped, its clock kept.", "traffic.model",
            default="the scenario's traffic.model", metavar="MODEL", also={"rate_scale": 1.0, "peak_rps": None}),
    Setting("duration", "--duration", str, 'Run length, e.g. "30s" or "3m".', "traffic.duration",
            default="the scenario's traffic.duration", metavar="DURATION", check=check_positive_duration,
            parse_check=True),
    Setting("seed", "--seed", int, "Seed of the arrival schedule.", "traffic.seed",
            default="the scenario's traffic.seed", minimum=0),
    Setting("no_chaos", "--no-chaos", bool, "Skip the scenario's chaos experiments.", "chaos",
            to_field=lambda _on: []),
    Setting("processes", "--processes", int, "Locust processes generating the load.", "load.processes",
            default="the scenario's load.processes"),
)
BY_NAME: Mapping[str, Setting] = {setting.name: setting for setting in SETTINGS}


def model_field(path: str, model: type[BaseModel] = Scenario) -> Any:
    """The pydantic FieldInfo at dotted `path` of `model`; KeyError naming the path when it has none."""
    *sections, leaf = path.split(".")
    for name in sections:
        if name not in model.model_fields:
            raise KeyError(f'The scenario has no field "{name}" (in "{path}").')
        annotation = model.model_fields[name].annotation
        nested = next((c for c in (annotation, *getattr(annotation, "__args__", ()))
                       if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if nested is None:
            raise KeyError(f'The scenario field "{name}" holds no fields (in "{path}").')
        model = nested
    if leaf not in model.model_fields:
        raise KeyError(f'The scenario has no field "{leaf}" (in "{path}").')
    return model.model_fields[leaf]


@dataclass(frozen=True)
class Overrides:
    """Command-line flags that replace parts of the scenario file: one field per entry of SETTINGS."""

    target_url: str | None = None
    protocol: str | None = None
    traffic: str | None = None
    duration: str | None = None
    seed: int | None = None
    no_chaos: bool = False
    processes: int | None = None

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Overrides:
        """The overrides among `values` (a command's parsed flags); other keys are left out."""
        return cls(**{f.name: values[f.name] for f in fields(cls) if f.name in values})

    def given(self) -> list[tuple[Setting, Any]]:
        """The settings given a value, in the table's order (a False flag is not given)."""
        pairs = [(setting, getattr(self, setting.name)) for setting in SETTINGS]
        return [(setting, value) for setting, value in pairs if value is not None and value is not False]


def apply_overrides(scenario: Scenario, flags: Overrides, source: str) -> Scenario:
    """The scenario with every given flag applied, validated again; ScenarioError naming the flag or field."""
    given = flags.given()
    if not given:
        return scenario
    data = scenario.model_dump(mode="json")
    for setting, value in given:
        if setting.check is not None:
            try:
                setting.check(value)
            except ValueError as exc:
                raise ScenarioError(f"{source}: {setting.flag}: {exc}") from exc
        _put(data, setting, setting.to_field(value) if setting.to_field else value)
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(format_errors(f"{source} (with command-line overrides)", exc)) from exc


def _put(data: dict[str, Any], setting: Setting, value: object) -> None:
    *sections, leaf = setting.field.split(".")
    place = data
    for name in sections:
        if place.get(name) is None:
            place[name] = {}
        place = place[name]
    place[leaf] = value
    place.update(setting.also)
