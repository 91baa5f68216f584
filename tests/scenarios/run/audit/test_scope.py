"""The leak audit's scope: each experiment resolved as `chaos run` resolves it (configuration with the
chaos entry's env, `${key}` substituted, an action's own defaults), namespaces with their credentials."""

from __future__ import annotations

import json
from pathlib import Path

from rushhour.scenarios.run.audit.scope import KubeScope, leak_scope
from rushhour.scenarios.spec.chaos import PlannedFault

EXPERIMENTS = Path(__file__).resolve().parents[4] / "experiments"
WORKLOAD = {"RUSHHOUR_K8S_NAMESPACE": "team", "RUSHHOUR_K8S_SELECTOR": "app=api"}


def _fault(path: Path, env: dict[str, str] | None = None) -> PlannedFault:
    return PlannedFault(name=path.stem, experiment=path, scenario_time="20:00:00", offset_s=0.0, targets=[],
                        env=env or {})


def test_a_workload_experiment_names_the_users_namespace_and_the_credentials_it_used() -> None:
    faults = [_fault(EXPERIMENTS / "kubernetes" / f"workload-{name}.json", {**WORKLOAD, "KUBERNETES_CONTEXT": "prod"})
              for name in ("scale-down", "partition", "drain")]
    scope = leak_scope(faults, environ={"HOME": "/nowhere"})
    assert scope.kubernetes == (KubeScope("team", (("KUBERNETES_CONTEXT", "prod"),)),)
    assert scope.namespaces == ("team",) and scope.redis_ports == ()


def test_the_namespace_comes_from_the_environment_when_the_entry_does_not_set_it() -> None:
    scope = leak_scope([_fault(EXPERIMENTS / "kubernetes" / "workload-scale-down.json")],
                       environ={**WORKLOAD, "RUSHHOUR_K8S_NAMESPACE": "from-env"})
    assert scope.namespaces == ("from-env",) and scope.kubernetes[0].secrets == ()


def test_an_experiment_chaos_toolkit_would_refuse_touched_nothing() -> None:
    """RUSHHOUR_K8S_SELECTOR has no default: without it `chaos run` stops before any activity."""
    scope = leak_scope([_fault(EXPERIMENTS / "kubernetes" / "workload-scale-down.json",
                               {"RUSHHOUR_K8S_NAMESPACE": "team"})], environ={})
    assert scope.kubernetes == ()


def test_substitution_inside_a_string_and_an_actions_own_default_namespace(tmp_path: Path) -> None:
    def provider(func: str, args: dict[str, str]) -> dict:
        return {"type": "action", "name": func, "provider": {
            "type": "python", "module": "rushhour.experiments.kubernetes.workload", "func": func, "arguments": args,
            "secrets": ["k8s"]}}

    experiment = {
        "title": "t", "description": "d",
        "configuration": {"team": {"type": "env", "key": "TEAM", "default": "a"}, "literal": "blue"},
        "secrets": {"k8s": {"KUBERNETES_HOST": "https://127.0.0.1:6443", "other": "x"}},
        "method": [provider("scale_workload", {"label_selector": "app=api", "ns": "team-${team}-${literal}"}),
                   provider("kill_workload_pods", {"label_selector": "app=api"})],
    }
    path = tmp_path / "custom.json"
    path.write_text(json.dumps(experiment))
    scope = leak_scope([_fault(path, {"TEAM": "b", "KUBECONFIG": "/etc/team.conf"})], environ={})
    credentials = (("KUBECONFIG", "/etc/team.conf"), ("KUBERNETES_HOST", "https://127.0.0.1:6443"))
    assert scope.kubernetes == (KubeScope("default", credentials), KubeScope("team-b-blue", credentials))
