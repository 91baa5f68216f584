"""Locust entry point of an open-loop drill (`rushhour run` starts it; not meant by hand).

Thin on purpose: the firing logic lives in `scenarios.load.openloop` and `scenarios.load.worker`.
Each Locust user is one worker of the drill; with `--processes N` there is one per process.
Redirects are never followed (a 3xx is recorded as the answer: the loopback guard allowed only
the target's host), and geventhttpclient reads no proxy variables, so traffic goes straight to
the target. Connections come from a stamping pool, so `sent_s` is when a connection was free.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import gevent
from locust import FastHttpUser, task

from scenarios.load.handoff import stamp_connections
from scenarios.load.jobs import JOB_POLL_NAME, JOBS_PATH, JobFollower, Reply
from scenarios.load.openloop import TRANSLATE_PATH, Outcome, outcome_from
from scenarios.load.worker import WorkerConfig, run_worker

CONCURRENCY = int(os.environ.get("RUSHHOUR_CONCURRENCY", "2000"))
log = logging.getLogger(__name__)


class OpenLoopUser(FastHttpUser):
    """Fires its share of the schedule at the intended times, never waiting on replies."""

    concurrency = CONCURRENCY
    network_timeout = 600.0
    connection_timeout = 10.0
    max_redirects = 0
    max_retries = 0

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        stamp_connections(self.client.client)

    @task
    def replay(self) -> None:
        index = self.environment.runner.worker_index
        try:  # the share is claimed before firing, so even a re-run of this task never refires it
            run_worker(WorkerConfig.from_env(), index, self._send, send_job=self._send_job)
        except Exception:
            log.exception("Load worker %d failed mid-share; its remaining rows stay not sent.", index)
        while True:  # done: idle until the runner stops Locust
            gevent.sleep(3600)

    def _send(self, payload: dict[str, object], timeout_s: float) -> Outcome:
        response = self.client.post(TRANSLATE_PATH, json=payload, name=TRANSLATE_PATH)
        status = int(response.status_code or 0)
        error = "" if status else type(response.error).__name__ if response.error else "no response"
        return outcome_from(status, response.content if status else None, error)

    def _send_job(self, payload: dict[str, object], timeout_s: float) -> Outcome:
        return JobFollower(self._call).run(payload, timeout_s)

    def _call(self, path: str, body: dict[str, object] | None) -> Reply:
        if body is None:
            response = self.client.get(path, name=JOB_POLL_NAME)
        else:
            response = self.client.post(path, json=body, name=JOBS_PATH)
        status = int(response.status_code or 0)
        error = "" if status else type(response.error).__name__ if response.error else "no response"
        return Reply(status, response.content if status else None, error)
