"""The overridable settings' one table: Overrides, the flags of run/capacity/ab and apply_overrides agree with it."""

from __future__ import annotations

import dataclasses
from collections import Counter

import click
import pytest

from rushhour.scenarios.cli.ab import ab
from rushhour.scenarios.cli.capacity import capacity
from rushhour.scenarios.cli.override_flags import override_options
from rushhour.scenarios.cli.run import run
from rushhour.scenarios.spec import plan
from rushhour.scenarios.spec.model import Scenario, ScenarioError
from rushhour.scenarios.spec.overrides import SETTINGS, Overrides, Setting, apply_overrides, model_field

TAKEN = {"run": ("target_url", "protocol", "traffic", "duration", "seed", "no_chaos", "processes"),
         "capacity": ("target_url", "seed"), "ab": ("protocol", "seed", "duration")}
"""Which settings each command takes, as its help promises."""
COMMANDS = {"run": run, "capacity": capacity, "ab": ab}


def _scenario() -> Scenario:
    return Scenario.model_validate({
        "name": "stand-in", "traffic": {"model": "constant:5", "duration": "60s", "seed": 1, "peak_rps": 40},
        "load": {"processes": 2},
        "chaos": [{"name": "pause", "experiment": "chaos/pause.json", "at": "00:00:10"}],
    })


def test_overrides_every_field_has_exactly_one_declaration() -> None:
    names = Counter(setting.name for setting in SETTINGS)
    assert set(names) == {field.name for field in dataclasses.fields(Overrides)}
    assert max(names.values()) == 1
    assert len({setting.flag for setting in SETTINGS}) == len(SETTINGS)


def test_overrides_kept_importable_from_the_plan_module() -> None:
    assert plan.Overrides is Overrides and plan.apply_overrides is apply_overrides


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_overrides_field_path_exists_in_the_scenario_model(setting: Setting) -> None:
    assert model_field(setting.field) is not None
    for extra in setting.also:
        assert model_field(f"{setting.section}.{extra}") is not None


def test_overrides_model_field_refuses_a_path_the_scenario_lacks() -> None:
    with pytest.raises(KeyError, match='"traffic.speed"'):
        model_field("traffic.speed")
    with pytest.raises(KeyError, match=r'"seed" holds no fields \(in "traffic.seed.value"\)'):
        model_field("traffic.seed.value")


@pytest.mark.parametrize("command", sorted(TAKEN))
def test_overrides_each_declared_flag_is_on_the_commands_that_take_it(command: str) -> None:
    options = {param.name: param for param in COMMANDS[command].params if isinstance(param, click.Option)}
    by_name = {setting.name: setting for setting in SETTINGS}
    for name in TAKEN[command]:
        assert options[name].opts == [by_name[name].flag]
        assert by_name[name].help in (options[name].help or "")
    undeclared = {name for name, option in options.items() if name in by_name} - set(TAKEN[command])
    assert not undeclared


def test_overrides_bounds_come_from_the_scenario_model() -> None:
    by_name = {setting.name: setting for setting in SETTINGS}
    assert by_name["processes"].bounds() == (1, 64)  # LoadSpec.processes: ge=1, le=64
    assert by_name["seed"].bounds() == (0, None)  # declared: a seed is not negative


def test_overrides_decorator_refuses_an_unknown_setting() -> None:
    with pytest.raises(KeyError, match='"speed" is not an overridable setting'):
        override_options("speed")


def test_overrides_of_collects_only_the_declared_values() -> None:
    flags = Overrides.of({"seed": 7, "no_chaos": True, "dry_run": True, "out": None})
    assert flags == Overrides(seed=7, no_chaos=True)


def test_apply_overrides_walks_the_table() -> None:
    flags = Overrides(target_url="http://127.0.0.1:9000", protocol="openai-chat", traffic="constant:20",
                      duration="30s", seed=9, no_chaos=True, processes=4)
    got = apply_overrides(_scenario(), flags, "stand-in.yaml")
    assert (got.target.url, got.target.embedded, got.target.protocol) == ("http://127.0.0.1:9000", None, "openai-chat")
    assert (got.traffic.model, got.traffic.duration_s, got.traffic.seed) == ("constant:20", 30.0, 9)
    assert (got.traffic.rate_scale, got.traffic.peak_rps) == (1.0, None)  # a replaced model drops the file's rate
    assert got.load.processes == 4 and got.chaos == []


def test_apply_overrides_leaves_what_no_flag_names() -> None:
    scenario = _scenario()
    assert apply_overrides(scenario, Overrides(), "stand-in.yaml") is scenario
    got = apply_overrides(scenario, Overrides(seed=3), "stand-in.yaml")
    assert got.traffic.seed == 3 and got.traffic.peak_rps == 40 and len(got.chaos) == 1


def test_apply_overrides_refuses_a_bad_value_naming_flag_and_file() -> None:
    with pytest.raises(ScenarioError, match='stand-in.yaml: --target: "ftp://x" must start with http'):
        apply_overrides(_scenario(), Overrides(target_url="ftp://x"), "stand-in.yaml")
    with pytest.raises(ScenarioError, match="stand-in.yaml: --duration: "):
        apply_overrides(_scenario(), Overrides(duration="0s"), "stand-in.yaml")
    with pytest.raises(ScenarioError, match=r"stand-in.yaml \(with command-line overrides\)"):
        apply_overrides(_scenario(), Overrides(processes=500), "stand-in.yaml")
