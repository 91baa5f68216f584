"""A relative `KUBECONFIG` in a chaos entry's `env:` names a file beside the experiment, where
`chaos run` runs it: the leak audit asks the cluster that file names, from whatever folder the
harness runs in; an absolute one is kept as written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rushhour.scenarios.run.audit.scope import leak_scope
from rushhour.scenarios.spec.chaos import PlannedFault

EXPERIMENT = Path(__file__).resolve().parents[4] / "experiments" / "kubernetes" / "workload-scale-down.json"
WORKLOAD = {"RUSHHOUR_K8S_NAMESPACE": "team", "RUSHHOUR_K8S_SELECTOR": "app=api"}


def _kubeconfig(env: dict[str, str]) -> str:
    fault = PlannedFault(name="scale-down", experiment=EXPERIMENT, scenario_time="20:00:00", offset_s=0.0,
                         targets=[], env={**WORKLOAD, **env})
    (scope,) = leak_scope([fault], environ={}).kubernetes
    return dict(scope.secrets)["KUBECONFIG"]


def test_a_relative_kubeconfig_is_read_from_the_experiments_folder(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the harness runs elsewhere than the experiment
    assert _kubeconfig({"KUBECONFIG": "staging.kubeconfig"}) == str(EXPERIMENT.parent / "staging.kubeconfig")
    listed = _kubeconfig({"KUBECONFIG": os.pathsep.join(["a.yaml", "/etc/rushhour/b.yaml"])})
    assert listed == os.pathsep.join([str(EXPERIMENT.parent / "a.yaml"), "/etc/rushhour/b.yaml"])
    assert _kubeconfig({"KUBECONFIG": "/etc/team.conf"}) == "/etc/team.conf"
