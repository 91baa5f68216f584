"""The Kubernetes manifests hold together: the gateway's config validates and names the pools'
headless Services, every pool runs a `rushhour node` command line the CLI accepts, the gateway may
watch Endpoints, and the Locust workers find the master's Service. (Each object is checked against
the official client's models in tests/experiments/test_kubernetes.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from rushhour.reference_server.config import ServerConfig, load_config
from rushhour.scenarios.cli.node import node as node_command
from rushhour.scenarios.cli.serve import serve as serve_command
from tests.support.manifests import container, documents, manifest, pool_argv


def _gateway_config(tmp_path: Path) -> ServerConfig:
    path = tmp_path / "server.yaml"
    path.write_text(manifest("ConfigMap", "rushhour-server-config")["data"]["server.yaml"])
    return load_config(path)


def _parse(command: click.Command, argv: list[str]) -> dict[str, Any]:
    return dict(command.make_context(argv[1], argv[2:]).params)


@pytest.mark.slow
def test_k8s_gateway_config_points_every_pool_at_a_headless_service(tmp_path: Path) -> None:
    config = _gateway_config(tmp_path)
    for name, pool in config.pools.items():
        assert pool.kubernetes is not None, f"pool {name} is not found through the Kubernetes API"
        service = manifest("Service", pool.kubernetes.service)
        assert service["spec"]["clusterIP"] == "None"
        assert pool.kubernetes.port in {p["name"] for p in service["spec"]["ports"]}
        pod = manifest("Deployment", f"rushhour-{name}")["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= pod.items()


def test_k8s_gateway_runs_serve_with_the_mounted_config() -> None:
    gateway = container("Deployment", "rushhour-gateway")
    params = _parse(serve_command, gateway["args"])
    mount = next(m for m in gateway["volumeMounts"] if m["name"] == "config")["mountPath"]
    assert params["config_path"] == Path(mount) / "server.yaml" and params["host"] == "0.0.0.0"
    env = [e["name"] for e in gateway["env"]]
    assert env.index("RUSHHOUR_REDIS_PASSWORD") < env.index("RUSHHOUR_REDIS_URL"), "$(...) expands earlier names only"
    assert {"name": "RUSHHOUR_REDIS_URL", "value": "redis://:$(RUSHHOUR_REDIS_PASSWORD)@rushhour-redis:6379/0"} in gateway["env"]


@pytest.mark.parametrize("pool", ["quality", "fast"])
def test_k8s_pool_runs_rushhour_node_for_its_tier(tmp_path: Path, pool: str) -> None:
    argv = pool_argv(pool)
    params = _parse(node_command, argv)
    assert argv[:2] == ["rushhour", "node"]
    assert params["tier"] == _gateway_config(tmp_path).pools[pool].model
    assert (params["host"], params["port"]) == ("0.0.0.0", 9000)
    pod = container("Deployment", f"rushhour-{pool}")
    assert pod["ports"] == [{"name": "http", "containerPort": 9000}]
    assert pod["readinessProbe"]["httpGet"]["path"] == "/readyz" and pod["livenessProbe"]["httpGet"]["path"] == "/healthz"


def test_k8s_gateway_may_watch_endpoints_and_nothing_more() -> None:
    account = manifest("Deployment", "rushhour-gateway")["spec"]["template"]["spec"]["serviceAccountName"]
    binding = manifest("RoleBinding", "rushhour-gateway-endpoints")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": "rushhour"}]
    role = manifest("Role", binding["roleRef"]["name"])
    assert role["rules"] == [{"apiGroups": [""], "resources": ["endpoints"], "verbs": ["get", "list", "watch"]}]


@pytest.mark.slow
def test_k8s_locust_workers_join_the_master_service() -> None:
    """The CLI of Locust across hosts: `rushhour run ... --workers N --master-bind HOST:PORT` and
    `rushhour worker --master HOST:PORT`, both parsed by the real commands."""
    from rushhour.scenarios.cli.run import run as run_command
    from rushhour.scenarios.cli.worker import worker as worker_command

    master = container("Job", "rushhour-drill")["args"]
    params = _parse(run_command, master)
    assert params["allow_remote"] and params["workers"] == 2
    worker_args = container("Deployment", "rushhour-locust-worker")["args"]
    assert _parse(worker_command, worker_args)["master"] == "rushhour-locust-master:5557"
    workers = int(master[master.index("--workers") + 1])
    bind_port = master[master.index("--master-bind") + 1].rsplit(":", 1)[1]
    service = manifest("Service", "rushhour-locust-master")
    job_labels = manifest("Job", "rushhour-drill")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= job_labels.items()
    deployment = manifest("Deployment", "rushhour-locust-worker")
    assert deployment["spec"]["replicas"] == workers
    assert container("Deployment", "rushhour-locust-worker")["args"] == [
        "rushhour", "worker", "--master", f"rushhour-locust-master:{service['spec']['ports'][0]['port']}",
        "--allow-remote"]
    assert str(service["spec"]["ports"][0]["port"]) == bind_port


def test_k8s_every_object_lives_in_the_rushhour_namespace() -> None:
    for doc in documents():
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "rushhour", doc["metadata"]["name"]
    assert yaml.safe_load(manifest("ConfigMap", "rushhour-server-config")["data"]["server.yaml"])["pools"]


@pytest.mark.parametrize("pool", ["quality", "fast"])
def test_k8s_pool_batches_as_the_default_config_does(pool: str) -> None:
    params = _parse(node_command, pool_argv(pool))
    default = ServerConfig().pools[pool]
    assert params["batching"] == default.batching
    if default.batching == "continuous":
        assert params["max_prefill_tokens"] == default.max_prefill_tokens


def _secret_ref(kind: str, name: str, variable: str) -> dict[str, str]:
    env = {e["name"]: e for e in container(kind, name).get("env", [])}
    return dict(env[variable]["valueFrom"]["secretKeyRef"])


def _ingress_sources(policy: str) -> tuple[dict[str, str], list[Any], list[int]]:
    spec = manifest("NetworkPolicy", policy)["spec"]
    [rule] = spec["ingress"]
    assert spec["policyTypes"] == ["Ingress"]
    return spec["podSelector"]["matchLabels"], rule.get("from", []), [p["port"] for p in rule["ports"]]


def test_k8s_nodes_and_redis_answer_the_gateway_only_and_the_gateway_its_http_port_only() -> None:
    gateway_labels = manifest("Deployment", "rushhour-gateway")["spec"]["template"]["metadata"]["labels"]
    for policy, workload, port in (("rushhour-nodes", "rushhour-quality", 9000), ("rushhour-nodes", "rushhour-fast", 9000),
                                   ("rushhour-redis", "rushhour-redis", 6379)):
        selected, sources, ports = _ingress_sources(policy)
        assert selected.items() <= manifest("Deployment", workload)["spec"]["template"]["metadata"]["labels"].items()
        assert [s["podSelector"]["matchLabels"] for s in sources] == [{"app.kubernetes.io/name": "rushhour-gateway"}]
        assert sources[0]["podSelector"]["matchLabels"].items() <= gateway_labels.items() and ports == [port]
    selected, sources, ports = _ingress_sources("rushhour-gateway")
    assert selected.items() <= gateway_labels.items() and sources == [] and ports == [8000]


def test_k8s_redis_needs_the_password_the_gateway_reads_from_the_same_secret() -> None:
    redis = container("Deployment", "rushhour-redis")
    assert redis["args"][-2:] == ["--requirepass", "$(REDIS_PASSWORD)"]
    assert _secret_ref("Deployment", "rushhour-redis", "REDIS_PASSWORD") == {"name": "rushhour-redis", "key": "password"}
    assert _secret_ref("Deployment", "rushhour-gateway", "RUSHHOUR_REDIS_PASSWORD") == {
        "name": "rushhour-redis", "key": "password"}
    assert "REPLACE-ME" in manifest("Secret", "rushhour-redis")["stringData"]["password"]


def test_k8s_gateway_and_nodes_share_the_node_token_from_one_secret() -> None:
    expected = {"name": "rushhour-node-token", "key": "token"}
    assert _secret_ref("Deployment", "rushhour-gateway", "RUSHHOUR_NODE_TOKEN") == expected
    for pool in ("quality", "fast"):
        assert _secret_ref("Deployment", f"rushhour-{pool}", "RUSHHOUR_NODE_TOKEN") == expected
    assert "token" in manifest("Secret", "rushhour-node-token")["stringData"]
