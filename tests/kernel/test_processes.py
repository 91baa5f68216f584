"""A child gets none of rushhour's secrets unless it is named as their user."""

from __future__ import annotations

from rushhour.kernel.processes import child_env

PARENT = {"PATH": "/usr/bin", "RUSHHOUR_CLUSTER_SECRET": "cluster-secret-0123456789", "RUSHHOUR_ADMIN_TOKEN": "tok",
          "RUSHHOUR_LEASE_DIR": "/run/user/1/leases"}


def test_child_env_takes_the_secrets_out_and_hands_back_only_what_is_named() -> None:
    assert child_env(PARENT) == {"PATH": "/usr/bin", "RUSHHOUR_LEASE_DIR": "/run/user/1/leases"}
    assert child_env(PARENT, keep=["RUSHHOUR_ADMIN_TOKEN"])["RUSHHOUR_ADMIN_TOKEN"] == "tok"
    assert "RUSHHOUR_CLUSTER_SECRET" not in child_env(PARENT, keep=["RUSHHOUR_ADMIN_TOKEN"])
    assert child_env(PARENT, extra={"RUSHHOUR_ADMIN_TOKEN": "given"})["RUSHHOUR_ADMIN_TOKEN"] == "given"
