"""The M/D/c ground-truth server (`benchmarks/mdc.py`) started for one test or module."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from rushhour.kernel.processes import free_port, stop_process
from tests.support.waiting import wait_for_http

MDC_SERVER = Path(__file__).resolve().parents[2] / "benchmarks" / "mdc.py"


def serve_mdc(*args: str) -> Iterator[str]:
    """Run `benchmarks/mdc.py PORT ARGS...` on a free loopback port; yields its URL, stops it by PID."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(MDC_SERVER), str(port), *args],
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(url, method="POST", timeout_s=10.0, proc=proc)
        yield url
    finally:
        stop_process(proc, grace_s=2.0)
        if proc.stdout is not None:
            proc.stdout.close()
