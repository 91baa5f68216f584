"""Separate test hosts on one machine: network namespaces joined by veth pairs, made and removed here.

One namespace plays the master's host (the drill, the Locust master and the target), one more per
worker. Each worker host has its own link to the master host (10.77.<i>.2 <-> 10.77.<i>.1) and a
default route through it, so every worker reaches the master and the target at 10.77.1.1. The
10.77.0.0/16 addresses exist only inside these namespaces; nothing leaves them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rushhour.kernel.processes import stop_process

ROOT = Path(__file__).resolve().parents[3]
MASTER_ADDRESS = "10.77.1.1"


class NamespaceUnavailable(RuntimeError):
    """This machine cannot make network namespaces for us (not root, no `ip`, no privilege)."""


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10, check=False)
    if done.returncode:
        raise NamespaceUnavailable(f"`ip {' '.join(args)}` failed: {done.stderr.strip()}")


@dataclass
class NetnsHosts:
    """The master's namespace and the workers' namespaces, with the processes started in them."""

    master: str
    workers: list[str]
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def worker_address(self, index: int) -> str:
        return f"10.77.{index + 1}.2"

    def start(self, namespace: str, argv: list[str], log: Path) -> subprocess.Popen[bytes]:
        """Run `argv` inside `namespace` (`ip netns exec` execs it: the PID is the command's own)."""
        with log.open("ab") as out:
            proc = subprocess.Popen(["ip", "netns", "exec", namespace, *argv], cwd=ROOT, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.procs.append(proc)
        return proc

    def run(self, namespace: str, argv: list[str], *, timeout_s: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ip", "netns", "exec", namespace, *argv], cwd=ROOT, capture_output=True,
                              text=True, timeout=timeout_s, check=False)

    def close(self) -> None:
        for proc in reversed(self.procs):
            stop_process(proc, grace_s=10.0)
        for namespace in [self.master, *self.workers]:
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True, timeout=10, check=False)


def make_hosts(workers: int) -> NetnsHosts:
    """Create the namespaces and links; raises NamespaceUnavailable (after cleaning up) if it cannot."""
    if os.geteuid() != 0:
        raise NamespaceUnavailable("network namespaces need root; this test runs as an ordinary user.")
    if shutil.which("ip") is None:
        raise NamespaceUnavailable("the `ip` command (iproute2) is not installed.")
    tag = f"rh{os.getpid()}"
    hosts = NetnsHosts(master=f"{tag}m", workers=[f"{tag}w{i}" for i in range(workers)])
    try:
        for namespace in [hosts.master, *hosts.workers]:
            _ip("netns", "add", namespace)
            _ip("-n", namespace, "link", "set", "lo", "up")
        for i, namespace in enumerate(hosts.workers):
            _link(hosts.master, namespace, i + 1)
    except NamespaceUnavailable:
        hosts.close()
        raise
    return hosts


def _link(master: str, worker: str, net: int) -> None:
    _ip("link", "add", f"vm{net}", "netns", master, "type", "veth", "peer", "name", "eth0", "netns", worker)
    _ip("-n", master, "addr", "add", f"10.77.{net}.1/24", "dev", f"vm{net}")
    _ip("-n", master, "link", "set", f"vm{net}", "up")
    _ip("-n", worker, "addr", "add", f"10.77.{net}.2/24", "dev", "eth0")
    _ip("-n", worker, "link", "set", "eth0", "up")
    _ip("-n", worker, "route", "add", "default", "via", f"10.77.{net}.1")


def rushhour(*args: str) -> list[str]:
    return [sys.executable, "-m", "rushhour.scenarios.cli.main", *args]
