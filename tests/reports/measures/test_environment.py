"""describe_environment: the run's facts, including how each pool of the server batched."""

from __future__ import annotations

import pandas as pd

from rushhour.reports.measures.environment import describe_environment


def _metrics(batching: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"t_s": [1.0, 1.0, 2.0, 2.0], "pool": ["quality", "fast"] * 2,
                         "provider": ["CPUExecutionProvider"] * 4, "batching": batching})


def test_environment_states_the_batching_mode_of_each_pool() -> None:
    metrics = _metrics(["", "dynamic", "continuous, chunked prefill 32 tokens/step", "dynamic"])
    env = describe_environment({"env": {"python": "3.11"}}, metrics, 7)
    assert env["batching"] == "fast: dynamic; quality: continuous, chunked prefill 32 tokens/step"
    assert env["execution_provider"] == "CPUExecutionProvider" and env["seed"] == 7


def test_environment_batching_unknown_when_the_server_did_not_say() -> None:
    assert describe_environment(None, _metrics([""] * 4), None)["batching"] == "unknown"
    assert describe_environment(None, _metrics([""] * 4).drop(columns="batching"), None)["batching"] == "unknown"
    assert describe_environment(None, None, None)["batching"] == "unknown"


def test_environment_states_the_fault_lease_the_drill_used() -> None:
    assert describe_environment({"fault_lease_s": 20.0}, None, None)["fault_lease_s"] == 20.0
    assert describe_environment(None, None, None)["fault_lease_s"] == "unknown"
