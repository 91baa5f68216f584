"""Locust entry point of an open-loop drill (`rushhour run` starts it; not meant by hand).

Thin on purpose: the firing logic lives in `rushhour.scenarios.generator.openloop` and
`rushhour.scenarios.generator.share_run`, the request and answer formats in
`rushhour.scenarios.protocols`, the sending in `rushhour.scenarios.generator.direct` (straight
through the user's geventhttpclient pool, beneath Locust's session and statistics), and what both
drills' users share (no redirect followed, TLS verified, a stamping pool, so `sent_s` is when a
connection was free) in `rushhour.scenarios.generator.user`.
Each Locust user is one worker of the drill; with `--processes N` there is one per process.
geventhttpclient reads no proxy variables, so traffic goes straight to the target.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import gevent
from gevent import GreenletExit
from locust import events, task
from locust.runners import STATE_CLEANUP, STATE_STOPPED

from rushhour.scenarios.generator.direct import DirectSender
from rushhour.scenarios.generator.jobs import JOB_POLL_NAME, JOBS_PATH, JobFollower, Reply
from rushhour.scenarios.generator.settings import ENV_SETTINGS, LoadSettings
from rushhour.scenarios.generator.share_run import run_worker
from rushhour.scenarios.generator.user import TargetUser
from rushhour.scenarios.generator.wire import no_response
from rushhour.scenarios.generator.worker_relay import WorkerRelay, install_relay
from rushhour.scenarios.protocols.outcome import Outcome
from rushhour.scenarios.protocols.rushhour import translate_body

CONCURRENCY = int(os.environ.get("RUSHHOUR_CONCURRENCY", "2000"))
log = logging.getLogger(__name__)
RELAY: list[object] = []
"""This process's relay in a drill across hosts (`rushhour.scenarios.generator.worker_relay`), if any."""


@events.init.add_listener
def _install_relay(environment: Any, **_kwargs: Any) -> None:
    relay = install_relay(environment.runner)
    if relay is not None:
        RELAY.append(relay)


def _settings() -> tuple[int | None, LoadSettings | None, str | None]:
    """This worker's index (None: Locust's own), settings and host: from the master when remote
    (the host as this worker's own guard let it through, not as Locust's spawn message says)."""
    relay = RELAY[0] if RELAY else None
    if isinstance(relay, WorkerRelay):
        joined = relay.joined()
        return joined.index, joined.settings, joined.host
    return None, LoadSettings.from_env() if os.environ.get(ENV_SETTINGS) else None, None


class OpenLoopUser(TargetUser):
    """Fires its share of the schedule at the intended times, never waiting on replies."""

    concurrency = CONCURRENCY

    def __init__(self, environment: Any) -> None:
        self._index, self._load, host = _settings()
        super().__init__(environment, self._load.target if self._load else None, host)
        self._send = DirectSender(self.client, self.protocol)

    @task
    def replay(self) -> None:
        index = self.environment.runner.worker_index if self._index is None else self._index
        # Its own greenlet: Locust may move users between workers when one joins or leaves
        # (rebalancing), and that must not cut a share short. The share is claimed before firing,
        # so another user (or a re-run of this task) never fires it twice.
        firing = gevent.spawn(self._fire, index)
        try:
            firing.join()
        except GreenletExit:
            if self.environment.runner.state in (STATE_CLEANUP, STATE_STOPPED):  # the load's end, not a move
                firing.kill()  # the firer writes what it has on the way out
            raise
        while True:  # done: idle until the runner stops Locust
            gevent.sleep(3600)

    def _fire(self, index: int) -> None:
        try:
            run_worker(self._load or LoadSettings.from_env(), index, self._send, send_job=self._send_job)
        except Exception:
            log.exception("Load worker %d failed mid-share; its remaining rows stay not sent.", index)

    def _send_job(self, payload: dict[str, object], timeout_s: float) -> Outcome:
        return JobFollower(self._call).run(translate_body(payload), timeout_s)

    def _call(self, path: str, body: dict[str, object] | None) -> Reply:
        headers = self.protocol.headers
        if body is None:
            response = self.client.get(path, name=JOB_POLL_NAME, headers=headers)
        else:
            response = self.client.post(path, json=body, name=JOBS_PATH, headers=headers)
        status = int(response.status_code or 0)
        error = "" if status else no_response(response)
        return Reply(status, response.content if status else None, error)
