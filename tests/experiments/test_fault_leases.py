"""Every fault an experiment holds gets the short lease, renewed while the experiment holds it.

Each shipped experiment's method is resolved as Chaos Toolkit would resolve it for a 300 s hold and
its fault-proxy actions are run against the fake admin API, so the test reads the TTLs the server
would really be sent, not the file's text.
"""

from __future__ import annotations

import importlib
import json
import time
from pathlib import Path
from typing import Any

import pytest
from chaoslib import substitute
from chaoslib.configuration import load_configuration
from chaoslib.exceptions import ActivityFailed

from rushhour.experiments import leases
from rushhour.experiments.local import actions

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
FILES = sorted(EXPERIMENTS.glob("*.json"))
HOLD_S = 300.0
RENEWAL_WAIT_S = 30.0
RUNNABLE = "rushhour.experiments.local.actions"  # the only module safe to run against the fake (no Redis, no cluster)
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


def _renewed(calls: list[tuple[str, str, Any]]) -> set[str]:
    """The nodes whose fault lease was renewed with the short lease."""
    return {p.split("/")[3] for m, p, b in list(calls) if p.endswith("/lease") and b == {"ttl_s": 0.4}}


def _fault_ttls(calls: list[tuple[str, str, Any]]) -> list[float]:
    return [float(body["ttl_s"]) for method, path, body in calls if method == "POST" and path.endswith("/faults")]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_fault_lease_is_short_and_renewed_through_a_300_s_hold(path: Path, fake_cluster: Fake,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    cluster, config, secrets = fake_cluster
    method, configuration = _resolved_method(path, monkeypatch)
    monkeypatch.setenv(leases.LEASE_ENV, "0.4")  # renewed every 0.1 s, so the test sees renewals at once
    assert configuration["fault_hold_s"] == HOLD_S
    for activity in method:
        provider = activity["provider"]
        if provider["module"] == RUNNABLE:
            func = getattr(importlib.import_module(provider["module"]), provider["func"])
            func(**provider["arguments"], configuration=config, secrets=secrets)
    faulted = {p.split("/")[3] for m, p, _ in cluster.calls if m == "POST" and p.endswith("/faults")}
    # The renewal threads wake every 0.1 s, later on a busy machine: wait (bounded) for each held
    # fault's first renewal instead of a fixed time that a loaded machine can overrun.
    give_up = time.monotonic() + RENEWAL_WAIT_S
    while not faulted <= _renewed(cluster.calls) and time.monotonic() < give_up:
        time.sleep(0.05)
    leases.release("http")
    ttls = _fault_ttls(cluster.calls)
    assert all(ttl == 0.4 for ttl in ttls), f"{path.name} injects faults with TTLs {ttls}, not the short lease"
    renewed = _renewed(cluster.calls)
    assert faulted <= renewed, f"{path.name}: faults on {sorted(faulted - renewed)} were never renewed"
    if path.stem in {"network-partition", "slow-gpu", "gpu-throttle"}:
        assert ttls, f"{path.name} injected no fault"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_fault_lease_no_experiment_fixes_a_ttl(path: Path) -> None:
    for activity in json.loads(path.read_text())["method"]:
        arguments = activity["provider"].get("arguments", {})
        assert "ttl_s" not in arguments or "${fault_hold_s}" in str(arguments["ttl_s"]), (path.name, arguments)


def test_fault_lease_is_the_short_lease_when_held_or_the_ttl_when_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(leases.LEASE_ENV, raising=False)
    assert actions.lease_s(60.0) == 60.0
    assert actions.lease_s(60.0, hold_s=300.0) == leases.DEFAULT_LEASE_S
    assert actions.lease_s(900.0, hold_s=1800.0) == leases.DEFAULT_LEASE_S  # however long the hold
    assert actions.lease_s("60", hold_s="10", lease_margin_s=5) == leases.DEFAULT_LEASE_S  # type: ignore[arg-type]
    with pytest.raises(ActivityFailed, match="-1"):
        actions.lease_s(60.0, hold_s=-1)
