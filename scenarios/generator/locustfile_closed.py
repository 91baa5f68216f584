"""Locust entry point of a closed-loop drill (`load.mode: closed`); logic in `rushhour.scenarios.generator.closed`.

Persona users send, wait for the reply, and pace themselves; the shape makes their number follow
the traffic model's rate curve. They speak the target's protocol (`rushhour.scenarios.protocols`) through
the same sender as the open loop, so a streamed answer is timed token by token here too.
"""

from __future__ import annotations

from typing import Any

import gevent
from locust import LoadTestShape, constant_pacing, events, task

from rushhour.scenarios.generator.closed import PACING_S, ClosedDrill, shape_users
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.generator.user import TargetUser
from rushhour.scenarios.generator.wire import WireSender

SHAPE_SLACK_S = 5  # the shape's clock starts before the common start time; run on a little
_drill: ClosedDrill | None = None


def _shared(environment: Any) -> ClosedDrill:
    global _drill
    if _drill is None:
        _drill = ClosedDrill(LoadSettings.from_env(), environment.runner.worker_index)
    return _drill


@events.test_stop.add_listener
def _flush(**_kwargs: Any) -> None:
    if _drill is not None:
        _drill.flush()


class PersonaUser(TargetUser):
    """A customer: one translation, then wait out the pacing, then the next."""

    wait_time = constant_pacing(PACING_S)

    def __init__(self, environment: Any) -> None:
        super().__init__(environment, LoadSettings.from_env().target)
        self._send = WireSender(self.client, self.protocol)

    @task
    def translate(self) -> None:
        if not _shared(self.environment).step(self._send):
            gevent.sleep(PACING_S)


class RateShape(LoadTestShape):
    """User count follows the schedule's rate, second by second; stops at the run's end."""

    def __init__(self) -> None:
        super().__init__()
        self._users = shape_users(LoadSettings.from_env())

    def tick(self) -> tuple[int, float] | None:
        second = int(self.get_run_time())
        if second >= len(self._users) + SHAPE_SLACK_S:
            return None
        users = int(self._users[min(second, len(self._users) - 1)])
        return users, float(users)
