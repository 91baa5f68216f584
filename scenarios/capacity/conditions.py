"""The conditions a capacity is measured under: healthy, one quality node held down, or any
Chaos Toolkit experiment held for the whole search.

A condition is held from before the first step to after the last (`hold`, `check` before every
step, `release`), so every step of one search sees the same service. N-1 kills one node of the
quality pool with the supervisor's restart switched off for a short lease (`POST
/admin/nodes/{id}/kill` `{"restart": false, "ttl_s": 20}`), renews the lease every few seconds
while the search runs (`POST /admin/nodes/{id}/lease`) and brings the node back warm at the end;
a search killed outright stops renewing, and the gateway brings the node back within the lease.
An experiment is run with its hold as long as the search may take and interrupted at the end,
which plays its rollbacks.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

import httpx

from rushhour.experiments.leases import default_lease_s, hold_lease
from rushhour.experiments.leases import release as release_lease
from rushhour.scenarios.capacity.pool_status import fetch_status
from rushhour.scenarios.protocols.admission import admitted_client

if TYPE_CHECKING:
    from rushhour.scenarios.run.chaos.process import ChaosProcess

__all__ = ["Condition", "ConditionError", "ExperimentHeld", "Healthy", "NMinusOne", "parse_conditions"]

N_MINUS_ONE: Final = "n-1"
HEALTHY: Final = "none"
READY_WAIT_S = 120.0
EXPERIMENT_HOLD_S = 3600.0
EXPERIMENT_SETTLE_S = 5.0
HELD_FOR_S = 7 * 24 * 3600.0
"""N-1's renewals go on until `release` (or the process dies): a search has no fixed length."""


class ConditionError(RuntimeError):
    """A condition could not be set up or held; the message says which and why."""


class Condition(Protocol):
    name: str

    def hold(self) -> None: ...

    def check(self) -> None: ...

    def release(self) -> None: ...


@dataclass
class Healthy:
    """No fault at all."""

    name: str = HEALTHY

    def hold(self) -> None:
        return None

    def check(self) -> None:
        return None

    def release(self) -> None:
        return None


def _admin(url: str, token: str | None, path: str, body: dict[str, object] | None = None) -> httpx.Response:
    if not token:
        raise ConditionError("Holding a node down needs the admin token: set RUSHHOUR_ADMIN_TOKEN for a --target.")
    try:
        with admitted_client(timeout=30.0) as client:
            return client.post(f"{url}{path}", json=body, headers={"Authorization": f"Bearer {token}"})
    except httpx.HTTPError as exc:
        raise ConditionError(f"The admin call POST {path} failed: {exc}.") from exc


@dataclass
class NMinusOne:
    """One node of `pool` killed and kept down (supervisor restart disabled) for the whole search."""

    url: str
    token: str | None
    pool: str = "quality"
    name: str = N_MINUS_ONE
    wait_ready: bool = True
    """Whether `release` waits for the node to be ready again (not when the server stops next)."""
    node_id: str | None = field(default=None, init=False)

    def hold(self) -> None:
        status = self._status()
        nodes = [n for n in status.get("nodes") or [] if n.get("pool") == self.pool and n.get("state") != "down"]
        if len(nodes) < 2:
            raise ConditionError(f'N-1 needs at least two nodes in the "{self.pool}" pool; the target has '
                                 f"{len(nodes)}, and N-1 of them would be no pool at all.")
        self.node_id = str(min(nodes, key=lambda n: str(n.get("id")))["id"])
        self._kill()

    def _status(self) -> dict:
        with admitted_client(timeout=5.0) as client:
            status = fetch_status(client, self.url)
        if status is None:
            raise ConditionError(f"N-1 reads the pools from {self.url}/v1/status, and that did not answer.")
        return status

    @property
    def _lease_key(self) -> str:
        return f"{self.url}|{self.node_id}"

    def _kill(self) -> None:
        lease = default_lease_s()
        response = _admin(self.url, self.token, f"/admin/nodes/{self.node_id}/kill", {"restart": False, "ttl_s": lease})
        if response.status_code == 422:
            raise ConditionError("The target's admin API does not know the kill options {\"restart\": false, "
                                 "\"ttl_s\"}; it is an older reference server, which would restart the node at once.")
        if response.status_code != 200:
            raise ConditionError(f'Killing node "{self.node_id}" answered HTTP {response.status_code}: '
                                 f"{response.text[:200]}")
        hold_lease(self._lease_key, self._renew, lease, HELD_FOR_S)

    def _renew(self, seconds: float) -> bool:
        response = _admin(self.url, self.token, f"/admin/nodes/{self.node_id}/lease", {"ttl_s": seconds})
        return response.status_code == 200 and bool(response.json().get("held"))

    def check(self) -> None:
        """Before every step: the node must still be down (killed again if anything revived it)."""
        node = next((n for n in self._status().get("nodes") or [] if n.get("id") == self.node_id), None)
        if node is not None and node.get("state") != "down":
            self._kill()

    def release(self) -> None:
        if self.node_id is None:
            return
        release_lease(self._lease_key)
        _admin(self.url, self.token, f"/admin/nodes/{self.node_id}/restart", {"warm": True})
        give_up = time.monotonic() + (READY_WAIT_S if self.wait_ready else 0.0)
        while time.monotonic() < give_up:
            node: dict[str, Any] = next(
                (n for n in self._status().get("nodes") or [] if n.get("id") == self.node_id), {})
            if node.get("state") == "ready":
                return
            time.sleep(0.25)


@dataclass
class ExperimentHeld:
    """A Chaos Toolkit experiment whose fault is held for the whole search, rolled back after."""

    experiment: Path
    url: str
    token: str | None
    out_dir: Path
    name: str = ""
    _process: ChaosProcess | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.name = self.name or self.experiment.stem

    def hold(self) -> None:
        from rushhour.scenarios.run.chaos.process import ChaosProcess

        env = {"RUSHHOUR_URL": self.url, "RUSHHOUR_FAULT_HOLD_S": str(EXPERIMENT_HOLD_S)}
        token = self.token or os.environ.get("RUSHHOUR_ADMIN_TOKEN")
        if token:
            env["RUSHHOUR_ADMIN_TOKEN"] = token
        process = ChaosProcess(name=self.name, experiment=self.experiment, out_dir=self.out_dir, env=env,
                               hypothesis="after-method-only")
        process.launch()
        self._process = process
        time.sleep(EXPERIMENT_SETTLE_S)
        if not process.running:
            raise ConditionError(f'The experiment "{self.experiment}" ended before the search began; '
                                 f"see {process.log_path}.")

    def check(self) -> None:
        process = self._process
        if process is not None and not process.running:
            raise ConditionError(f'The experiment "{self.experiment}" stopped holding its fault mid-search.')

    def release(self) -> None:
        from rushhour.scenarios.run.chaos.process import ChaosProcess

        process = self._process
        if isinstance(process, ChaosProcess):
            process.interrupt()
            if process.wait(timeout_s=60.0) is None:
                process.kill()


def parse_conditions(text: str) -> list[str]:
    """ "none,n-1" -> ["none", "n-1"]; an experiment path stays as written; order kept, no repeats."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError(f'--faults "{text}" names no condition; use none, n-1 or an experiment file.')
    return list(dict.fromkeys(names))
