"""What the leak audit must look at, read from the experiments a drill runs.

A drill that stopped Redis must find it running again at the end, and one that touched a
Kubernetes cluster must find none of rushhour's objects left there. Which Redis port and which
namespace is resolved as Chaos Toolkit would: an argument's `${key}` from the experiment's
configuration, an `env` entry from the chaos entry's `env:`, then the environment, then its default.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rushhour.scenarios.spec.chaos import PlannedFault, load_experiment_file

__all__ = ["LeakScope", "leak_scope"]

REDIS_MODULE = "rushhour.experiments.local.redis"
KUBERNETES_PREFIX = "rushhour.experiments.kubernetes"
DEFAULT_REDIS_PORT = 6379
DEFAULT_NAMESPACE = "rushhour"
REFERENCE = re.compile(r"^\$\{([A-Za-z0-9_]+)\}$")


@dataclass(frozen=True)
class LeakScope:
    """Redis ports and Kubernetes namespaces the drill's faults touched."""

    redis_ports: tuple[int, ...] = ()
    namespaces: tuple[str, ...] = ()


def leak_scope(faults: Sequence[PlannedFault], environ: Mapping[str, str] | None = None) -> LeakScope:
    env = os.environ if environ is None else environ
    ports: set[int] = set()
    namespaces: set[str] = set()
    for fault in faults:
        experiment = load_experiment_file(fault.experiment)
        config = experiment.get("configuration") or {}
        lookup = {**env, **fault.env}
        for provider in _providers(experiment):
            module = str(provider.get("module", ""))
            args = provider["arguments"] if isinstance(provider.get("arguments"), Mapping) else {}
            if module == REDIS_MODULE and "redis" in str(provider.get("func", "")):
                ports.add(int(_resolve(args.get("port", DEFAULT_REDIS_PORT), config, lookup)))
            elif module.startswith(KUBERNETES_PREFIX):
                namespaces.add(str(_resolve(args.get("ns", DEFAULT_NAMESPACE), config, lookup)))
    return LeakScope(tuple(sorted(ports)), tuple(sorted(namespaces)))


def _providers(experiment: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for activity in [*experiment.get("method", []), *experiment.get("rollbacks", [])]:
        provider = activity.get("provider") if isinstance(activity, Mapping) else None
        if isinstance(provider, Mapping) and provider.get("type") == "python":
            yield provider


def _resolve(value: Any, config: Mapping[str, Any], env: Mapping[str, str]) -> Any:
    """A literal, or `${key}` looked up in the configuration (an `env` entry read from `env`)."""
    match = REFERENCE.match(value) if isinstance(value, str) else None
    if match is None:
        return value
    entry = config.get(match.group(1))
    if isinstance(entry, Mapping) and entry.get("type") == "env":
        return env.get(str(entry.get("key")), entry.get("default"))
    return entry if entry is not None else value
