"""Network faults on the path to a user's service, through mitmproxy in front of it.

mitmproxy (mitmproxy.org) runs as a reverse proxy in front of the service with rushhour's addon
(`mitm_addon.py` beside this module; `python -m rushhour.experiments.service.proxy --addon-path`
prints where it is) and the drill loads the proxy's port. The actions here write the fault the
addon applies to every request (latency with jitter, a share of errors, connections reset, a
blackhole) into a fault file in this user's private lease folder
(`rushhour.experiments.leasefiles`: checked folder, whole writes never through a link). Each
fault carries its own end on the machine's boot clock, renewed while the experiment holds it
(`rushhour.experiments.leases.hold_lease`); the addon ignores a fault whose end has passed, so
the fault ends by itself within one lease when the harness is SIGKILLed, with no keeper process.

mitmproxy is a pure user-space proxy installed with pip: it needs neither netem nor iptables in the
kernel, nor root, which is why rushhour uses it rather than `tc`.
"""

from __future__ import annotations

import argparse
import json
import math
import threading
from pathlib import Path
from typing import Any

from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Configuration, Secrets

from rushhour.experiments.leasefiles import lease_clock, write_end
from rushhour.experiments.leases import hold_lease, lease_file, lease_s, release

__all__ = ["add_proxy_fault", "proxy_fault", "remove_proxy_fault"]

ADDON = Path(__file__).resolve().with_name("mitm_addon.py")
KINDS = ("latency", "errors", "reset", "blackhole")
_WRITES = threading.Lock()  # a renewal never writes a fault back after its removal


def fault_path(proxy: str) -> Path:
    """The fault file of the proxy named `proxy` (the addon's `rushhour_proxy`), in the lease folder."""
    return lease_file(f"proxy-{proxy}")


def _spec(fault: str, latency_ms: float, jitter_ms: float, rate: float, status: int) -> dict[str, Any]:
    if fault not in KINDS:
        raise ActivityFailed(f'"{fault}" is not a proxy fault ({", ".join(KINDS)}).')
    if fault == "latency":
        for name, value in (("latency_ms", latency_ms), ("jitter_ms", jitter_ms)):
            if not (math.isfinite(float(value)) and float(value) >= 0):
                raise ActivityFailed(f"{name} must be a number of milliseconds of 0 or more, not {value!r}.")
        return {"fault": fault, "latency_ms": float(latency_ms), "jitter_ms": float(jitter_ms)}
    if fault == "errors":
        if not 0.0 <= float(rate) <= 1.0:  # NaN fails this too
            raise ActivityFailed(f"rate must be a share between 0 and 1 of the requests, not {rate!r}.")
        if not 100 <= int(status) <= 599:
            raise ActivityFailed(f"status must be an HTTP status between 100 and 599, not {status!r}.")
        return {"fault": fault, "rate": float(rate), "status": int(status)}
    return {"fault": fault}


def add_proxy_fault(fault: str, latency_ms: float = 300.0, jitter_ms: float = 0.0, rate: float = 0.5,
                    status: int = 503, proxy: str = "service", hold_s: float = 0.0, ttl_s: float = 60.0,
                    configuration: Configuration = None, secrets: Secrets = None) -> dict[str, Any]:
    """Make the mitmproxy in front of the service (rushhour's addon loaded) apply `fault` to every request.

    fault: "latency" (wait latency_ms, plus or minus up to jitter_ms, before passing a request on),
    "errors" (answer a share `rate` of the requests with `status` instead of the service), "reset"
    (close each connection without an answer) or "blackhole" (hold each request unanswered until
    the fault ends, then close its connection).
    proxy: the proxy's name, as mitmdump was given it (`--set rushhour_proxy=NAME`; default "service").
    hold_s: how long the experiment holds the fault; a short lease is renewed meanwhile.
    ttl_s: the fault's lease when nothing is held.

    Undo with `remove_proxy_fault`. The fault also ends by itself: it carries its lease's end and
    the addon ignores it once that has passed (a SIGKILLed harness renews it no more).
    """
    spec = _spec(fault, latency_ms, jitter_ms, rate, status)
    lease, path = lease_s(ttl_s, hold_s), fault_path(proxy)
    write_end(path, lease, spec)

    def renew(seconds: float) -> bool:
        with _WRITES:
            if not path.exists():
                return False
            write_end(path, seconds, spec)
            return True

    hold_lease(f"proxy|{proxy}", renew, lease, float(hold_s))
    return {"proxy": proxy, **spec, "lease_s": lease, "fault_file": str(path)}


def proxy_fault(proxy: str = "service", configuration: Configuration = None, secrets: Secrets = None) -> str:
    """The fault in force on the proxy named `proxy` ("latency", "errors", "reset", "blackhole"), or
    "" when none is in force (a probe)."""
    try:
        written = json.loads(fault_path(proxy).read_text(encoding="utf-8"))
        in_force = float(written["expires_boot"]) > lease_clock()
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    return str(written.get("fault", "")) if in_force else ""


def remove_proxy_fault(proxy: str = "service", configuration: Configuration = None,
                       secrets: Secrets = None) -> bool:
    """End the fault of the proxy named `proxy` (its fault file removed); True when there was one."""
    release(f"proxy|{proxy}")
    path = fault_path(proxy)
    with _WRITES:
        existed = path.exists()
        path.unlink(missing_ok=True)
    return existed


def main(argv: list[str] | None = None) -> int:
    """`python -m rushhour.experiments.service.proxy --addon-path`: where rushhour's mitmproxy addon is."""
    parser = argparse.ArgumentParser(prog="python -m rushhour.experiments.service.proxy",
                                     description="Where rushhour's mitmproxy addon is, for `mitmdump -s PATH`.")
    parser.add_argument("--addon-path", action="store_true", help="print the addon's path")
    args = parser.parse_args(argv)
    if not args.addon_path:
        parser.error("say what to print: --addon-path.")
    print(ADDON)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
