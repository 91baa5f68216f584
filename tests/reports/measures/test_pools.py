"""Healthy nodes per pool and what a pool had left (reports/measures/pools.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rushhour.reports.measures.pools import healthy_nodes, pool_low


def _metrics() -> pd.DataFrame:
    t = np.arange(20.0)
    ready = np.where((t >= 5) & (t < 12), 1, 2)
    broken = ((t >= 10) & (t < 14)).astype(int)
    return pd.concat([pd.DataFrame({"t_s": t, "pool": "quality", "nodes_ready": ready, "breakers_open": broken}),
                      pd.DataFrame({"t_s": t, "pool": "fast", "nodes_ready": 1, "breakers_open": 0})])


def test_healthy_nodes_are_ready_with_breaker_closed() -> None:
    healthy = healthy_nodes(_metrics())
    assert healthy.loc[[0.0, 5.0, 10.0, 12.0, 14.0], "quality"].tolist() == [2, 1, 0, 1, 2]
    assert (healthy["fast"] == 1).all()


def test_pool_low_reports_only_pools_that_lost_nodes() -> None:
    [row] = pool_low(healthy_nodes(_metrics()), 5.0, 14.0)
    assert row == {"pool": "quality", "full": 2, "lowest": 0, "low_s": 2.0, "low_from_s": 10.0, "low_to_s": 12.0}


def test_healthy_nodes_without_metrics_or_readiness() -> None:
    assert healthy_nodes(None).empty
    alive = pd.DataFrame({"t_s": [0.0, 1.0], "pool": "quality", "nodes_alive": [2, 1]})
    assert healthy_nodes(alive)["quality"].tolist() == [2, 1]
