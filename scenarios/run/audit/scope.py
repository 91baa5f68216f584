"""What the leak audit must look at, read from the experiments a drill runs.

A drill that stopped Redis must find it running again at the end, and one that touched a
Kubernetes cluster must find none of rushhour's objects left there: in the reference server's
namespace, or in the user's own workload namespace that a workload experiment was pointed at.
Each experiment is resolved as `chaos run` resolves it, with Chaos Toolkit's own functions: its
configuration loaded with the chaos entry's `env:` over the environment, its arguments
substituted (`${key}`), and an argument it leaves out taken from the action's own default. The
Kubernetes credentials the experiment used (the `KUBERNETES_*` entries of its secrets and of the
entry's `env:`, and a `KUBECONFIG` the entry names, a relative one read from the experiment's
folder as `chaos run` reads it) go with each namespace, so the audit asks the cluster the fault
was made in.
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaoslib import substitute
from chaoslib.configuration import convert_to_type, load_configuration
from chaoslib.exceptions import ChaosException
from chaoslib.secret import load_secrets

from rushhour.scenarios.spec.chaos import PlannedFault, load_experiment_file

__all__ = ["KubeScope", "LeakScope", "leak_scope"]

REDIS_MODULE = "rushhour.experiments.local.redis"
KUBERNETES_PREFIX = "rushhour.experiments.kubernetes"
DEFAULT_REDIS_PORT = 6379
DEFAULT_NAMESPACE = "rushhour"
CREDENTIAL_KEYS = ("KUBERNETES_", "CHAOSTOOLKIT_IN_POD", "KUBECONFIG")
"""What chaostoolkit-kubernetes reads to reach a cluster (`create_k8s_api_client`; the kubernetes
client reads `KUBECONFIG`)."""


@dataclass(frozen=True)
class KubeScope:
    """One namespace a fault touched, and the credentials the experiment reached its cluster with."""

    namespace: str
    secrets: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class LeakScope:
    """Redis ports and Kubernetes namespaces (with their credentials) the drill's faults touched."""

    redis_ports: tuple[int, ...] = ()
    kubernetes: tuple[KubeScope, ...] = ()

    @property
    def namespaces(self) -> tuple[str, ...]:
        return tuple(sorted({k.namespace for k in self.kubernetes}))


def leak_scope(faults: Sequence[PlannedFault], environ: Mapping[str, str] | None = None) -> LeakScope:
    env = os.environ if environ is None else environ
    ports: set[int] = set()
    clusters: set[KubeScope] = set()
    for fault in faults:
        experiment = load_experiment_file(fault.experiment)
        lookup = {**env, **fault.env}
        config = _configuration(experiment, lookup)
        if config is None:  # `chaos run` refuses the experiment before any activity: nothing was done
            continue
        secrets = _secrets(experiment, config)
        for provider in _providers(experiment):
            module, func = str(provider.get("module", "")), str(provider.get("func", ""))
            args = _arguments(provider, config, secrets)
            if module == REDIS_MODULE and "redis" in func:
                ports.add(int(args.get("port", DEFAULT_REDIS_PORT)))
            elif module.startswith(KUBERNETES_PREFIX):
                namespace = args.get("ns", _default_namespace(module, func))
                if namespace is not None:
                    credentials = _credentials(provider, secrets, fault.env, folder=fault.experiment.parent)
                    clusters.add(KubeScope(str(namespace), credentials))
    return LeakScope(tuple(sorted(ports)), tuple(sorted(clusters, key=lambda k: (k.namespace, k.secrets))))


def _providers(experiment: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for activity in [*experiment.get("method", []), *experiment.get("rollbacks", [])]:
        provider = activity.get("provider") if isinstance(activity, Mapping) else None
        if isinstance(provider, Mapping) and provider.get("type") == "python":
            yield provider


def _configuration(experiment: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any] | None:
    """The configuration `chaos run` loads with `env` as its environment (the chaos entry's `env:`
    over the harness's); None where it would refuse it (an environment key unset, no default)."""
    declared = experiment.get("configuration") or {}
    given = {key: convert_to_type(entry.get("env_var_type"), env[str(entry["key"])])
             for key, entry in declared.items()
             if isinstance(entry, Mapping) and entry.get("type") == "env" and str(entry.get("key")) in env}
    try:
        return dict(load_configuration(dict(declared), extra_vars=given))
    except ChaosException:
        return None


def _secrets(experiment: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return dict(load_secrets(dict(experiment.get("secrets") or {}), dict(config)))
    except ChaosException:
        return {}


def _arguments(provider: Mapping[str, Any], config: Mapping[str, Any], secrets: Mapping[str, Any]) -> dict[str, Any]:
    """The provider's arguments with `${key}` substituted, as Chaos Toolkit hands them to the action."""
    args = provider.get("arguments")
    if not isinstance(args, Mapping):
        return {}
    return dict(substitute(dict(args), dict(config), dict(secrets)))


def _default_namespace(module: str, func: str) -> str | None:
    """The namespace an action works in when the experiment does not say: its own `ns` default;
    None for an action without one (a node's uncordon: nodes belong to no namespace, and every
    sweep looks at them)."""
    try:
        parameters = inspect.signature(getattr(importlib.import_module(module), func)).parameters
    except (ImportError, AttributeError, TypeError, ValueError):
        return DEFAULT_NAMESPACE
    if "ns" not in parameters:
        return None
    default = parameters["ns"].default
    return default if isinstance(default, str) else DEFAULT_NAMESPACE


def _credentials(provider: Mapping[str, Any], secrets: Mapping[str, Any], entry_env: Mapping[str, str], *,
                 folder: Path) -> tuple[tuple[str, str], ...]:
    """The cluster credentials the action was given: its secrets' `KUBERNETES_*` entries, then the
    chaos entry's `env:` ones (chaostoolkit-kubernetes reads the environment after its secrets). A
    relative `KUBECONFIG` names a file from `folder`, the experiment's, where `chaos run` runs it."""
    named = provider.get("secrets") or []
    given: dict[str, str] = {str(k): str(v) for k, v in entry_env.items() if str(k).startswith(CREDENTIAL_KEYS)}
    for scope in named if isinstance(named, list) else []:
        values = secrets.get(scope)
        if isinstance(values, Mapping):
            given.update({str(k): str(v) for k, v in values.items() if str(k).startswith(CREDENTIAL_KEYS)})
    if given.get("KUBECONFIG"):
        given["KUBECONFIG"] = os.pathsep.join(str(folder / Path(part).expanduser())
                                              for part in given["KUBECONFIG"].split(os.pathsep) if part.strip())
    return tuple(sorted(given.items()))
