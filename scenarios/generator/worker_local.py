"""What a remote worker decides for itself, whatever its master says.

A master may be misconfigured or not the operator's at all, so a `rushhour worker` takes the
target's credential, its CA bundle and the set of targets it may load only from its own flags and
environment (`rushhour worker --auth-env/--auth-file/--ca-bundle/--allow-remote/--allowed-host/
--allow-target`), and applies the loopback guard itself. From the master it takes the schedule
share and settings that cannot name a local file: `auth` and `ca_bundle` in the master's target
are dropped. A worker that holds a credential sends it only to a host on its own machine or one
it pinned (`--allow-target HOST`, or `--allowed-host`): `--allow-remote` lets it load a host the
master chose, never hand that host its credential.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import Any

from rushhour.kernel.loopback import is_loopback_url, is_named_host, refused_address
from rushhour.scenarios.spec.urls import hide_userinfo

__all__ = ["ENV_WORKER_LOCAL", "LOCAL_TARGET_FIELDS", "WorkerLocal", "remote_target"]

ENV_WORKER_LOCAL = "RUSHHOUR_WORKER_LOCAL"
LOCAL_TARGET_FIELDS = ("auth", "ca_bundle")
"""Target fields that name a file or a credential source on the host that reads them."""


def remote_target(target: dict[str, Any] | None) -> dict[str, Any] | None:
    """The master's target fields without anything that names a local file or credential."""
    if target is None:
        return None
    return {key: value for key, value in target.items() if key not in LOCAL_TARGET_FIELDS}


@dataclass(frozen=True)
class WorkerLocal:
    """The worker's own guard and credentials (from its flags, passed to Locust in one variable)."""

    allow_remote: bool = False
    allowed_hosts: tuple[str, ...] = ()
    auth: dict[str, Any] | None = None
    pinned_hosts: tuple[str, ...] = ()
    ca_bundle: str | None = None

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> WorkerLocal:
        raw = (os.environ if environ is None else environ).get(ENV_WORKER_LOCAL)
        if not raw:
            return cls()
        data = json.loads(raw)
        data["allowed_hosts"] = tuple(data.get("allowed_hosts", ()))
        data["pinned_hosts"] = tuple(data.get("pinned_hosts", ()))
        return cls(**data)

    def refusal(self, host: str) -> str | None:
        """Why this worker will not load `host` (None: it may): the guard of `rushhour run`, here."""
        if not host:
            return "the master named no target host"
        if "@" in (host.split("://", 1)[-1].split("/", 1)[0]):
            return f'the master asked to load "{hide_userinfo(host)}", a URL with credentials in it'
        named = is_named_host(host, self.allowed_hosts + self.pinned_hosts)
        never = refused_address(host, allow_remote=True, allowed=self.allowed_hosts + self.pinned_hosts)
        if never is not None:
            return f'the master asked to load "{hide_userinfo(host)}", which {never}'
        if self.auth is not None and not (is_loopback_url(host) or named):
            return (f'the master asked to load "{host}" with this worker\'s credential (--auth-env/--auth-file), '
                    "but that host is the master's choice, not this worker's; start `rushhour worker` with "
                    "--allow-target HOST naming it to send the credential there")
        if is_loopback_url(host) or self.allow_remote or named:
            return None
        return (f'the master asked to load "{host}", which is not on this worker\'s machine; start '
                "`rushhour worker` with --allow-remote (or --allowed-host ADDRESS) to load it on purpose")

    def schedule_refusal(self, schedule: str) -> str | None:
        """Why this worker will not fire a schedule whose rows name their own targets (`base_url`,
        as `rushhour ab` writes them): each must pass this worker's guard, as the host does."""
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        if "base_url" not in pq.read_schema(schedule).names:
            return None
        urls = pq.read_table(schedule, columns=["base_url"]).column("base_url").unique().to_pylist()
        return next((why for url in urls if url and (why := self.refusal(str(url)))), None)

    def target(self, sent: dict[str, Any] | None) -> dict[str, Any]:
        """The target fields this worker fires with: the master's, with its own credential and CA."""
        fields = remote_target(sent) or {}
        if self.auth is not None:
            fields["auth"] = dict(self.auth)
        if self.ca_bundle is not None:
            fields["ca_bundle"] = self.ca_bundle
        return fields
