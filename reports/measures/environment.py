"""Where the run happened: hardware, execution provider, versions, commit, seed.

Taken from the run_start event (recorded on the machine that ran the drill), never from the
machine re-rendering the report, which may be a laptop days later.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

ENV_ORDER = ("cpu_model", "cpu_cores", "gpu", "memory_gb", "os", "python", "packages", "git_commit")


def describe_environment(run_start: dict[str, Any] | None, metrics: pd.DataFrame | None,
                seed: int | None) -> dict[str, Any]:
    """A flat, ordered description of the run's environment; absent facts say "unknown"."""
    env = dict((run_start or {}).get("env") or {})
    ordered: dict[str, Any] = {key: env.pop(key, "unknown") for key in ENV_ORDER}
    ordered.update(env)
    ordered["execution_provider"] = _providers(metrics)
    ordered["batching"] = _batching(metrics)
    ordered["seed"] = seed if seed is not None else (run_start or {}).get("seed", "unknown")
    for key in ("target", "processes", "time_scale", "rate_scale", "fault_lease_s"):
        ordered[key] = (run_start or {}).get(key, "unknown")
    return ordered


def _batching(metrics: pd.DataFrame | None) -> str:
    """How each pool batched, e.g. "fast: dynamic; quality: continuous, chunked prefill 32
    tokens/step" (the last mode each pool reported; "unknown" when the server did not say)."""
    if metrics is None or not {"batching", "pool"} <= set(metrics.columns):
        return "unknown"
    said = metrics[metrics["batching"].astype(str).str.len() > 0]
    modes = said.groupby(said["pool"].astype(str))["batching"].last()
    return "; ".join(f"{pool}: {mode}" for pool, mode in modes.items()) or "unknown"


def _providers(metrics: pd.DataFrame | None) -> str:
    if metrics is None or "provider" not in metrics.columns:
        return "unknown"
    names = [str(name) for name in pd.unique(metrics["provider"].dropna()) if str(name)]
    return ", ".join(names) if names else "unknown"
