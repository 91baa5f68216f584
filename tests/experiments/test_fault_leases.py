"""Every fault an experiment injects outlives its hold: the lease (TTL) follows RUSHHOUR_FAULT_HOLD_S.

Each shipped experiment's method is resolved as Chaos Toolkit would resolve it for a 300 s hold and
its fault-proxy actions are run against the fake admin API, so the test reads the TTLs the server
would really be sent, not the file's text.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from chaoslib import substitute
from chaoslib.configuration import load_configuration
from chaoslib.exceptions import ActivityFailed

from experiments.local import actions

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
FILES = sorted(EXPERIMENTS.glob("*.json"))
HOLD_S = 300.0
RUNNABLE = "experiments.local.actions"  # the only module safe to run against the fake (no Redis, no cluster)
Fake = tuple[Any, dict[str, Any], dict[str, Any]]


def _resolved_method(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    monkeypatch.setenv("RUSHHOUR_FAULT_HOLD_S", str(HOLD_S))
    monkeypatch.setenv("RUSHHOUR_ADMIN_TOKEN", "validate-only")
    experiment = json.loads(path.read_text())
    configuration = load_configuration(experiment.get("configuration", {}))
    method = [a for a in experiment["method"] if a["type"] == "action"]
    for activity in method:
        activity["provider"]["arguments"] = substitute(activity["provider"].get("arguments", {}), configuration, {})
    return method, configuration


def _fault_ttls(calls: list[tuple[str, str, Any]]) -> list[float]:
    return [float(body["ttl_s"]) for method, path, body in calls if method == "POST" and path.endswith("/faults")]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_fault_lease_covers_a_300_s_hold(path: Path, fake_cluster: Fake, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster, config, secrets = fake_cluster
    method, configuration = _resolved_method(path, monkeypatch)
    assert configuration["fault_hold_s"] == HOLD_S
    for activity in method:
        provider = activity["provider"]
        arguments = provider["arguments"]
        for key, value in arguments.items():
            if "ttl" in key or "lease" in key:  # any lease written in the file must cover the hold
                assert float(value) >= HOLD_S, f"{path.name}: {activity['name']} has {key}={value!r}"
        if provider["module"] == RUNNABLE:
            func = getattr(importlib.import_module(provider["module"]), provider["func"])
            func(**arguments, configuration=config, secrets=secrets)
    ttls = _fault_ttls(cluster.calls)
    assert all(ttl >= HOLD_S for ttl in ttls), f"{path.name} injects faults with TTLs {ttls} for a {HOLD_S} s hold"
    if path.stem in {"network-partition", "slow-gpu", "gpu-throttle"}:
        assert ttls, f"{path.name} injected no fault"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_fault_lease_no_experiment_fixes_a_ttl(path: Path) -> None:
    for activity in json.loads(path.read_text())["method"]:
        arguments = activity["provider"].get("arguments", {})
        assert "ttl_s" not in arguments or "${fault_hold_s}" in str(arguments["ttl_s"]), (path.name, arguments)


def test_fault_lease_is_hold_plus_margin_or_the_ttl_when_longer() -> None:
    assert actions.lease_s(60.0) == 60.0
    assert actions.lease_s(60.0, hold_s=300.0) == 300.0 + actions.LEASE_MARGIN_S
    assert actions.lease_s(900.0, hold_s=300.0) == 900.0
    assert actions.lease_s("60", hold_s="10", lease_margin_s=5) == 60.0  # type: ignore[arg-type]
    with pytest.raises(ActivityFailed, match="-1"):
        actions.lease_s(60.0, hold_s=-1)
