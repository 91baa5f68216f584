"""A scenario's chaos section planned once: which experiment runs when, against what, held how long.

Planning reads and checks every experiment file (a malformed one is an input error, exit 2,
found by `--dry-run` too), turns scenario clock times into wall offsets, and gives each fault a
unique, path-safe name. The run's timeline (`rushhour.scenarios.run.chaos.timeline`) only fires what was planned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from chaoslib.activity import ensure_activity_is_valid
from chaoslib.exceptions import ChaosException
from pydantic import BaseModel

from rushhour.kernel import jsonfile
from rushhour.kernel.clock import format_clock, parse_clock_s, parse_duration
from rushhour.kernel.yamlfile import load_yaml, yaml_problem
from rushhour.scenarios.spec.model import DRILL_HYPOTHESIS, ChaosEntry, ScenarioError

__all__ = ["PlannedFault", "check_experiment", "drives_admin_api", "load_experiment_file", "plan_faults"]

ADMIN_MODULE = "rushhour.experiments.local"
TARGET_KEYS = ("node_id", "pool", "nodes", "label_selector", "name", "node_name", "namespace")


class PlannedFault(BaseModel):
    """One chaos entry resolved against the run: its file, wall offset, hold and targets."""

    name: str
    experiment: Path
    scenario_time: str
    offset_s: float
    targets: list[str]
    hold: str | None = None  # as the scenario wrote it, on the model clock
    hold_s: float | None = None  # in wall seconds
    env: dict[str, str] = {}
    hypothesis: str = DRILL_HYPOTHESIS
    in_run: bool = True
    admin: bool = True
    """Whether the experiment drives the reference server's admin API (any activity of
    `rushhour.experiments.local`); those on a user's own process or workload do not."""

    def process_env(self, base: Mapping[str, str]) -> dict[str, str]:
        """The experiment's environment: the hold, in wall seconds, becomes RUSHHOUR_FAULT_HOLD_S.

        The drill's own keys (`base`: target URL and admin token) win over the entry's `env`,
        so a scenario cannot point an experiment at another host than the guarded target.
        """
        env = {**self.env, **base}
        if self.hold_s is not None:
            env["RUSHHOUR_FAULT_HOLD_S"] = f"{self.hold_s:.3f}"
        return env


def plan_faults(entries: Sequence[ChaosEntry], *, start_clock_s: float, time_scale: float, duration_s: float,
                search_dirs: Sequence[Path], source: str) -> list[PlannedFault]:
    """Every entry planned; entries outside [0, duration) are kept with `in_run=False`."""
    faults: list[PlannedFault] = []
    used: set[str] = set()
    for index, entry in enumerate(entries):
        where = f"{source}: chaos[{index}]"
        path = _find(entry.experiment, search_dirs)
        if path is None:
            raise ScenarioError(f'{where}.experiment: no experiment file "{entry.experiment}".')
        experiment = check_experiment(path, f"{where}.experiment")
        model_s = parse_clock_s(entry.at)
        offset_s = (model_s - start_clock_s) / time_scale
        hold_s = parse_duration(entry.hold) / time_scale if entry.hold is not None else None
        faults.append(PlannedFault(
            name=_unique(entry.name or path.stem, used), experiment=path, scenario_time=format_clock(model_s),
            offset_s=offset_s, targets=_targets(experiment), hold=entry.hold, hold_s=hold_s, env=dict(entry.env),
            hypothesis=entry.hypothesis, in_run=0 <= offset_s < duration_s, admin=drives_admin_api(experiment),
        ))
    return faults


def load_experiment_file(path: Path) -> dict[str, Any]:
    """Parse a JSON or YAML experiment; the error names the file."""
    try:
        text = path.read_text(encoding="utf-8")
        data = jsonfile.loads(text) if path.suffix == ".json" else load_yaml(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"Chaos experiment {path} cannot be read: {yaml_problem(exc)}") from exc
    except (OSError, ValueError) as exc:
        raise ScenarioError(f"Chaos experiment {path} cannot be read: {exc}") from exc
    if not isinstance(data, dict):
        raise ScenarioError(f"Chaos experiment {path} is not a mapping.")
    return data


def _find(spec: str, search_dirs: Sequence[Path]) -> Path | None:
    for root in search_dirs:
        path = (root / spec).resolve()
        if path.is_file():
            return path
    return None


def check_experiment(path: Path, where: str) -> dict[str, Any]:
    """Structural validation without secrets: `chaos run` validates fully at launch."""
    try:
        experiment = load_experiment_file(path)
    except ScenarioError as exc:
        raise ScenarioError(f"{where}: {exc}") from exc
    if not experiment.get("title") or not experiment.get("method"):
        raise ScenarioError(f"{where}: {path} has no title or no method.")
    try:
        for activity in [*experiment["method"], *experiment.get("rollbacks", [])]:
            ensure_activity_is_valid(activity)
    except (ChaosException, TypeError, AttributeError) as exc:
        raise ScenarioError(f"{where}: {path} is not a valid experiment: {exc}") from exc
    return experiment


def drives_admin_api(experiment: Mapping[str, Any]) -> bool:
    """True when any activity (hypothesis, method, rollbacks) calls the reference server's admin
    API through `rushhour.experiments.local`; a process provider is counted as doing so."""
    hypothesis = experiment.get("steady-state-hypothesis") or {}
    activities = [*(hypothesis.get("probes") or []), *experiment.get("method", []), *experiment.get("rollbacks", [])]
    for activity in activities:
        provider = activity.get("provider", {}) if isinstance(activity, Mapping) else {}
        if provider.get("type") != "python" or str(provider.get("module", "")).startswith(ADMIN_MODULE):
            return True
    return False


def _unique(name: str, used: set[str]) -> str:
    candidate, n = name, 1
    while candidate in used:
        n += 1
        candidate = f"{name}-{n}"
    used.add(candidate)
    return candidate


def _targets(experiment: Mapping[str, Any]) -> list[str]:
    """What the method's actions touch, in words: `kill_node pool=quality`."""
    described = []
    for activity in experiment.get("method", []):
        if not isinstance(activity, Mapping) or activity.get("type") != "action":
            continue
        provider = activity.get("provider", {})
        args = provider.get("arguments") or {}
        if not isinstance(args, Mapping):  # a process provider's argv says nothing of targets
            args = {}
        what = " ".join(f"{k}={args[k]}" for k in TARGET_KEYS if args.get(k) not in (None, ""))
        described.append(f"{provider.get('func', activity.get('name', '?'))} {what}".strip())
    return described
