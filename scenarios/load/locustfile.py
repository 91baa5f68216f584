"""Locust entry point of an open-loop drill (`rushhour run` starts it; not meant by hand).

Thin on purpose: the firing logic lives in `scenarios.load.openloop` and `scenarios.load.worker`.
Each Locust user is one worker of the drill; with `--processes N` there is one per process.
"""

from __future__ import annotations

import os

import gevent
from locust import FastHttpUser, task

from scenarios.load.jobs import JOB_POLL_NAME, JOBS_PATH, JobFollower, Reply
from scenarios.load.openloop import TRANSLATE_PATH, Outcome, outcome_from
from scenarios.load.worker import WorkerConfig, run_worker

CONCURRENCY = int(os.environ.get("RUSHHOUR_CONCURRENCY", "2000"))


class OpenLoopUser(FastHttpUser):
    """Fires its share of the schedule at the intended times, never waiting on replies."""

    concurrency = CONCURRENCY
    network_timeout = 600.0
    connection_timeout = 10.0

    @task
    def replay(self) -> None:
        config = WorkerConfig.from_env()
        run_worker(config, self.environment.runner.worker_index, self._send, send_job=self._send_job)
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
