"""For `test_rogue_master`, in its own process (Locust monkey-patches the interpreter): a Locust master
that does not hold the cluster secret and tries to turn a worker anyway. It answers the hello with a
challenge it cannot prove, pushes settings that aim the worker at TARGET, sends a start time and starts
Locust's users. Listens on 127.0.0.1, or on the address given after TARGET. Prints its port, then (after
RUN_S) what the worker sent it, as JSON."""
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gevent
from locust import User, constant, task
from locust.env import Environment

from rushhour.scenarios.generator import clusterauth
from rushhour.scenarios.generator.master_relay import (
    MSG_CHALLENGE,
    MSG_CONFIG,
    MSG_HELLO,
    MSG_PING,
    MSG_PONG,
    MSG_PROVE,
    MSG_START,
)
from rushhour.scenarios.generator.settings import LoadSettings
from tests.scenarios.generator.truth import row_schedule

RUN_S = 12.0


class OpenLoopUser(User):  # the name of the worker's user class, so Locust's start spawns it there
    wait_time = constant(1)

    @task
    def nothing(self) -> None:
        pass


def main(target: str, bind: str = "127.0.0.1") -> None:
    folder = Path(tempfile.mkdtemp())
    row_schedule(20, rate=10.0).to_parquet(folder / "schedule.parquet", index=False)
    settings = LoadSettings(host=target, schedule_path=folder / "schedule.parquet", work_dir=folder, duration_s=2.0,
                            remote_workers=1, timeout_margin_s=1.0, request_timeout_s=2.0)
    config = {"index": 0, "host": target, "config": settings.to_wire(),
              "schedule": settings.schedule_path.read_bytes()}
    master = Environment(user_classes=[OpenLoopUser], host=target).create_master_runner(bind, 0)
    said: dict[str, list[Any]] = {MSG_HELLO: [], MSG_PROVE: []}

    def hello(environment: Any, msg: Any) -> None:
        said[MSG_HELLO].append(msg.data)
        master.send_message(MSG_CHALLENGE, {"nonce": clusterauth.new_nonce(), "proof": "0" * 64}, msg.node_id)
        master.send_message(MSG_CONFIG, clusterauth.signed(b"", MSG_CONFIG, config, 1), msg.node_id)
        gevent.spawn_later(2.0, lambda: master.send_message(
            MSG_START, clusterauth.signed(b"", MSG_START, {"t0": time.time() + 0.5}, 100), msg.node_id))

    def ping(environment: Any, msg: Any) -> None:  # a clock for the worker, so nothing but the secret stops it
        seq[0] += 1
        pong = {"sent": msg.data.get("sent", 0.0), "master": time.time()}
        master.send_message(MSG_PONG, clusterauth.signed(b"", MSG_PONG, pong, seq[0]), msg.node_id)

    seq = [10]
    master.register_message(MSG_HELLO, hello)
    master.register_message(MSG_PING, ping)
    master.register_message(MSG_PROVE, lambda environment, msg: said[MSG_PROVE].append(msg.data))
    print(master.server.port, flush=True)
    deadline = time.monotonic() + RUN_S
    started = False
    while time.monotonic() < deadline:
        gevent.sleep(0.2)
        if not started and master.clients:
            master.start(1, 1.0)
            started = True
    master.quit()
    print(json.dumps(said), flush=True)


main(*sys.argv[1:3])
