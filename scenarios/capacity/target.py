"""The service a capacity job loads: the embedded reference server (booted here) or a URL.

For the embedded server the job knows the admin token (to hold N-1 and flush the cache between
steps) and each pool's slots per node (for utilisation); a URL target gets the token from
RUSHHOUR_ADMIN_TOKEN if at all, and no utilisation unless its pools report it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rushhour.reference_server.config import ServerConfig
from rushhour.scenarios.capacity.job import CapacityJob
from rushhour.scenarios.run.embedded import EmbeddedServer
from rushhour.scenarios.spec.model import EmbeddedTarget
from rushhour.scenarios.spec.variants import embedded_server_data, validate_server

__all__ = ["Target", "embedded_config", "open_target"]


@dataclass
class Target:
    """Where steps are sent, how to act on it, and how to let it go."""

    url: str
    token: str | None
    describe: str
    slots_per_node: dict[str, int] = field(default_factory=dict)
    server: EmbeddedServer | None = None

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()


def embedded_config(target: EmbeddedTarget, *, source: str, base_dir: Path) -> ServerConfig:
    """The server config the embedded target boots, validated (the shorthands folded in)."""
    data = embedded_server_data(target, source=source, base_dir=base_dir)
    return validate_server(data, source=source, where="target.embedded")


def slots_of(config: ServerConfig) -> dict[str, int]:
    per_node = config.admission.slots_per_node
    return {name: per_node or 2 * pool.max_batch_size for name, pool in config.pools.items()}


def open_target(job: CapacityJob, *, say: Callable[[str], None]) -> Target:
    """Boot the embedded server (ready and warmed) or take the URL as it is."""
    embedded = job.scenario.target.embedded
    if job.target_url is not None or embedded is None:
        url = (job.target_url or str(job.scenario.target.url)).rstrip("/")
        return Target(url, os.environ.get("RUSHHOUR_ADMIN_TOKEN") or None, url)
    config = embedded_config(embedded, source=job.source, base_dir=job.base_dir)
    server = EmbeddedServer(embedded, log_path=job.out_dir / "server.log", base_dir=job.base_dir)
    say(f"booting the reference server on {server.url} ...")
    target = Target(server.url, server.token, f"embedded reference server ({server.url})", slots_of(config), server)
    try:
        server.start()
        server.warm(job.scenario.load.languages)
    except BaseException:
        target.close()
        raise
    return target
