"""Every shipped experiment file is valid Chaos Toolkit and heals what it breaks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from chaoslib.experiment import ensure_experiment_is_valid

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
FILES = sorted(EXPERIMENTS.glob("*.json"))
SERVICE = [f for f in FILES if f.name.startswith("service-")]  # a user's own service: tests/experiments/test_service_*.py
REFERENCE = [f for f in FILES if f not in SERVICE]
LOCAL = [f for f in REFERENCE if not f.name.startswith("k8s-")]
EXPECTED = {
    "gpu-node-loss", "network-partition", "cold-start-storm", "slow-gpu", "cache-flush",
    "all-gpu-down", "k8s-gpu-node-loss", "k8s-gpu-pod-loss", "k8s-network-partition",
    "k8s-cold-start", "redis-down", "gpu-throttle", "service-pause", "service-kill",
    "service-network-latency", "service-network-reset", "service-network-blackhole",
    "service-proxy-latency", "service-proxy-errors", "service-proxy-reset", "service-proxy-blackhole",
}


def _load(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def test_the_promised_experiments_ship() -> None:
    assert {f.stem for f in FILES} == EXPECTED


@pytest.mark.parametrize("path", REFERENCE, ids=lambda p: p.stem)
def test_experiment_is_valid(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUSHHOUR_ADMIN_TOKEN", "validate-only")
    experiment = _load(path)
    ensure_experiment_is_valid(experiment)
    assert experiment["configuration"]["rushhour_url"] == {
        "type": "env", "key": "RUSHHOUR_URL", "default": "http://127.0.0.1:8000",
    }
    assert experiment["secrets"]["rushhour"]["admin_token"] == {
        "type": "env", "key": "RUSHHOUR_ADMIN_TOKEN",
    }
    assert experiment["runtime"]["rollbacks"]["strategy"] == "always"
    probes = experiment["steady-state-hypothesis"]["probes"]
    assert any(p["provider"]["func"] == "slo_met" for p in probes)


@pytest.mark.parametrize("path", LOCAL, ids=lambda p: p.stem)
def test_local_experiment_rolls_back_and_ends_with_reset(path: Path) -> None:
    experiment = _load(path)
    rollbacks = [r["provider"]["func"] for r in experiment["rollbacks"]]
    assert rollbacks[-1] == "reset"
    broken = {a["provider"]["func"] for a in experiment["method"] if a["type"] == "action"}
    heals = {"kill_node": "recover_pool", "kill_pool": "recover_pool", "restart_pool": "recover_pool",
             "partition_node": "heal_pool", "add_latency": "heal_pool", "inject_errors": "heal_pool",
             "partition_pool": "heal_pool", "slow_down_node": "heal_pool", "slow_down_pool": "heal_pool"}
    assert {heals[b] for b in broken if b in heals} <= set(rollbacks)
    for activity in experiment["method"] + experiment["rollbacks"]:
        if activity["type"] == "action":
            assert activity["provider"]["secrets"] == ["rushhour"]


@pytest.mark.parametrize("name", ["all-gpu-down", "gpu-throttle"])
@pytest.mark.slow
def test_chaos_validate_command_accepts_an_experiment(name: str, tmp_path: Path) -> None:
    chaos = Path(sys.executable).parent / "chaos"
    result = subprocess.run(
        [str(chaos), "--no-version-check", "--no-log-file", "validate", str(EXPERIMENTS / f"{name}.json")],
        env={"PATH": "/usr/bin:/bin", "RUSHHOUR_ADMIN_TOKEN": "x"},
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "look valid" in result.stdout + result.stderr
