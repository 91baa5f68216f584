"""The reference server's Kubernetes manifests as data: every document, and the command line a
pool Deployment runs, turned into one that listens on a loopback port of this machine."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

MANIFESTS = Path(__file__).resolve().parents[2] / "reference_server" / "k8s"
POD_PORT = "9000"

__all__ = ["MANIFESTS", "container", "documents", "loopback_node_argv", "manifest", "pool_argv"]


def documents() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(MANIFESTS.rglob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def manifest(kind: str, name: str) -> dict[str, Any]:
    return next(d for d in documents() if d["kind"] == kind and d["metadata"]["name"] == name)


def container(kind: str, name: str) -> dict[str, Any]:
    spec = manifest(kind, name)["spec"]["template"]["spec"]
    return dict(spec["containers"][0])


def pool_argv(pool: str) -> list[str]:
    """The pool Deployment's command line, as written in its manifest."""
    return list(container("Deployment", f"rushhour-{pool}")["args"])


def loopback_node_argv(pool: str, port: int) -> list[str]:
    """The manifest's command line with only the address changed: 127.0.0.1 and `port` for the
    pod's 0.0.0.0:9000, and `rushhour` the console script of this interpreter's environment."""
    argv = pool_argv(pool)
    if argv[:2] != ["rushhour", "node"]:
        raise AssertionError(f"the {pool} pool does not run `rushhour node`: {argv}")
    argv[argv.index("--host") + 1] = "127.0.0.1"
    port_at = argv.index("--port") + 1
    if argv[port_at] != POD_PORT:
        raise AssertionError(f"the {pool} pool listens on {argv[port_at]}, not {POD_PORT}")
    argv[port_at] = str(port)
    argv[0] = str(Path(sys.executable).parent / "rushhour")
    return argv
