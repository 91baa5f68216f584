"""Waiting, bounded, for a server a test started to answer HTTP at all."""

from __future__ import annotations

import subprocess
import time

import httpx


def wait_for_http(url: str, *, method: str = "GET", timeout_s: float = 30.0,
                  proc: subprocess.Popen[bytes] | None = None) -> bool:
    """True once `url` gives any HTTP answer; False after `timeout_s`, or as soon as `proc` exits."""
    give_up = time.monotonic() + timeout_s
    while time.monotonic() < give_up and (proc is None or proc.poll() is None):
        try:
            httpx.request(method, url, content=b"{}" if method == "POST" else None, timeout=1.0, trust_env=False)
            return True
        except httpx.HTTPError:
            time.sleep(0.05)
    return False
