"""Chaos Toolkit probes of a user's own service: its process (from the PID file) and its URL.

None of them changes anything. The URL is the drill's guarded target (`rushhour_url`, which a
drill sets to the service it loads); any HTTP answer below 500 counts as the service answering,
since rushhour cannot know which of the service's paths exist.
"""

from __future__ import annotations

import time

import httpx
import psutil
from chaoslib.exceptions import ActivityFailed
from chaoslib.types import Configuration, Secrets

from rushhour.experiments.client import guarded_url
from rushhour.experiments.service.process import read_pid_file
from rushhour.kernel.pinned_http import pinned_transport

__all__ = ["process_paused", "process_running", "seconds_until_answering", "service_answers"]

def _status(pid_file: str) -> str | None:
    _, pid = read_pid_file(pid_file)
    try:
        return str(psutil.Process(pid).status())
    except psutil.NoSuchProcess:
        return None


def process_running(pid_file: str = "", configuration: Configuration = None, secrets: Secrets = None) -> bool:
    """True when the PID file (default: $PID_FILE) names a live process that is not paused."""
    return _status(pid_file) not in (None, psutil.STATUS_STOPPED, psutil.STATUS_ZOMBIE)


def process_paused(pid_file: str = "", configuration: Configuration = None, secrets: Secrets = None) -> bool:
    """True when the PID file (default: $PID_FILE) names a stopped (SIGSTOPped) process."""
    return _status(pid_file) == psutil.STATUS_STOPPED


def service_answers(path: str = "/", timeout_s: float = 2.0, configuration: Configuration = None,
                    secrets: Secrets = None) -> bool:
    """True when GET `path` on the service (`rushhour_url`) gets an answer below 500 within `timeout_s`."""
    url = guarded_url(configuration).rstrip("/")
    try:
        with httpx.Client(transport=pinned_transport(), timeout=float(timeout_s), trust_env=False,
                          follow_redirects=False) as client:
            response = client.get(f"{url}{path}")
    except httpx.HTTPError:
        return False
    except ValueError as exc:
        raise ActivityFailed(f'"{url}{path}" is not a URL to probe: {exc}.') from exc
    return response.status_code < 500


def seconds_until_answering(path: str = "/", timeout_s: float = 60.0, configuration: Configuration = None,
                            secrets: Secrets = None) -> float:
    """Poll the service (`service_answers`) until it answers; the seconds that took. Fails after
    `timeout_s`: a service its supervisor did not bring back."""
    began = time.monotonic()
    while time.monotonic() - began < float(timeout_s):
        if service_answers(path, timeout_s=1.0, configuration=configuration):
            return round(time.monotonic() - began, 3)
        time.sleep(0.1)
    raise ActivityFailed(f"The service did not answer GET {path} within {float(timeout_s):g} s; is it supervised?")
