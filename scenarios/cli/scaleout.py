"""The checks shared by both ends of a drill across hosts: where the master listens, the secret.

A master reachable beyond loopback without the cluster secret would let anyone on the network
join the drill and write its results, so it is refused (exit 2) with how to give a secret; on
loopback a secret is optional (only this machine can reach the port).
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

from rushhour.kernel.loopback import is_loopback_host
from rushhour.scenarios.cli.errors import BadInput
from rushhour.scenarios.generator.clusterauth import SECRET_ENV, SecretError, read_secret

__all__ = ["cluster_secret", "master_settings", "parse_host_port"]

PORT = re.compile(r"[0-9]{1,5}")
HOSTNAME = re.compile(r"(?=.{1,253}$)(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*"
                      r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?")


def parse_host_port(value: str, option: str) -> tuple[str, int]:
    """"HOST:PORT" (or "[v6]:PORT") as a pair; exit 2 naming the option and what is wrong otherwise."""
    why = _host_port_problem(value)
    if why is not None:
        raise BadInput(f'{option}: "{value}" is not HOST:PORT (e.g. 10.0.0.5:5557 or [::1]:5557): {why}.')
    host, _, port = value.rpartition(":")
    return host.strip("[]"), int(port)


def _host_port_problem(value: str) -> str | None:
    """Why `value` is no HOST:PORT (None: it is one)."""
    if "://" in value:
        return "give the address without a scheme"
    host, sep, port = value.rpartition(":")
    if not sep:
        return "it has no :PORT"
    if not host:
        return "it names no host"
    if not PORT.fullmatch(port) or not 0 < int(port) < 65536:
        return f'the port "{port}" is not a number from 1 to 65535'
    if host.startswith("[") and host.endswith("]"):
        return None if _is_ip(host[1:-1], version=6) else f'"{host[1:-1]}" is not an IPv6 address'
    if ":" in host:
        return "an IPv6 address goes in brackets, and only one port may follow the host"
    if HOSTNAME.fullmatch(host) is None:
        return f'the host "{host}" is neither an IP address nor a hostname'
    if all(label.isdigit() for label in host.rstrip(".").split(".")) and not _is_ip(host, version=4):
        return f'the host "{host}" is not an IPv4 address'
    return None


def _is_ip(host: str, *, version: int) -> bool:
    try:
        return ipaddress.ip_address(host).version == version
    except ValueError:
        return False


def cluster_secret(secret_file: Path | None) -> str | None:
    """The secret from --secret-file or RUSHHOUR_CLUSTER_SECRET (exit 2 when unusable)."""
    try:
        return read_secret(secret_file)
    except SecretError as exc:
        raise BadInput(str(exc)) from exc


def master_settings(master_bind: str, secret_file: Path | None) -> dict[str, object]:
    """`master_bind` and `cluster_secret` for the Drill; a bind beyond loopback needs the secret."""
    bind = parse_host_port(master_bind, "--master-bind")
    secret = cluster_secret(secret_file)
    if secret is None and not is_loopback_host(bind[0]):
        raise BadInput(f'--master-bind: "{master_bind}" listens beyond this machine, so the workers must prove a '
                       f"shared secret: set {SECRET_ENV} or pass --secret-file FILE (on the master and every "
                       "worker), e.g. a file holding `python -c 'import secrets; print(secrets.token_urlsafe(32))'`.")
    return {"master_bind": bind, "cluster_secret": secret}
