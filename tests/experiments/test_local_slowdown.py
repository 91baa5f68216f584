"""The slowdown actions and the gpu-throttle experiment: what they send, and where the factor comes from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from chaoslib import substitute
from chaoslib.configuration import load_configuration
from chaoslib.exceptions import ActivityFailed

from rushhour.experiments import leases
from rushhour.experiments.client import client_from
from rushhour.experiments.local import actions

EXPERIMENT = Path(__file__).resolve().parents[2] / "experiments" / "gpu-throttle.json"
Fake = tuple[Any, dict[str, Any], dict[str, Any]]


def test_slow_down_node_sends_the_contract_body(fake_cluster: Fake) -> None:
    cluster, config, secrets = fake_cluster
    result = actions.slow_down_node(pool="quality", factor=1.3, ttl_s=40, configuration=config, secrets=secrets)
    assert result["node"] == "quality-0"
    assert cluster.calls == [("POST", "/admin/nodes/quality-0/faults", {"kind": "slowdown", "factor": 1.3, "ttl_s": 40.0})]
    json.dumps(result)


@pytest.mark.slow
def test_slow_down_pool_slows_every_node_of_the_pool_for_the_hold(fake_cluster: Fake) -> None:
    cluster, config, secrets = fake_cluster
    cluster.states["quality-1"] = "starting"  # not ready yet: slowed all the same
    result = actions.slow_down_pool(pool="quality", factor="2", hold_s=100, configuration=config, secrets=secrets)  # type: ignore[arg-type]
    assert result["nodes"] == ["quality-0", "quality-1", "quality-10"]
    body = {"kind": "slowdown", "factor": 2.0, "ttl_s": leases.default_lease_s()}  # short, renewed while held
    actions.release_server(client_from(config, secrets))
    faults = [call for call in cluster.calls if call[1].endswith("/faults")]
    assert faults == [("POST", f"/admin/nodes/{n}/faults", body) for n in result["nodes"]]


@pytest.mark.parametrize("factor", [0.5, 21, float("nan")])
def test_slow_down_rejects_a_factor_out_of_range_before_calling(factor: float, fake_cluster: Fake) -> None:
    cluster, config, secrets = fake_cluster
    with pytest.raises(ActivityFailed, match="between 1 and 20"):
        actions.slow_down_pool(factor=factor, configuration=config, secrets=secrets)
    assert cluster.calls == []


def test_slow_down_actions_document_what_they_break_and_the_undo() -> None:
    for func in (actions.slow_down_node, actions.slow_down_pool):
        doc = func.__doc__ or ""
        assert "compute time" in doc and "factor:" in doc and "hold_s:" in doc and "Undo with" in doc


@pytest.mark.parametrize(("env", "expected"), [(None, 1.5), ("1.3", 1.3)])
def test_gpu_throttle_takes_its_factor_from_the_environment(env: str | None, expected: float, monkeypatch: pytest.MonkeyPatch) -> None:
    if env is None:
        monkeypatch.delenv("RUSHHOUR_SLOWDOWN_FACTOR", raising=False)
    else:
        monkeypatch.setenv("RUSHHOUR_SLOWDOWN_FACTOR", env)
    experiment = json.loads(EXPERIMENT.read_text())
    configuration = load_configuration(experiment["configuration"])
    [action] = [a for a in experiment["method"] if a["type"] == "action"]
    assert action["provider"]["func"] == "slow_down_pool"
    arguments = substitute(action["provider"]["arguments"], configuration, {})
    assert arguments["pool"] == "quality" and arguments["factor"] == expected
    assert [r["provider"]["func"] for r in experiment["rollbacks"]] == ["heal_pool", "reset"]
