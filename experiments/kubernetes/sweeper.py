"""`python -m rushhour.experiments.kubernetes.sweeper NAMESPACE...`: one sweep of rushhour's expired
Kubernetes faults, run inside the cluster.

Kubernetes cannot time out a cordon or a scale-down by itself, and the lease keeper that undoes
them lives on the harness's host, so a lost host (a cancelled CI job, a closed laptop) would leave
them in place. The CronJob of `experiments/kubernetes/sweeper.yaml` runs this every minute in the
cluster: it uncordons the nodes and scales back the Deployments rushhour marked whose lease has
passed, deletes expired partition policies, and deletes the lease Jobs whose deadline has passed
(a cluster's TTL controller normally does, taking the policy with it; where it does not run or
lags, the sweeper's delete has the garbage collector remove the policy each Job owns). It touches
nothing without rushhour's mark. One line of JSON per object of rushhour's found; exit 1 when the
API could not be read for a namespace (the next run tries again).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from rushhour.experiments.kubernetes.leases import sweep

__all__ = ["main", "sweep_namespaces"]


def sweep_namespaces(namespaces: Sequence[str], sweeper: Callable[[str], list[dict[str, Any]]] = sweep) -> int:
    """Sweep each namespace; print what was found; 1 if any namespace could not be swept."""
    failed = 0
    for ns in namespaces:
        try:
            found = sweeper(ns)
        except Exception as exc:  # noqa: BLE001 - one namespace's failure must not stop the others
            print(f"rushhour sweeper: namespace {ns} not swept: {type(exc).__name__}: {exc}", file=sys.stderr)
            failed = 1
            continue
        for item in found:
            print(json.dumps({"namespace": ns, **item}), flush=True)
    return failed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rushhour.experiments.kubernetes.sweeper",
                                     description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("namespaces", nargs="+", metavar="NAMESPACE", help="a namespace rushhour's faults act in")
    args = parser.parse_args(argv)
    return sweep_namespaces(args.namespaces)


if __name__ == "__main__":
    raise SystemExit(main())
