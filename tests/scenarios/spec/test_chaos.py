"""Planning a chaos section: which experiments drive the reference server's admin API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rushhour.scenarios.spec.chaos import drives_admin_api

EXPERIMENTS = Path(__file__).resolve().parents[3] / "experiments"


@pytest.mark.parametrize("name", ["gpu-node-loss", "network-partition", "redis-down", "cache-flush"])
def test_chaos_reference_server_experiments_drive_its_admin_api(name: str) -> None:
    assert drives_admin_api(json.loads((EXPERIMENTS / f"{name}.json").read_text()))


@pytest.mark.parametrize("name", ["service-pause", "service-kill", "service-network-latency", "service-network-blackhole",
                                  "service-proxy-latency", "service-proxy-errors", "service-proxy-blackhole"])
def test_chaos_experiments_on_a_users_own_service_need_no_admin_api(name: str) -> None:
    assert not drives_admin_api(json.loads((EXPERIMENTS / f"{name}.json").read_text()))


def test_chaos_a_process_provider_counts_as_driving_the_admin_api() -> None:
    experiment = {"method": [{"type": "action", "name": "x", "provider": {"type": "process", "path": "curl"}}]}
    assert drives_admin_api(experiment)
