"""The checks shared by both ends of a drill across hosts: where the master listens, the secret.

A master reachable beyond loopback without the cluster secret would let anyone on the network
join the drill and write its results, so it is refused (exit 2) with how to give a secret; on
loopback a secret is optional (only this machine can reach the port).
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from scenarios.cli.errors import BadInput
from scenarios.load.clusterauth import SECRET_ENV, SecretError, read_secret

__all__ = ["cluster_secret", "master_settings", "parse_host_port"]


def parse_host_port(value: str, option: str) -> tuple[str, int]:
    """"HOST:PORT" (or "[v6]:PORT") as a pair; exit 2 naming the option otherwise."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise BadInput(f'{option}: "{value}" is not HOST:PORT (e.g. 10.0.0.5:5557).')
    return host, int(port)


def cluster_secret(secret_file: Path | None) -> str | None:
    """The secret from --secret-file or RUSHHOUR_CLUSTER_SECRET (exit 2 when unusable)."""
    try:
        return read_secret(secret_file)
    except SecretError as exc:
        raise BadInput(str(exc)) from exc


def is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def master_settings(master_bind: str, secret_file: Path | None) -> dict[str, object]:
    """`master_bind` and `cluster_secret` for the Drill; a bind beyond loopback needs the secret."""
    bind = parse_host_port(master_bind, "--master-bind")
    secret = cluster_secret(secret_file)
    if secret is None and not is_loopback_host(bind[0]):
        raise BadInput(f'--master-bind: "{master_bind}" listens beyond this machine, so the workers must prove a '
                       f"shared secret: set {SECRET_ENV} or pass --secret-file FILE (on the master and every "
                       "worker), e.g. a file holding `python -c 'import secrets; print(secrets.token_urlsafe(32))'`.")
    return {"master_bind": bind, "cluster_secret": secret}
