"""A worker that claims another version (test only): rushhour's locustfile with the version patched."""

from rushhour.scenarios.generator import worker_relay

worker_relay.software_version = lambda: "rushhour 0.0.0, locust 0.0"

from rushhour.scenarios.generator.locustfile import OpenLoopUser  # noqa: E402 - imported after the version is patched

__all__ = ["OpenLoopUser"]
