"""The closed-loop shape: users follow the schedule's arrival rate."""

from __future__ import annotations

import numpy as np

from scenarios.load.closed import users_curve


def test_users_curve_follows_rate_in_bins() -> None:
    offsets = np.concatenate([np.arange(20) / 2, 10 + np.arange(100) / 10])  # 2/s then 10/s
    users = users_curve(offsets, 20.0, pacing_s=1.0, bin_s=5.0)
    assert len(users) == 20
    assert (users[:10] == 2).all() and (users[10:] == 10).all()


def test_users_curve_has_a_floor() -> None:
    assert (users_curve(np.array([0.1]), 10.0, minimum=2) >= 2).all()
