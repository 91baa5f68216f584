"""rushhour's network faults inside mitmproxy: `mitmdump -s <this file>` in front of a user's service.

Run mitmproxy as a reverse proxy in front of the service and load this addon:

    mitmdump --mode reverse:http://127.0.0.1:SERVICE_PORT --listen-host 127.0.0.1 -p PROXY_PORT \\
        -s "$(python -m rushhour.experiments.service.proxy --addon-path)"   # rushhour's Python

then point the drill at PROXY_PORT. The addon applies the fault that rushhour's actions
(`rushhour.experiments.service.proxy`) write into this user's lease folder, in the file
`proxy-<name>.json` (`--set rushhour_proxy=NAME`, default "service"), to every request:

    latency    wait latency_ms, plus or minus up to jitter_ms, before passing the request on
    errors     answer a share `rate` of the requests with `status` (e.g. 503) instead of the service
    reset      close the client's connection without an answer
    blackhole  hold the request, unanswered, until the fault ends; then close its connection

Streamed answers pass on as they come (time to first token stays the service's). A fault
carries its own end on the machine's boot clock; the addon ignores a fault whose end has
passed, so a fault ends by itself even when whatever wrote it was SIGKILLed: nobody needs to
remove it. A fault file that is a link, unreadable, or in a folder another user could write is
ignored too (the safe side: no fault).

Standard library only: it runs inside mitmproxy's own environment, which has no rushhour. Its
lease-folder rules mirror `rushhour.experiments.leasefiles` (a test holds them together).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import stat
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

KINDS = ("latency", "errors", "reset", "blackhole")
END_FIELD = "expires_boot"
KIND_FIELD = "fault"
CHECK_EVERY_S = 0.1
REREAD_S = 0.05  # the file is read at most this often, however many requests and held flows ask
MAX_HOLD_S = 7 * 24 * 3600.0


def boot_clock() -> float:
    """Seconds on the machine's boot clock (`CLOCK_BOOTTIME`), the clock fault ends are written on."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    return time.clock_gettime(boottime) if boottime is not None else time.monotonic()


def lease_folder(environ: Mapping[str, str] | None = None) -> Path:
    """This user's lease folder: RUSHHOUR_LEASE_DIR, else $XDG_RUNTIME_DIR/rushhour-leases, else
    <temp>/rushhour-leases-<uid> (the same rule as rushhour's)."""
    env = os.environ if environ is None else environ
    if env.get("RUSHHOUR_LEASE_DIR"):
        return Path(env["RUSHHOUR_LEASE_DIR"])
    if env.get("XDG_RUNTIME_DIR"):
        return Path(env["XDG_RUNTIME_DIR"]) / "rushhour-leases"
    return Path(tempfile.gettempdir()) / f"rushhour-leases-{os.getuid()}"


def fault_file(name: str, environ: Mapping[str, str] | None = None) -> Path:
    """The fault file of the proxy named `name`."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"proxy-{name}")
    return lease_folder(environ) / f"{safe}.json"


def _private(folder: Path) -> bool:
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def read_fault(path: Path) -> dict[str, Any] | None:
    """The fault in force at `path`: None when there is none, it has ended, or the file cannot be trusted."""
    if not _private(path.parent):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        with os.fdopen(fd, encoding="utf-8") as handle:
            fault = json.load(handle)
        ends = float(fault[END_FIELD])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(fault, dict) or fault.get(KIND_FIELD) not in KINDS or ends <= boot_clock():
        return None
    return fault


def _number(fault: Mapping[str, Any], field: str, default: float) -> float:
    try:
        value = float(fault.get(field, default))
    except (TypeError, ValueError):
        return default
    return value if value == value else default  # NaN reads as the default


def delay_s(fault: Mapping[str, Any], rng: random.Random) -> float:
    """A latency fault's delay for one request: latency_ms plus or minus up to jitter_ms, never below 0."""
    latency, jitter = _number(fault, "latency_ms", 0.0), abs(_number(fault, "jitter_ms", 0.0))
    return max(0.0, min(latency + rng.uniform(-jitter, jitter), MAX_HOLD_S * 1000.0)) / 1000.0


def error_status(fault: Mapping[str, Any], rng: random.Random) -> int | None:
    """An errors fault's status for one request, or None when this request passes (share 1 - rate)."""
    status = int(_number(fault, "status", 503))
    if not 100 <= status <= 599:
        status = 503
    return status if rng.random() < _number(fault, "rate", 1.0) else None


class RushhourFaults:
    """The mitmproxy addon: applies to every request what the fault file says."""

    def __init__(self, name: str = "service", environ: Mapping[str, str] | None = None, seed: int | None = None) -> None:
        self.path = fault_file(name, environ)
        self.environ = environ
        self.rng = random.Random(seed)
        self._fault: dict[str, Any] | None = None
        self._read_at = float("-inf")

    def current(self) -> dict[str, Any] | None:
        """The fault in force: the file as read at most REREAD_S ago, and only until its end."""
        now = time.monotonic()
        if now - self._read_at >= REREAD_S:
            self._fault, self._read_at = read_fault(self.path), now
        fault = self._fault
        return fault if fault is not None and float(fault[END_FIELD]) > boot_clock() else None

    def load(self, loader: Any) -> None:
        loader.add_option("rushhour_proxy", str, "service",
                          "The name rushhour's fault actions give this proxy (the chaos entry's PROXY_NAME).")

    def configure(self, updated: set[str]) -> None:
        if "rushhour_proxy" in updated:
            from mitmproxy import ctx  # type: ignore[import-not-found,unused-ignore]  # mitmproxy's own environment

            self.path = fault_file(str(ctx.options.rushhour_proxy), self.environ)
            self._read_at = float("-inf")

    def responseheaders(self, flow: Any) -> None:
        flow.response.stream = True  # pass a streamed answer on as it comes, so time to first token stays true

    async def request(self, flow: Any) -> None:
        fault = self.current()
        if fault is None:
            return
        kind = fault[KIND_FIELD]
        if kind == "latency":
            await asyncio.sleep(delay_s(fault, self.rng))
        elif kind == "errors":
            status = error_status(fault, self.rng)
            if status is not None:
                flow.response = _answer(status)
        elif kind == "reset":
            flow.kill()
        else:
            await self._hold(flow)

    async def _hold(self, flow: Any) -> None:
        give_up = time.monotonic() + MAX_HOLD_S
        while time.monotonic() < give_up:
            fault = self.current()
            if fault is None or fault[KIND_FIELD] != "blackhole":
                break
            await asyncio.sleep(CHECK_EVERY_S)
        flow.kill()  # what a blackhole swallowed is lost: the service never sees it


def _answer(status: int) -> Any:
    from mitmproxy import http  # type: ignore[import-not-found,unused-ignore]  # mitmproxy's own environment

    body = json.dumps({"error": {"code": "injected_fault", "message": f"rushhour injected HTTP {status}."}})
    return http.Response.make(status, body.encode(), {"Content-Type": "application/json"})


addons = [RushhourFaults()]
